// Base OT: the "Simplest OT" of Chou and Orlandi (ePrint 2015/267) in the hardened form DKLs19 §5 and
// the endemic-OT analysis (ePrint 2019/706) ask for: the sender proves knowledge of its secret a
// (Schnorr, bound to the session, sender and receiver), every key hash binds the session context,
// both party ids, the OT index, A and the receiver's point B_i, and every received point is validated.
//
// One sender secret a per ordered pair serves a batch of `count` OTs:
//   sender:   A = a·G, proof of a
//   receiver: B_i = b_i·G + c_i·A  (c_i its choice bit), key_i = H(b_i·A)
//   sender:   k0_i = H(a·B_i), k1_i = H(a·B_i - a·A)
// Cost per OT: the receiver one fixed-base and one fixed-point (A) multiplication, the sender one
// multiplication of its secret by a fresh point; all three are products by secrets, taken from the
// injected primitives (constant time in every provider).
import { normalizeZ } from '@noble/curves/abstract/curve.js';
import { bytesToHex, concatBytes, hexToBytes } from '@noble/hashes/utils.js';
import { G, Point, pointHex, randomScalar, type Point as P } from '../math/curve.ts';
import { noblePrimitives, taggedHashWith, type Primitives } from '../math/primitives.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import type { Rng } from '../round/machine.ts';

export const BASE_OT_COUNT = 256;

function key(prims: Primitives, ctx: string, sender: number, receiver: number, i: number, A: string, B: string, S: P): Uint8Array {
  return taggedHashWith(prims, 'custody/ot/base/key/v1', [ctx, sender, receiver, i, A, B, S.toBytes(true)]);
}

/**
 * Packs points into one hex string, uncompressed (65 bytes each): the receiver then checks the curve
 * equation instead of taking a square root per point, which is most of the decoding cost.
 */
export function packPoints(points: P[]): string {
  return normalizeZ(Point, points).map((p) => bytesToHex(p.toBytes(false))).join('');
}

export function unpackPoints(hex: unknown, n: number, what: string): P[] {
  if (typeof hex !== 'string' || hex.length !== n * 130 || !/^[0-9a-f]*$/.test(hex)) throw new InputError('bad_point', `${what}: expected ${n} uncompressed points`);
  const out: P[] = [];
  for (let i = 0; i < n; i++) {
    const enc = hex.slice(130 * i, 130 * i + 130);
    let p: P;
    try {
      if (!enc.startsWith('04')) throw new Error('not uncompressed');
      p = Point.fromBytes(hexToBytes(enc));
      p.assertValidity();
    } catch {
      throw new InputError('bad_point', `${what} ${i}: not a point on secp256k1`);
    }
    if (p.is0()) throw new InputError('bad_point', `${what} ${i}: identity point`);
    out.push(p);
  }
  return out;
}

/** Receiver step: choice bits (packed, bit i of byte i>>3) against the sender's A. */
export function baseOtChoose(ctx: string, sender: number, receiver: number, A: P, choices: Uint8Array, rng: Rng, prims: Primitives = noblePrimitives): { B: string; keys: Uint8Array[] } {
  const Ahex = pointHex(A);
  const timesA = prims.times(A, BASE_OT_COUNT);
  const Bs: P[] = [];
  const Ss: P[] = [];
  for (let i = 0; i < BASE_OT_COUNT; i++) {
    const b = randomScalar(rng);
    const bit = (choices[i >> 3]! >> (i & 7)) & 1;
    const bG = prims.mulBase(b);
    Bs.push(bit ? bG.add(A) : bG);
    Ss.push(timesA(b));
  }
  // One field inversion for each batch instead of one per point.
  const Bn = normalizeZ(Point, Bs);
  const Sn = normalizeZ(Point, Ss);
  const keys = Bn.map((B, i) => key(prims, ctx, sender, receiver, i, Ahex, pointHex(B), Sn[i]!));
  return { B: packPoints(Bn), keys };
}

/** Sender step: both keys of every OT. */
export function baseOtKeys(ctx: string, sender: number, receiver: number, a: bigint, Bs: P[], A: P = G.multiply(a), prims: Primitives = noblePrimitives): { k0: Uint8Array[]; k1: Uint8Array[] } {
  const Ahex = pointHex(A);
  const aA = prims.times(A, 1)(a).negate();
  const k0: Uint8Array[] = [];
  const k1: Uint8Array[] = [];
  const S0 = normalizeZ(Point, Bs.map((B) => prims.times(B, 1)(a)));
  const S1 = normalizeZ(Point, S0.map((s) => s.add(aA)));
  Bs.forEach((B, i) => {
    const Bhex = pointHex(B);
    k0.push(key(prims, ctx, sender, receiver, i, Ahex, Bhex, S0[i]!));
    // a·B - a·A is the identity only if B = A, which a receiver could send; hash a fixed marker then.
    k1.push(S1[i]!.is0() ? taggedHashWith(prims, 'custody/ot/base/degenerate/v1', [ctx, sender, receiver, i]) : key(prims, ctx, sender, receiver, i, Ahex, Bhex, S1[i]!));
  });
  return { k0, k1 };
}

export function baseOtSender(rng: Rng): { a: bigint; A: P } {
  const a = randomScalar(rng);
  return { a, A: G.multiply(a) };
}

/** OT keys as kept in state and storage: one secret of the 32-byte keys concatenated. */
export const joinKeys = (keys: Uint8Array[]): SecretBytes => new SecretBytes(concatBytes(...keys));
/** The keys of a joinKeys secret, as views into it (read, never kept past the step that uses them). */
export function splitKeys(keys: SecretBytes): Uint8Array[] {
  const b = keys.expose();
  const out: Uint8Array[] = [];
  for (let i = 0; i < b.length; i += 32) out.push(b.subarray(i, i + 32));
  return out;
}
