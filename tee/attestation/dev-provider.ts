// DEV-ONLY attestation provider: makes documents shaped exactly like an AWS Nitro Enclaves NSM's (an
// untagged COSE_Sign1 signed with ES384, the same payload fields in the same order, a CA bundle from the
// root down) under a development root it generates, so the enclave code path and the one verifier can run
// where there is no Nitro hypervisor. Its root names itself DEV-ONLY (dev-root.ts) and the verifier refuses
// it unless told `allowDevRoot: true`; see docs/tee.md.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { encode } from 'cbor2';
import { ES384_PROTECTED_HEADER, encodeCoseSign1, plainBytes, sigStructure } from './cose-sign1.ts';
import { decodeNitroPayload, type NitroAttestationPayload } from './nitro-payload.ts';
import { issueCertificate, toPem, type CertificateSubject } from './dev-certificate.ts';
import { OID_COMMON_NAME, OID_ORGANIZATION, nameValues, parseCertificate } from './certificate.ts';
import { DEV_ORGANIZATION, DEV_ROOT_COMMON_NAME, DEV_ROOT_MARKER } from './dev-root.ts';

/** How long a leaf certificate lives, from the second its document is made (as AWS's do). */
export const DEV_LEAF_VALIDITY_MS = 3 * 60 * 60 * 1000;
/** The dev root and intermediate are valid over this whole span, so making them reads no clock. */
export const DEV_CA_NOT_BEFORE = new Date('2000-01-01T00:00:00Z');
export const DEV_CA_NOT_AFTER = new Date('9999-12-31T23:59:59Z');
/** PCRs a document carries when not given: 0..15, SHA-384 sized. */
export const DEV_PCR_COUNT = 16;
export const DEV_MODULE_ID = 'i-00000000000000000-enc0000000000000000';
/** The subject of the intermediate a new authority gets. */
export const DEV_INTERMEDIATE_SUBJECT: CertificateSubject = { commonName: `custody ${DEV_ROOT_MARKER} Nitro attestation intermediate`, organization: DEV_ORGANIZATION };

export interface DevAttestParameters {
  /** When the document is made: its timestamp, and the start of its leaf certificate's validity. */
  readonly at: Date;
  readonly moduleId?: string;
  /** PCR values by index; PCRs 0..15 not given are zero (and all of PCR0..2 zero is a debug enclave). */
  readonly pcrs?: ReadonlyMap<number, Uint8Array> | Readonly<Record<number, Uint8Array>>;
  readonly publicKey?: Uint8Array;
  readonly userData?: Uint8Array;
  readonly nonce?: Uint8Array;
}

export interface DevAttestationAuthority {
  /** The development root, PEM: pin it only with `allowDevRoot: true`. */
  readonly rootPem: string;
  readonly rootDer: Uint8Array;
  /** Makes one attestation document (CBOR bytes, as the NSM returns them). */
  attest(params: DevAttestParameters): Uint8Array;
}

const newKeyPair = () => generateKeyPairSync('ec', { namedCurve: 'secp384r1' });

/** The payload's CBOR: AWS's field order, optional fields null when absent. */
export function encodeNitroPayload(p: NitroAttestationPayload): Uint8Array {
  const pcrs = new Map([...p.pcrs.entries()].sort(([a], [b]) => a - b).map(([i, v]) => [i, plainBytes(v)]));
  const optional = (b: Uint8Array | undefined) => (b === undefined ? null : plainBytes(b));
  return encode(new Map<string, unknown>([
    ['module_id', p.moduleId],
    ['digest', p.digest],
    ['timestamp', p.timestamp],
    ['pcrs', pcrs],
    ['certificate', plainBytes(p.certificate)],
    ['cabundle', p.cabundle.map(plainBytes)],
    ['public_key', optional(p.publicKey)],
    ['user_data', optional(p.userData)],
    ['nonce', optional(p.nonce)],
  ]));
}

/** Signs payload bytes as an ES384 COSE_Sign1 with the leaf's private key. */
export function signNitroDocument(payload: Uint8Array, leafKey: KeyObject): Uint8Array {
  const signature = sign('sha384', sigStructure(ES384_PROTECTED_HEADER, payload), { key: leafKey, dsaEncoding: 'ieee-p1363' });
  return encodeCoseSign1({ protectedHeader: ES384_PROTECTED_HEADER, payload, signature: new Uint8Array(signature) });
}

function pcrMap(given: DevAttestParameters['pcrs']): Map<number, Uint8Array> {
  const pcrs = new Map<number, Uint8Array>();
  for (let i = 0; i < DEV_PCR_COUNT; i++) pcrs.set(i, new Uint8Array(48));
  const entries = given instanceof Map ? [...given.entries()] : Object.entries(given ?? {}).map(([k, v]) => [Number(k), v as Uint8Array] as const);
  for (const [i, v] of entries) pcrs.set(i, v);
  return pcrs;
}

