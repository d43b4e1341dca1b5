// Verifying an AWS Nitro Enclaves attestation document (docs/tee.md "Verifying a Nitro attestation
// document"; AWS, "Verifying the root of trust"): a COSE_Sign1 (RFC 9052) signed with ES384 by a leaf
// certificate that chains, through the document's CA bundle, to a root the caller pins. Pure: the caller
// reads the document and the roots and says at which time the chain must hold; nothing here reads a file
// or a clock.
import { verify } from 'node:crypto';
import { equalBytes } from '@noble/curves/utils.js';
import { AttestationError } from './attestation-error.ts';
import { decodeCoseSign1, sigStructure } from './cose-sign1.ts';
import { decodeNitroPayload, type NitroAttestationPayload } from './nitro-payload.ts';
import { parseCertificate, parseRootCertificates, type ParsedCertificate, type RootCertificate } from './certificate.ts';
import { verifyCertificateChain } from './certificate-chain.ts';
import { isDevCertificate } from './dev-root.ts';

/** The largest document read: the NSM answers in at most 12 KiB. */
export const MAX_DOCUMENT_BYTES = 16 * 1024;
/** PCR0 (enclave image), PCR1 (kernel and boot ramfs), PCR2 (application): all zero in debug mode. */
export const DEBUG_ZERO_PCRS: readonly number[] = [0, 1, 2];

export interface VerifyNitroAttestationOptions {
  /** The pinned root certificate(s), PEM text or DER. Only these are trusted, never the document's own. */
  readonly roots: readonly RootCertificate[];
  /** The time at which every certificate must be valid and which the document may not postdate. */
  readonly at: Date;
  /** When given, the document must carry exactly this nonce. */
  readonly expectedNonce?: Uint8Array;
  /** When given, each listed PCR must be present with exactly this value. */
  readonly expectedPcrs?: ReadonlyMap<number, Uint8Array> | Readonly<Record<number, Uint8Array>>;
  /** Accept a debug-mode enclave (PCR0, PCR1 and PCR2 all zero). Default false. */
  readonly allowDebug?: boolean;
  /** Accept a development root (dev-root.ts) among `roots`. Default false: production never sets it. */
  readonly allowDevRoot?: boolean;
  /** When given, the document's timestamp may be at most this many milliseconds before `at`. */
  readonly maxAgeMs?: number;
}

/** A verified document: the payload's fields, optional ones undefined when absent or null. */
export type NitroAttestation = NitroAttestationPayload;

const pcrEntries = (pcrs: NonNullable<VerifyNitroAttestationOptions['expectedPcrs']>): [number, Uint8Array][] =>
  pcrs instanceof Map ? [...pcrs.entries()] : Object.entries(pcrs).map(([k, v]) => [Number(k), v as Uint8Array]);

function checkOptions(opts: VerifyNitroAttestationOptions): ParsedCertificate[] {
  if (!(opts.at instanceof Date) || Number.isNaN(opts.at.getTime())) throw new AttestationError('bad_config', 'the verification time is not a valid Date');
  if (opts.maxAgeMs !== undefined && !(Number.isFinite(opts.maxAgeMs) && opts.maxAgeMs >= 0)) throw new AttestationError('bad_config', 'maxAgeMs is not a non-negative number');
  const roots = parseRootCertificates(opts.roots);
  const dev = roots.find(isDevCertificate);
  if (dev && opts.allowDevRoot !== true) {
    throw new AttestationError('dev_attestation_root', `pinned root "${dev.label}" is a development root; it is accepted only with allowDevRoot`);
  }
  return roots;
}

function parseDocumentCertificate(der: Uint8Array, what: string): ParsedCertificate {
  try {
    return parseCertificate(der);
  } catch (err) {
    throw new AttestationError('bad_attestation', `${what} does not parse as an X.509 certificate: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Verifies a Nitro attestation document and returns its fields. Throws AttestationError, whose code names
 * the first check that failed, in this order: options (bad_config, dev_attestation_root), structure and
 * fields (bad_attestation), root (untrusted_attestation_root), chain (bad_attestation_chain,
 * attestation_not_yet_valid, attestation_expired), signature (bad_attestation_signature), timestamp
 * (attestation_not_yet_valid, stale_attestation), debug mode (debug_enclave), PCRs
 * (attestation_pcr_mismatch), nonce (attestation_nonce_mismatch).
 */
export function verifyNitroAttestation(doc: Uint8Array, opts: VerifyNitroAttestationOptions): NitroAttestation {
  const roots = checkOptions(opts);
  if (!(doc instanceof Uint8Array)) throw new AttestationError('bad_attestation', 'the attestation document is not bytes');
  if (doc.length > MAX_DOCUMENT_BYTES) throw new AttestationError('bad_attestation', `the attestation document has ${doc.length} bytes, more than ${MAX_DOCUMENT_BYTES}`);

  const sign1 = decodeCoseSign1(doc);
  const payload = decodeNitroPayload(sign1.payload);

  // cabundle[0] is the root the document was issued under. It must be one of the pinned roots, byte for
  // byte; the chain is then anchored at the pinned copy and the document's copy is never trusted itself.
  const root = roots.find((r) => equalBytes(r.der, payload.cabundle[0]!));
  if (!root) throw new AttestationError('untrusted_attestation_root', 'the document\'s root certificate (cabundle[0]) is not a pinned root');
  const intermediates = payload.cabundle.slice(1).map((der, i) => parseDocumentCertificate(der, `cabundle[${i + 1}]`));
  const leaf = parseDocumentCertificate(payload.certificate, 'the document certificate');
  const leafKey = verifyCertificateChain({ root, intermediates, leaf }, opts.at);

  const signed = sigStructure(sign1.protectedHeader, sign1.payload);
  if (!verify('sha384', signed, { key: leafKey, dsaEncoding: 'ieee-p1363' }, sign1.signature)) {
    throw new AttestationError('bad_attestation_signature', 'the document signature does not verify under its certificate');
  }

  const at = opts.at.getTime();
  if (payload.timestamp > at) throw new AttestationError('attestation_not_yet_valid', `the document is dated ${new Date(payload.timestamp).toISOString()}, after ${opts.at.toISOString()}`);
  if (opts.maxAgeMs !== undefined && at - payload.timestamp > opts.maxAgeMs) {
    throw new AttestationError('stale_attestation', `the document is ${at - payload.timestamp} ms old, more than ${opts.maxAgeMs} ms`);
  }

  if (opts.allowDebug !== true && DEBUG_ZERO_PCRS.every((i) => payload.pcrs.get(i)!.every((b) => b === 0))) {
    throw new AttestationError('debug_enclave', 'PCR0, PCR1 and PCR2 are all zero: the document comes from a debug-mode enclave');
  }
  for (const [index, expected] of pcrEntries(opts.expectedPcrs ?? new Map())) {
    const actual = payload.pcrs.get(index);
    if (actual === undefined) throw new AttestationError('attestation_pcr_mismatch', `the document has no PCR${index}`);
    if (!equalBytes(actual, expected)) throw new AttestationError('attestation_pcr_mismatch', `PCR${index} differs from the expected value`);
  }
  if (opts.expectedNonce !== undefined && !(payload.nonce !== undefined && equalBytes(payload.nonce, opts.expectedNonce))) {
    throw new AttestationError('attestation_nonce_mismatch', payload.nonce === undefined ? 'the document carries no nonce' : 'the document carries another nonce');
  }
  return payload;
}
