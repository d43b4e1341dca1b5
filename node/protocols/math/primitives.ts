// The symmetric primitives the protocols' hot paths call, injected like the RNG (DESIGN.md, "the one
// rule"): a protocol takes a `Primitives` and never picks an implementation itself, so the same pure
// code runs on `@noble/*` (this file's reference, the default) or on the node's native OpenSSL
// (node/runtime/native-primitives.ts). Every implementation must return the same bytes for the same
// inputs: what is hashed and what travels never depends on the provider, and the tests cross-check
// them (test/protocols/primitives.unit.ts).
//
// The products of a point by a secret scalar are here too: noble's constant-time, blinded
// multiplications in the reference, libsecp256k1's constant-time ones in the node's provider. They
// return the same point for the same inputs (docs/protocols/ecdsa.md, "Primitives").
import { ecb } from '@noble/ciphers/aes.js';
import { ghash } from '@noble/ciphers/_polyval.js';
import { chacha20, xchacha20 } from '@noble/ciphers/chacha.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { transcript, type Part } from '../../../core/codec/transcript.ts';
import { G, Point, mulBase, parsePoint, pointHex } from './curve.ts';
import { verifyEcdsaDigest } from './ecdsa-verify.ts';

export interface Primitives {
  /** For logs and benchmarks only; never hashed. */
  readonly name: string;
  /**
   * SHA-256 of `data` (any length, empty included): written into `out` (exactly 32 bytes) and returned
   * when given, else in fresh memory (the per-row hash reuses one digest buffer).
   */
  sha256(data: Uint8Array, out?: Uint8Array): Uint8Array;
  /**
   * `length` bytes of the RFC 8439 ChaCha20 keystream under a 32-byte key and a 12-byte nonce, block
   * counter from 0: written into `out` (exactly `length` bytes) and returned when given, else in fresh
   * memory. `out` lets the per-row hash reuse one buffer (allocation is a fifth of its cost).
   */
  chacha20(key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array;
  /**
   * `length` bytes of the XChaCha20 keystream (draft-irtf-cfrg-xchacha) under a 32-byte key and a 24-byte
   * nonce, into `out` (exactly `length` bytes) when given, as `chacha20`.
   */
  xchacha20(key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array;
  /** AES-128 of one 16-byte block under a 16-byte key (FIPS 197). */
  aes128Block(key: Uint8Array, block: Uint8Array): Uint8Array;
  /**
   * GCM's GHASH of `data` (a multiple of 16 bytes) as the additional data of an empty message, under the
   * hash key H = AES-128_key(0^128): GHASH_H(data ‖ [8·|data|]_64 ‖ [0]_64), NIST SP 800-38D §6.4 and
   * §7.1 step 5 (the tag before its mask). `data` may be empty.
   */
  gcmHash(key: Uint8Array, data: Uint8Array): Uint8Array;
  /** k·G for a secret scalar 0 < k < n, in constant time. */
  mulBase(k: bigint): Point;
  /**
   * A constant-time product by secret scalars (0 < k < n) of one valid, non-identity point P used many
   * times: `times(P)(k)` is k·P. The reference builds a window table of P once; other providers may not.
   */
  times(P: Point, uses: number): (k: bigint) => Point;
  /**
   * Whether (r, s) is a low-s ECDSA signature of the digest scalar m (reduced mod n) under the
   * compressed public key (hex; an invalid one is an InputError). Public values only.
   */
  verifyEcdsa(r: bigint, s: bigint, m: bigint, publicKey: string): boolean;
  /**
   * P + k·G, compressed (hex), for a compressed point P (hex; an invalid one is an InputError) and a
   * public scalar 0 < k < n; undefined when the sum is the identity. Public values only.
   */
  addBase(P: string, k: bigint): string | undefined;
  /**
   * The point of a compressed encoding (hex), refusing what core's `parsePoint` refuses with its
   * InputError (bad_point): the reference is `parsePoint` itself. Public values only.
   */
  point(hex: string, what: string): Point;
  /** k·P for a public scalar 0 < k < n and a valid, non-identity point P: public values only. */
  mulPublic(P: Point, k: bigint): Point;
  /**
   * Whether `sig` (64 bytes) is a BIP-340 signature of `msg` (any length) under the x-only key (32 bytes);
   * a malformed signature or key is false. Public values only.
   */
  verifySchnorr(sig: Uint8Array, msg: Uint8Array, xOnlyKey: Uint8Array): boolean;
}

let zeros = new Uint8Array(1024);
/** A read-only zero input of at least `n` bytes: noble's ciphers XOR a keystream into their input. */
function zeroInput(n: number): Uint8Array {
  if (zeros.length < n) zeros = new Uint8Array(n);
  return zeros.subarray(0, n);
}

/** The argument checks every provider's `aes128Block` and `gcmHash` make (one block for `aes128Block`). */
export function checkAesArgs(key: Uint8Array, data: Uint8Array, what: 'aes128Block' | 'gcmHash'): void {
  if (key.length !== 16) throw new RangeError(`${what}: key must be 16 bytes`);
  if (what === 'aes128Block' ? data.length !== 16 : data.length % 16 !== 0) {
    throw new RangeError(what === 'aes128Block' ? 'aes128Block: one 16-byte block' : 'gcmHash: input must be whole 16-byte blocks');
  }
}

/** The check every provider's `sha256` makes of a caller's output buffer. */
export function checkDigestOut(out: Uint8Array | undefined): void {
  if (out && out.length !== 32) throw new RangeError('sha256: output must be 32 bytes');
}

/** GCM's length block for additional data of `bytes` bytes and an empty message. */
export function gcmLengthBlock(bytes: number): Uint8Array {
  const b = new Uint8Array(16);
  new DataView(b.buffer).setBigUint64(0, BigInt(bytes) * 8n);
  return b;
}

function nobleAes128Block(key: Uint8Array, block: Uint8Array): Uint8Array {
  checkAesArgs(key, block, 'aes128Block');
  return ecb(key, { disablePadding: true }).encrypt(block);
}

/** The reference provider: `@noble/hashes` and `@noble/ciphers`, pure JavaScript. */
export const noblePrimitives: Primitives = Object.freeze({
  name: 'noble',
  sha256(data: Uint8Array, out?: Uint8Array): Uint8Array {
    checkDigestOut(out);
    if (!out) return sha256(data);
    out.set(sha256(data));
    return out;
  },
  chacha20: (key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array =>
    chacha20(key, nonce, zeroInput(length), out ?? new Uint8Array(length)),
  xchacha20: (key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array =>
    xchacha20(key, nonce, zeroInput(length), out ?? new Uint8Array(length)),
  aes128Block: nobleAes128Block,
  gcmHash(key: Uint8Array, data: Uint8Array): Uint8Array {
    checkAesArgs(key, data, 'gcmHash');
    const h = nobleAes128Block(key, new Uint8Array(16));
    const all = new Uint8Array(data.length + 16);
    all.set(data);
    all.set(gcmLengthBlock(data.length), data.length);
    return ghash(all, h);
  },
  mulBase,
  times: nobleTimes,
  verifyEcdsa: verifyEcdsaDigest,
  addBase(P: string, k: bigint): string | undefined {
    const sum = parsePoint(P, 'point').add(G.multiplyUnsafe(k));
    return sum.is0() ? undefined : pointHex(sum);
  },
  point: parsePoint,
  mulPublic: (P: Point, k: bigint): Point => P.multiplyUnsafe(k),
  verifySchnorr(sig: Uint8Array, msg: Uint8Array, xOnlyKey: Uint8Array): boolean {
    try {
      return schnorr.verify(sig, msg, xOnlyKey);
    } catch {
      return false; // a signature or key of the wrong length
    }
  },
});

/**
 * noble's blinded product (384-bit multipliers): for a point used at least 64 times, a window-7 table
 * built on the first product (ceil(384/7)+1 windows of 64 points: 3,584 points against 56 additions
 * per product saved); otherwise the point's own products.
 */
function nobleTimes(P: Point, uses: number): (k: bigint) => Point {
  if (uses < 64) return (k) => P.multiply(k);
  const table = Point.fromAffine(P.toAffine());
  table.precompute(7, true);
  return (k) => table.multiply(k);
}

/** core/codec/transcript.ts's taggedHash (the same bytes hashed) on the given provider. */
export function taggedHashWith(prims: Primitives, tag: string, parts: Part[]): Uint8Array {
  return prims.sha256(transcript(tag, parts));
}

export function taggedHashHexWith(prims: Primitives, tag: string, parts: Part[]): string {
  return bytesToHex(taggedHashWith(prims, tag, parts));
}
