// The file a sealed storage key is kept in (STYLE.md habit 6: a stored blob starts with a version):
//
//   u8 version (1) ‖ u8 sealer (1 = kms, 2 = dev-insecure) ‖ 16-byte key check ‖ the sealer's payload
//
// The payload is KMS's CiphertextBlob for `kms` (opaque, made and opened by KMS) and nonce ‖ ciphertext
// for `dev-insecure`. The sealer byte lets a node refuse a blob another sealer made instead of sending it
// to the wrong one. The key check, the first 16 bytes of HMAC-SHA-256(key, "custody/sealed-storage-key/
// check/v1"), tells at unseal time that the key that came back is the one that was sealed: KMS's answer
// to an enclave is AES-CBC, which is not authenticated, so a changed answer would otherwise surface
// only as a store that does not open. It says nothing about the key to anyone who does not hold it.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { equalBytes } from '@noble/curves/utils.js';
import { SealError } from './seal-error.ts';
import { SEALED_KEY_BYTES, type SealerKind } from './sealer.ts';

export const SEALED_KEY_VERSION = 1;
/** KMS ciphertext blobs are at most 6144 bytes; nothing larger is read. */
export const MAX_SEALED_KEY_BYTES = 8192;
const CHECK_BYTES = 16;
const HEADER_BYTES = 2 + CHECK_BYTES;
const CHECK_INFO = new TextEncoder().encode('custody/sealed-storage-key/check/v1');

const TAGS: Record<SealerKind, number> = { kms: 1, 'dev-insecure': 2 };
const KINDS = new Map<number, SealerKind>(Object.entries(TAGS).map(([k, v]) => [v, k as SealerKind]));

export interface SealedKey {
  readonly kind: SealerKind;
  /** Version and sealer bytes: the dev sealer binds them as associated data. */
  readonly header: Uint8Array;
  readonly check: Uint8Array;
  readonly payload: Uint8Array;
}

function keyCheck(key: Uint8Array): Uint8Array {
  return hmac(sha256, key, CHECK_INFO).subarray(0, CHECK_BYTES);
}

/** The version and sealer bytes of a blob `kind` makes. */
export function sealedKeyHeader(kind: SealerKind): Uint8Array {
  return new Uint8Array([SEALED_KEY_VERSION, TAGS[kind]]);
}

export function encodeSealedKey(kind: SealerKind, key: Uint8Array, payload: Uint8Array): Uint8Array {
  if (key.length !== SEALED_KEY_BYTES) throw new SealError('bad_storage_key', `a storage key has ${SEALED_KEY_BYTES} bytes`);
  const out = new Uint8Array(HEADER_BYTES + payload.length);
  out.set(sealedKeyHeader(kind));
  out.set(keyCheck(key), 2);
  out.set(payload, HEADER_BYTES);
  if (out.length > MAX_SEALED_KEY_BYTES) throw new SealError('bad_storage_key', `a sealed storage key of ${out.length} bytes is larger than ${MAX_SEALED_KEY_BYTES}`);
  return out;
}

/** A blob that `kind` made, split; a blob of another version or sealer is refused. */
export function decodeSealedKey(blob: Uint8Array, kind: SealerKind): SealedKey {
  if (blob.length <= HEADER_BYTES || blob.length > MAX_SEALED_KEY_BYTES) {
    throw new SealError('bad_storage_key', `a sealed storage key has ${HEADER_BYTES + 1} to ${MAX_SEALED_KEY_BYTES} bytes; this one has ${blob.length}`);
  }
  if (blob[0] !== SEALED_KEY_VERSION) throw new SealError('bad_storage_key', `sealed storage key version ${blob[0]} is not known (expected ${SEALED_KEY_VERSION})`);
  const made = KINDS.get(blob[1]!);
  if (made === undefined) throw new SealError('bad_storage_key', `the sealed storage key names an unknown sealer (${blob[1]})`);
  if (made !== kind) throw new SealError('bad_storage_key', `the storage key was sealed by the ${made} sealer; this node is configured for ${kind}`);
  return { kind, header: blob.subarray(0, 2), check: blob.subarray(2, HEADER_BYTES), payload: blob.subarray(HEADER_BYTES) };
}

/** `key` if it is a storage key and the one the blob was sealed with; SealError `unseal_failed` otherwise. */
export function checkUnsealedKey(sealed: SealedKey, key: Uint8Array): Uint8Array {
  if (key.length !== SEALED_KEY_BYTES) throw new SealError('unseal_failed', `the ${sealed.kind} sealer returned ${key.length} bytes, not a ${SEALED_KEY_BYTES}-byte storage key`);
  if (!equalBytes(keyCheck(key), sealed.check)) throw new SealError('unseal_failed', `the key the ${sealed.kind} sealer returned is not the one that was sealed`);
  return key;
}