/**
 * What a development authority is made of: its root and intermediate certificates (DER) and their
 * private keys. Secret: whoever holds the keys can attest anything under the root. dev-authority-dir.ts
 * keeps it in a directory (keys in 0600 files) so a local cluster can pin the same root across runs.
 */
export interface DevAuthorityMaterial {
  readonly rootDer: Uint8Array;
  readonly rootKey: KeyObject;
  readonly intermediateDer: Uint8Array;
  readonly intermediateKey: KeyObject;
}

/** A fresh P-384 root and intermediate, both named DEV-ONLY, with their keys. */
export function createDevAuthorityMaterial(): DevAuthorityMaterial {
  const rootKeys = newKeyPair();
  const rootSubject = { commonName: DEV_ROOT_COMMON_NAME, organization: DEV_ORGANIZATION };
  const rootDer = issueCertificate({
    subject: rootSubject, publicKey: rootKeys.publicKey, signingKey: rootKeys.privateKey,
    notBefore: DEV_CA_NOT_BEFORE, notAfter: DEV_CA_NOT_AFTER, ca: {},
  });
  const intermediateKeys = newKeyPair();
  const intermediateDer = issueCertificate({
    subject: DEV_INTERMEDIATE_SUBJECT, publicKey: intermediateKeys.publicKey, issuer: rootSubject, signingKey: rootKeys.privateKey,
    notBefore: DEV_CA_NOT_BEFORE, notAfter: DEV_CA_NOT_AFTER, ca: { pathLength: 0 },
  });
  return { rootDer, rootKey: rootKeys.privateKey, intermediateDer, intermediateKey: intermediateKeys.privateKey };
}

/** The subject of a certificate as issueCertificate names it: its common name and organization. */
function subjectOf(der: Uint8Array): CertificateSubject {
  const { subject } = parseCertificate(der).asn.tbsCertificate;
  const [commonName] = nameValues(subject, OID_COMMON_NAME);
  const [organization] = nameValues(subject, OID_ORGANIZATION);
  if (commonName === undefined) throw new RangeError('dev attestation: the intermediate certificate has no common name');
  return { commonName, ...(organization === undefined ? {} : { organization }) };
}

/**
 * The authority of some material: each document gets its own leaf key and certificate, issued by the
 * intermediate, as the NSM's do. The private keys are not exposed by the authority it returns.
 */
export function devAttestationAuthority(material: DevAuthorityMaterial): DevAttestationAuthority {
  const { rootDer, intermediateDer, intermediateKey } = material;
  // Leaves name the intermediate as it is written in its certificate, so a saved authority keeps issuing
  // valid chains even if the subject this file gives new intermediates changes.
  const intermediateSubject = subjectOf(intermediateDer);
  return {
    rootPem: toPem(rootDer),
    rootDer: new Uint8Array(rootDer),
    attest(params) {
      const timestamp = params.at.getTime();
      if (!Number.isSafeInteger(timestamp) || timestamp <= 0) throw new RangeError('dev attestation: `at` is not a valid time');
      const moduleId = params.moduleId ?? DEV_MODULE_ID;
      const leafKeys = newKeyPair();
      const notBefore = new Date(Math.floor(timestamp / 1000) * 1000);
      const certificate = issueCertificate({
        subject: { commonName: `${moduleId}.${DEV_ROOT_MARKER}`, organization: DEV_ORGANIZATION }, publicKey: leafKeys.publicKey,
        issuer: intermediateSubject, signingKey: intermediateKey,
        notBefore, notAfter: new Date(notBefore.getTime() + DEV_LEAF_VALIDITY_MS),
      });
      const payload = encodeNitroPayload({
        moduleId, digest: 'SHA384', timestamp, pcrs: pcrMap(params.pcrs), certificate, cabundle: [rootDer, intermediateDer],
        ...(params.publicKey === undefined ? {} : { publicKey: params.publicKey }),
        ...(params.userData === undefined ? {} : { userData: params.userData }),
        ...(params.nonce === undefined ? {} : { nonce: params.nonce }),
      });
      // The verifier's own field checks, so the provider never hands out a document it would refuse as malformed.
      decodeNitroPayload(payload);
      return signNitroDocument(payload, leafKeys.privateKey);
    },
  };
}

/**
 * Creates a development attestation authority: a fresh P-384 root and intermediate, both named DEV-ONLY.
 * Each document gets its own leaf key and certificate, as the NSM's do. The private keys never leave.
 */
export function createDevAttestationAuthority(): DevAttestationAuthority {
  return devAttestationAuthority(createDevAuthorityMaterial());
}
