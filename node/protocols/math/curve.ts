// secp256k1 group helpers over @noble/curves: parsing that validates every received point and scalar,
// polynomial evaluation, Feldman commitments and Lagrange coefficients. No arithmetic is written here
// by hand: points and the scalar field are noble's. The group and point parsing are the public key
// code's (core/keys/point.ts), re-exported here for the protocols.
import { bytesToNumberBE } from '@noble/curves/utils.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import { Fn, G, ORDER, Point } from '../../../core/keys/point.ts';

export { Fn, G, ORDER, Point, parsePoint, pointHex } from '../../../core/keys/point.ts';

/** A scalar from 32-byte big-endian hex; refuses out-of-range values and, unless allowed, zero. */
export function parseScalar(hex: unknown, what: string, allowZero = false): bigint {
  if (typeof hex !== 'string' || !/^[0-9a-f]{64}$/.test(hex)) throw new InputError('bad_scalar', `${what}: expected 32-byte hex scalar`);
  const n = BigInt('0x' + hex);
  if (n >= ORDER) throw new InputError('bad_scalar', `${what}: scalar out of range`);
  if (n === 0n && !allowZero) throw new InputError('bad_scalar', `${what}: zero scalar`);
  return n;
}

export function scalarHex(n: bigint): string {
  return bytesToHex(Fn.toBytes(Fn.create(n)));
}

/** A secret scalar as protocol state holds it: 32 big-endian bytes that never print. */
export function secretScalar(n: bigint): SecretBytes {
  return new SecretBytes(Fn.toBytes(Fn.create(n)));
}

/** The scalar of a secret (at the edge of a round's arithmetic), range-checked like parseScalar. */
export function exposeScalar(s: SecretBytes, what: string, allowZero = false): bigint {
  const b = s.expose();
  if (b.length !== 32) throw new InputError('bad_scalar', `${what}: expected a 32-byte scalar`);
  const n = bytesToNumberBE(b);
  if (n >= ORDER) throw new InputError('bad_scalar', `${what}: scalar out of range`);
  if (n === 0n && !allowZero) throw new InputError('bad_scalar', `${what}: zero scalar`);
  return n;
}

/** f(x) for coefficients [a0, a1, ...]. */
export function polyEval(coeffs: bigint[], x: bigint): bigint {
  let acc = 0n;
  for (let i = coeffs.length - 1; i >= 0; i--) acc = Fn.add(Fn.mul(acc, x), coeffs[i]!);
  return acc;
}

/** Σ_k C_k · x^k: the public image of a Feldman-committed polynomial at x. */
export function evalCommitment(commitment: Point[], x: bigint): Point {
  let acc = Point.ZERO;
  for (let k = commitment.length - 1; k >= 0; k--) acc = acc.multiplyUnsafe(x).add(commitment[k]!);
  return acc;
}

/** λ_i for interpolation at 0 over the identifiers `ids`. */
export function lagrangeAtZero(ids: bigint[], i: bigint): bigint {
  if (!ids.includes(i) || new Set(ids).size !== ids.length) throw new InputError('bad_parties', 'lagrange: identifiers must be distinct and include i');
  let num = 1n;
  let den = 1n;
  for (const j of ids) {
    if (j === i) continue;
    num = Fn.mul(num, j);
    den = Fn.mul(den, Fn.sub(j, i));
  }
  return Fn.div(num, den);
}

let wideBase: Point | undefined;
/**
 * k·G for a secret k, constant time, on a copy of the generator with a window-8 table (noble's G has
 * window 6): noble blinds secret scalars to 384 bits, so this is 49 table additions instead of 65. The
 * table (6,272 points) is built once on first use; G itself keeps noble's default.
 */
export function mulBase(k: bigint): Point {
  if (!wideBase) {
    wideBase = Point.fromAffine(G.toAffine());
    wideBase.precompute(8, true);
  }
  return wideBase.multiply(k);
}

/** Uniform non-zero scalar from an injected RNG (64 bytes reduced: negligible bias). */
export function randomScalar(rng: (n: number) => Uint8Array): bigint {
  for (;;) {
    const b = rng(64);
    let n = 0n;
    for (const x of b) n = (n << 8n) | BigInt(x);
    n %= ORDER;
    if (n !== 0n) return n;
  }
}

/** Constant-time comparison of equal-length byte strings. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}
