// The protocols' symmetric primitives on Node's OpenSSL (node:crypto), for the node runtime. The
// protocols stay pure and take this as their injected `Primitives` (node/protocols/math/primitives.ts);
// every function returns exactly the bytes of the noble reference, which the tests check on random,
// empty, long and many inputs (test/protocols/primitives.test.ts).
//
// XChaCha20 is HChaCha20 (noble's, one block of the core per call) followed by OpenSSL's ChaCha20:
// OpenSSL has no XChaCha20, and its `chacha20` takes a 16-byte IV that is the 32-bit little-endian
// block counter then the 12-byte nonce, so counter 0 is four zero bytes in front.
//
// SHA-256 goes to OpenSSL at every length (about 2x noble on one block, 20x and more on the KOS
// matrix or τ). A ChaCha20 keystream goes to OpenSSL only from STREAM_NATIVE_FROM bytes: below that,
// creating the cipher context costs as much as noble's whole keystream (the protocols' streams are
// 94 and 128 bytes: measured equal or slower), so the reference computes those.
//
// Products by secret scalars go to libsecp256k1 (tiny-secp256k1: the library compiled to WebAssembly,
// no install script): `secp256k1_ec_pubkey_create` for k·G (its blinded, constant-time generator
// multiplication; the context is randomized when the module loads) and `secp256k1_ec_pubkey_tweak_mul`
// for k·P (`secp256k1_ecmult_const`, constant time). Points cross as 65-byte uncompressed encodings,
// which noble parses with a curve-equation check instead of a square root; the scalar's bytes are
// zeroed after each call (the library zeroes its own copy).
import { createCipheriv, hash } from 'node:crypto';
import { hchacha } from '@noble/ciphers/chacha.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import * as libsecp from 'tiny-secp256k1';
import { Fn, ORDER, Point, parsePoint } from '../protocols/math/curve.ts';
import { noblePrimitives, type Primitives } from '../protocols/math/primitives.ts';

/** Keystreams from this many bytes use OpenSSL; shorter ones noble (the same bytes either way). */
export const STREAM_NATIVE_FROM = 1024;

let zeros = Buffer.alloc(1024);
function zeroInput(n: number): Buffer {
  if (zeros.length < n) zeros = Buffer.alloc(n);
  return zeros.subarray(0, n);
}

function check(key: Uint8Array, nonce: Uint8Array, nonceLength: number, length: number): void {
  if (key.length !== 32) throw new RangeError('chacha20: key must be 32 bytes');
  if (nonce.length !== nonceLength) throw new RangeError(`chacha20: nonce must be ${nonceLength} bytes`);
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError('chacha20: bad length');
}

/**
 * A plain Uint8Array of the bytes (a Buffer's `slice` is a view, which callers that copy with `slice`
 * must not get), copied only when the Buffer sits inside a larger (pooled) ArrayBuffer.
 */
const own = (b: Buffer): Uint8Array =>
  b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

function keystream(key: Uint8Array, iv: Uint8Array, length: number): Uint8Array {
  if (length === 0) return new Uint8Array(0);
  const c = createCipheriv('chacha20', key, iv);
  const out = c.update(zeroInput(length));
  c.final();
  return own(out);
}

// "expand 32-byte k", as HChaCha20's constant words.
const SIGMA = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);
const LE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

// Scratch words for HChaCha20 (the host is little-endian, checked below, so bytes map onto words
// directly); zeroed after each use, since they hold the column key and the derived subkey.
const KEY_WORDS = new Uint32Array(8);
const NONCE_WORDS = new Uint32Array(4);
const SUB_WORDS = new Uint32Array(8);

function hchachaKey(key: Uint8Array, nonce16: Uint8Array): Uint8Array {
  new Uint8Array(KEY_WORDS.buffer).set(key);
  new Uint8Array(NONCE_WORDS.buffer).set(nonce16);
  hchacha(SIGMA, KEY_WORDS, NONCE_WORDS, SUB_WORDS);
  const bytes = new Uint8Array(SUB_WORDS.buffer).slice();
  KEY_WORDS.fill(0);
  SUB_WORDS.fill(0);
  return bytes;
}

/** OpenSSL's ChaCha20 keystream at any length (exported for the equivalence tests). */
export function opensslChacha20(key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array {
  check(key, nonce, 12, length);
  const iv = new Uint8Array(16);
  iv.set(nonce, 4);
  return keystream(key, iv, length);
}

/** HChaCha20 then OpenSSL's ChaCha20, at any length (exported for the equivalence tests). */
export function opensslXchacha20(key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array {
  check(key, nonce, 24, length);
  if (!LE) throw new Error('native xchacha20 expects a little-endian host');
  const sub = hchachaKey(key, nonce.subarray(0, 16));
  // The derived nonce is four zero bytes and the last 8 bytes of the given one; counter 0 before it.
  const iv = new Uint8Array(16);
  iv.set(nonce.subarray(16, 24), 8);
  try {
    return keystream(sub, iv, length);
  } finally {
    sub.fill(0);
  }
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

/**
 * A compressed point (hex) decompressed by libsecp256k1 (exported for the equivalence tests): noble then
 * reads the 65-byte encoding with its curve-equation check, without the square root it would take.
 */
export function libsecpPoint(hex: string, what: string): Point {
  return withPoint(hex, what, (point) => Point.fromBytes(libsecp.pointCompress(point, false)));
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
  sha256: (data: Uint8Array): Uint8Array => own(hash('sha256', data, 'buffer') as Buffer),
  chacha20(key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array {
    if (length < STREAM_NATIVE_FROM) return noblePrimitives.chacha20(key, nonce, length, out);
    if (out && out.length !== length) throw new RangeError('chacha20: output has the wrong length');
    const s = opensslChacha20(key, nonce, length);
    if (!out) return s;
    out.set(s);
    s.fill(0);
    return out;
  },
  xchacha20: (key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array =>
    length >= STREAM_NATIVE_FROM ? opensslXchacha20(key, nonce, length) : noblePrimitives.xchacha20(key, nonce, length),
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
