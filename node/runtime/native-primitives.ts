// The protocols' primitives on native code, for the node runtime. The protocols stay pure and take this as
// their injected `Primitives` (node/protocols/math/primitives.ts); every function returns exactly the
// bytes of the noble reference, which the tests check on random, empty, long and many inputs
// (test/protocols/primitives.unit.ts).
//
// The hot symmetric calls are many and short: a one-block SHA-256 and a 128-byte ChaCha20 stream per OT
// row, a 94-byte XChaCha20 stream per extension column, some 3,500 of them per presigning pair. What
// such a call costs is the crossing, not the cipher: node:crypto builds a hash or cipher object per
// call (2 to 7 µs, whatever the length), and noble's JavaScript spends most of its 4 to 5 µs on views,
// copies and checks around two ChaCha blocks. libsodium's functions through sodium-native (a Node-API
// addon, prebuilt for each platform inside the package, no install script) write into the caller's
// buffer: under 1 µs for each of these calls. So:
// - SHA-256 below SHA256_OPENSSL_FROM bytes is libsodium's; longer inputs (the KOS matrix, τ, the μ
//   rows) go to OpenSSL (`crypto.hash`), whose SHA-256 uses the processor's SHA extensions: 8x
//   libsodium's on 24 kB;
// - ChaCha20 (RFC 8439: 12-byte nonce, block counter from 0) is libsodium's
//   `crypto_stream_chacha20_ietf`, at every length;
// - XChaCha20 (draft-irtf-cfrg-xchacha: HChaCha20, then ChaCha20 under the subkey) is libsodium's
//   `crypto_stream_xchacha20`, whose 64-bit block counter and 8-byte nonce give the draft's bytes for
//   every stream under 2^32 blocks (256 GiB).
//
// Products by secret scalars go to libsecp256k1 (tiny-secp256k1: the library compiled to WebAssembly,
// no install script): `secp256k1_ec_pubkey_create` for k·G (its blinded, constant-time generator
// multiplication; the context is randomized when the module loads) and `secp256k1_ec_pubkey_tweak_mul`
// for k·P (`secp256k1_ecmult_const`, constant time). Points cross as 65-byte uncompressed encodings,
// which noble parses with a curve-equation check instead of a square root; the scalar's bytes are
// zeroed after each call (the library zeroes its own copy).
import { createCipheriv, hash } from 'node:crypto';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import sodium from 'sodium-native';
import * as libsecp from 'tiny-secp256k1';
import { Fn, ORDER, Point, parsePoint } from '../protocols/math/curve.ts';
import { checkAesArgs, checkDigestOut, noblePrimitives, type Primitives } from '../protocols/math/primitives.ts';

/** SHA-256 inputs from this many bytes go to OpenSSL; shorter ones to libsodium (the same digest either way). */
export const SHA256_OPENSSL_FROM = 128;

/**
 * A plain Uint8Array of the bytes (a Buffer's `slice` is a view, which callers that copy with `slice`
 * must not get), copied only when the Buffer sits inside a larger (pooled) ArrayBuffer.
 */
const own = (b: Buffer): Uint8Array =>
  b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/** SHA-256 on libsodium at any length, into `out` when given (exported for the equivalence tests). */
export function sodiumSha256(data: Uint8Array, out?: Uint8Array): Uint8Array {
  checkDigestOut(out);
  const o = out ?? new Uint8Array(32);
  sodium.crypto_hash_sha256(o, data);
  return o;
}

/** SHA-256 on OpenSSL, into `out` when given. */
function opensslSha256(data: Uint8Array, out?: Uint8Array): Uint8Array {
  checkDigestOut(out);
  const d = hash('sha256', data, 'buffer') as Buffer;
  if (!out) return own(d);
  out.set(d);
  return out;
}

function check(key: Uint8Array, nonce: Uint8Array, nonceLength: number, length: number, out?: Uint8Array): void {
  if (key.length !== 32) throw new RangeError('chacha20: key must be 32 bytes');
  if (nonce.length !== nonceLength) throw new RangeError(`chacha20: nonce must be ${nonceLength} bytes`);
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError('chacha20: bad length');
  if (out && out.length !== length) throw new RangeError('chacha20: output has the wrong length');
}

