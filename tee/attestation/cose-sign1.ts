// COSE_Sign1 (RFC 9052 §4.2, §4.4) as AWS Nitro Enclaves uses it: a 4-array [protected, unprotected,
// payload, signature], untagged or under tag 18, whose protected header is exactly {1: -35} (ES384) and
// whose signature is the 96-byte raw r||s. The Sig_structure is built from the received protected and
// payload byte strings, never from a re-encoding of their decoded values.
import { decode, encode, Tag } from 'cbor2';
import { equalBytes } from '@noble/curves/utils.js';
import { AttestationError } from './attestation-error.ts';

/** COSE_Sign1's CBOR tag (RFC 9052 §2). */
export const COSE_SIGN1_TAG = 18;
/** The COSE algorithm id of ECDSA with SHA-384 on P-384 (RFC 9053 §2.1). */
export const COSE_ALG_ES384 = -35;
/** The one protected header accepted: the map {1: -35} (alg: ES384), a1 01 38 22, as AWS sends it. */
export const ES384_PROTECTED_HEADER: Uint8Array = encode(new Map([[1, COSE_ALG_ES384]]));
/** An ES384 signature: r and s, 48 bytes each, big-endian. */
export const ES384_SIGNATURE_BYTES = 96;

/**
 * Strict decoding: definite lengths only, no duplicate map keys, no floats or big integers, no trailing
 * bytes (cbor2 refuses extra data). Maps always decode as Map so integer keys stay integers.
 */
export const STRICT_CBOR = {
  preferMap: true,
  rejectDuplicateKeys: true,
  rejectStreaming: true,
  rejectFloats: true,
  rejectBigInts: true,
  rejectUndefined: true,
  rejectSimple: true,
} as const;

export interface CoseSign1 {
  /** The protected header's byte string, exactly as received. */
  readonly protectedHeader: Uint8Array;
  /** The payload's byte string, exactly as received. */
  readonly payload: Uint8Array;
  readonly signature: Uint8Array;
}

/** A copy as a plain Uint8Array: cbor2 hands out Buffer views into its input. */
export const plainBytes = (b: Uint8Array): Uint8Array => new Uint8Array(b);

export function decodeCbor(bytes: Uint8Array, what: string): unknown {
  try {
    return decode(bytes, STRICT_CBOR);
  } catch (err) {
    throw new AttestationError('bad_attestation', `${what} is not valid CBOR: ${(err as Error).message}`, { cause: err });
  }
}

/** Decodes a COSE_Sign1 and checks its shape and protected header; the signature is not checked here. */
export function decodeCoseSign1(bytes: Uint8Array): CoseSign1 {
  let value = decodeCbor(bytes, 'the attestation document');
  if (value instanceof Tag) {
    if (value.tag !== COSE_SIGN1_TAG) throw new AttestationError('bad_attestation', `the attestation document has CBOR tag ${value.tag}, not COSE_Sign1 (18)`);
    value = value.contents;
  }
  if (!Array.isArray(value) || value.length !== 4) throw new AttestationError('bad_attestation', 'the attestation document is not a COSE_Sign1 array of 4 items');
  const [protectedHeader, unprotected, payload, signature] = value as unknown[];
  if (!(protectedHeader instanceof Uint8Array)) throw new AttestationError('bad_attestation', 'the COSE protected header is not a byte string');
  // The unprotected header is not covered by the signature, so nothing is read from it; it must still be a map.
  if (!(unprotected instanceof Map)) throw new AttestationError('bad_attestation', 'the COSE unprotected header is not a map');
  if (!(payload instanceof Uint8Array)) throw new AttestationError('bad_attestation', 'the COSE payload is not a byte string');
  if (!(signature instanceof Uint8Array)) throw new AttestationError('bad_attestation', 'the COSE signature is not a byte string');

  // Compared as bytes: the signature covers these bytes, so no other encoding of the same map is taken.
  if (!equalBytes(protectedHeader, ES384_PROTECTED_HEADER)) {
    throw new AttestationError('bad_attestation', 'the COSE protected header is not exactly {1: -35} (alg ES384)');
  }
  if (signature.length !== ES384_SIGNATURE_BYTES) {
    throw new AttestationError('bad_attestation', `the COSE signature has ${signature.length} bytes, not ${ES384_SIGNATURE_BYTES}`);
  }
  return { protectedHeader: plainBytes(protectedHeader), payload: plainBytes(payload), signature: plainBytes(signature) };
}

/** The bytes an ES384 COSE_Sign1 signature covers: Sig_structure ["Signature1", protected, h'', payload]. */
export function sigStructure(protectedHeader: Uint8Array, payload: Uint8Array): Uint8Array {
  return encode(['Signature1', plainBytes(protectedHeader), new Uint8Array(0), plainBytes(payload)]);
}

/** Encodes an untagged COSE_Sign1 with an empty unprotected header, as AWS sends it. */
export function encodeCoseSign1(sign1: CoseSign1): Uint8Array {
  return encode([plainBytes(sign1.protectedHeader), new Map(), plainBytes(sign1.payload), plainBytes(sign1.signature)]);
}
