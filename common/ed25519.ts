// Ed25519 for the server side (nodes, coordinator, API), through Node's OpenSSL binding. Signing and
// verifying there cost a few hundredths of what the pure-JavaScript path costs, and they sit on every
// node-to-node envelope, every intent check and every signed API request.
//
// Verification is at least as strict as @noble/curves' RFC 8032 mode, which the project used before:
// the public key is decoded once by noble (canonical encoding, not of small order) and kept as a key
// object; S must be below the group order; OpenSSL then checks the cofactorless equation and compares
// R byte for byte, which refuses a non-canonical R. Cofactorless is stricter than noble's cofactored
// check: a signature whose R carries a small-order component (only the key's holder can make one) is
// refused here. test/common/ed25519.unit.ts checks all of this against noble on crafted edge cases.
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { BoundedMemo } from './memo.ts';

// DER prefixes of an RFC 8410 Ed25519 SubjectPublicKeyInfo and PKCS #8 PrivateKeyInfo; the raw 32-byte
// key follows each.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
// Group order L, little-endian, for the canonical-S check.
const L = Buffer.from('edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010', 'hex');

const publicKeys = new BoundedMemo<KeyObject | null>(4096);

/** Is the little-endian 32-byte integer `a` below `b`? (Public values only.) */
function lessThan(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 31; i >= 0; i--) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

function publicKeyObject(publicKey: Uint8Array): KeyObject | null {
  return publicKeys.get(Buffer.from(publicKey).toString('hex'), () => {
    try {
      if (ed25519.Point.fromBytes(publicKey).isSmallOrder()) return null;
      return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    } catch {
      return null;
    }
  });
}

/** Strict Ed25519 verification; false (never a throw) for any malformed input. */
export function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || publicKey.length !== 32) return false;
  if (!lessThan(signature.subarray(32), L)) return false;
  const key = publicKeyObject(publicKey);
  if (key === null) return false;
  try {
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}

/**
 * Whether `publicKey` is an Ed25519 public key some secret key has: 32 bytes that are the canonical
 * RFC 8032 encoding of a curve point (y below p; x = 0 only with the sign bit clear) which is in the
 * prime-order subgroup and not of small order. `k·B` for a secret scalar k always is one; anything else
 * (off the curve, one of the eight small-order points, a point with a small-order component, or a
 * non-canonical encoding) is not a key anyone can sign under, and is refused wherever a key is registered.
 */
export function isValidEd25519PublicKey(publicKey: Uint8Array): boolean {
  if (publicKey.length !== 32) return false;
  try {
    // Strict decoding (zip215 off): y >= p and a negative zero x are refused here.
    const p = ed25519.Point.fromBytes(publicKey);
    return !p.isSmallOrder() && p.isTorsionFree();
  } catch {
    return false;
  }
}

/** `isValidEd25519PublicKey` of 64 hex digits (either case); false for anything else. */
export function isValidEd25519PublicKeyHex(hex: string): boolean {
  return /^[0-9a-fA-F]{64}$/.test(hex) && isValidEd25519PublicKey(new Uint8Array(Buffer.from(hex, 'hex')));
}

/**
 * An Ed25519 signing key held by OpenSSL for the life of the process. The caller keeps (and may zero)
 * its own copy of the seed; the key object cannot be zeroed from JavaScript.
 */
export class Ed25519Signer {
  readonly #key: KeyObject;

  constructor(seed: Uint8Array) {
    if (seed.length !== 32) throw new Error('an Ed25519 seed is 32 bytes');
    const der = Buffer.concat([PKCS8_PREFIX, seed]);
    this.#key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    der.fill(0);
  }

  sign(message: Uint8Array): Uint8Array {
    return new Uint8Array(sign(null, message, this.#key));
  }
}

/**
 * A one-shot Ed25519 signature by a 32-byte seed, through OpenSSL. RFC 8032 signing is deterministic, so
 * the bytes are noble's `ed25519.sign`'s; without noble's first-use table for the base point, which cost a
 * command-line call more than the rest of its signing.
 */
export function signEd25519(message: Uint8Array, seed: Uint8Array): Uint8Array {
  return new Ed25519Signer(seed).sign(message);
}