/** libsodium's ChaCha20 (RFC 8439) keystream, into `out` when given (exported for the equivalence tests). */
export function sodiumChacha20(key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array {
  check(key, nonce, 12, length, out);
  const o = out ?? new Uint8Array(length);
  if (length > 0) sodium.crypto_stream_chacha20_ietf(o, nonce, key);
  return o;
}

/** libsodium's XChaCha20 keystream, into `out` when given (exported for the equivalence tests). */
export function sodiumXchacha20(key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array {
  check(key, nonce, 24, length, out);
  const o = out ?? new Uint8Array(length);
  if (length > 0) sodium.crypto_stream_xchacha20(o, nonce, key);
  return o;
}

/** AES-128 of one block on OpenSSL (exported for the equivalence tests). */
export function opensslAes128Block(key: Uint8Array, block: Uint8Array): Uint8Array {
  checkAesArgs(key, block, 'aes128Block');
  const c = createCipheriv('aes-128-ecb', key, null);
  c.setAutoPadding(false);
  const out = own(c.update(block));
  c.final();
  return out;
}

const GCM_IV = new Uint8Array(12);
/** J0 for the 96-bit IV of zeros: IV ‖ 0^31 ‖ 1 (SP 800-38D §7.1 step 2). */
const GCM_J0 = Uint8Array.from([...GCM_IV, 0, 0, 0, 1]);

/**
 * GCM's GHASH of `data` as additional data on OpenSSL (exported for the equivalence tests): an AES-128-GCM
 * encryption of nothing under `key` with `data` as its AAD has the tag GHASH ⊕ AES_key(J0) (SP 800-38D
 * §7.1 steps 5-6), so the hash is the tag with that mask taken off. OpenSSL's GHASH runs on the
 * processor's carry-less multiplication, in constant time in the data (the rows it hashes are secret);
 * the key is a public value of the protocol.
 */
export function opensslGcmHash(key: Uint8Array, data: Uint8Array): Uint8Array {
  checkAesArgs(key, data, 'gcmHash');
  const c = createCipheriv('aes-128-gcm', key, GCM_IV);
  c.setAAD(data);
  c.final();
  const tag = c.getAuthTag();
  const mask = opensslAes128Block(key, GCM_J0);
  for (let i = 0; i < 16; i++) mask[i]! ^= tag[i]!;
  return mask;
}

function scalarBytes(k: bigint): Uint8Array {
  if (k <= 0n || k >= Fn.ORDER) throw new RangeError('secp256k1: a secret scalar must be in 1..n-1');
  return Fn.toBytes(k);
}

/** The point libsecp256k1 returns for a secret scalar k, whose bytes are zeroed afterwards. */
function product(k: bigint, f: (d: Uint8Array) => Uint8Array | null): Point {
  const d = scalarBytes(k);
  try {
    const out = f(d);
    if (!out) throw new Error('secp256k1: product is the identity');
    return Point.fromBytes(out);
  } finally {
    d.fill(0);
  }
}

/** k·G on libsecp256k1 (exported for the equivalence tests). */
export const libsecpMulBase = (k: bigint): Point => product(k, (d) => libsecp.pointFromScalar(d, false));

/** k·P on libsecp256k1 (exported for the equivalence tests). */
export function libsecpMul(P: Point, k: bigint): Point {
  if (P.is0()) throw new RangeError('secp256k1: the identity has no product to take');
  return mulEncoded(P.toBytes(false), k);
}

const mulEncoded = (p: Uint8Array, k: bigint): Point => product(k, (d) => libsecp.pointMultiply(p, d, false));

/**
 * ECDSA verification on libsecp256k1 (exported for the equivalence tests), with the reference's
 * acceptance: r and s in 1..n-1 and s at most n/2 are checked here, and libsecp256k1's strict mode
 * refuses a high s as well (it does not normalize one).
 */
export function libsecpVerifyEcdsa(r: bigint, s: bigint, m: bigint, publicKey: string): boolean {
  if (r <= 0n || r >= ORDER || s <= 0n || s > ORDER >> 1n) return false;
  const sig = new Uint8Array(64);
  sig.set(Fn.toBytes(r), 0);
  sig.set(Fn.toBytes(s), 32);
  return withPoint(publicKey, 'public key', (key) => libsecp.verify(Fn.toBytes(Fn.create(m)), key, sig, true));
}

/**
 * Runs `f` on a compressed point (hex) that libsecp256k1 parses itself; a point it refuses is then
 * refused with the reference's InputError (parsePoint's), so both providers fail alike.
 */
function withPoint<T>(hex: string, what: string, f: (point: Uint8Array) => T): T {
  const point = /^0[23][0-9a-f]{64}$/.test(hex) ? hexToBytes(hex) : undefined;
  if (!point) parsePoint(hex, what);
  try {
    return f(point!);
  } catch (err) {
    parsePoint(hex, what);
    throw err;
  }
}

/** P + k·G on libsecp256k1 (exported for the equivalence tests). */
export function libsecpAddBase(P: string, k: bigint): string | undefined {
  const tweak = scalarBytes(k);
  const sum = withPoint(P, 'point', (point) => libsecp.pointAddScalar(point, tweak, true));
  return sum ? bytesToHex(sum) : undefined;
}

/** How many decompressed points `libsecpPoint` keeps, most recently used first. */
export const POINT_CACHE_SIZE = 512;
const decompressed = new Map<string, Point>();

/**
 * A compressed point (hex) decompressed by libsecp256k1 (exported for the equivalence tests): noble then
 * reads the 65-byte encoding with its curve-equation check, without the square root it would take.
 * One signing parses the same commitments, group key and verification shares several times (preflight,
 * the share, the aggregation), so the last POINT_CACHE_SIZE points are kept by their encoding: public
 * values only, and a refused encoding is never kept, so it is refused every time.
 */
export function libsecpPoint(hex: string, what: string): Point {
  const hit = decompressed.get(hex);
  if (hit) {
    decompressed.delete(hex);
    decompressed.set(hex, hit);
    return hit;
  }
  const p = withPoint(hex, what, (point) => Point.fromBytes(libsecp.pointCompress(point, false)));
  decompressed.set(hex, p);
  if (decompressed.size > POINT_CACHE_SIZE) decompressed.delete(decompressed.keys().next().value!);
  return p;
}

/**
 * k·P for public k and P on libsecp256k1 (exported for the equivalence tests): the same constant-time
 * product as for secret scalars, which in WebAssembly is still some twenty times noble's variable-time one.
 */
export const libsecpMulPublic = (P: Point, k: bigint): Point => libsecpMul(P, k);

/**
 * BIP-340 verification on libsecp256k1 (exported for the equivalence tests) for a 32-byte message; other
 * lengths, which BIP-340 allows and the library's binding does not, go to the reference. A malformed
 * signature or key is `false`, as in the reference.
 */
export function libsecpVerifySchnorr(sig: Uint8Array, msg: Uint8Array, xOnlyKey: Uint8Array): boolean {
  if (msg.length !== 32) return noblePrimitives.verifySchnorr(sig, msg, xOnlyKey);
  if (sig.length !== 64 || xOnlyKey.length !== 32) return false;
  try {
    return libsecp.verifySchnorr(msg, xOnlyKey, sig);
  } catch {
    return false;
  }
}

export const nativePrimitives: Primitives = Object.freeze({
  name: 'native',
  sha256: (data: Uint8Array, out?: Uint8Array): Uint8Array => (data.length < SHA256_OPENSSL_FROM ? sodiumSha256(data, out) : opensslSha256(data, out)),
  chacha20: sodiumChacha20,
  xchacha20: sodiumXchacha20,
  aes128Block: opensslAes128Block,
  gcmHash: opensslGcmHash,
  mulBase: libsecpMulBase,
  times(P: Point): (k: bigint) => Point {
    if (P.is0()) throw new RangeError('secp256k1: the identity has no product to take');
    // One affine conversion and encoding for all the products of P.
    const p = P.toBytes(false);
    return (k) => mulEncoded(p, k);
  },
  verifyEcdsa: libsecpVerifyEcdsa,
  addBase: libsecpAddBase,
  point: libsecpPoint,
  mulPublic: libsecpMulPublic,
  verifySchnorr: libsecpVerifySchnorr,
});
