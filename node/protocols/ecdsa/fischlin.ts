// Schnorr proof of knowledge of a discrete logarithm with Fischlin's transform (M. Fischlin, "Communication-
// Efficient Non-Interactive Proofs of Knowledge with Online Extractors", CRYPTO 2005, §3), for the proofs
// DKLs23 (ePrint 2023/765, §2 and the setup of §3) and DKLs19 (§5, the base-OT sender's proof) model
// as F_DLog: the simulator must extract the witness straight-line, without rewinding, which Fiat-Shamir
// does not give.
//
// Parameters (Fischlin's ρ, b, t, S):
//   ρ = 16 parallel Schnorr repetitions, b = 8 bits of hash that must be zero per repetition, t = 16 bits
//   of challenge space searched per repetition, S = 0 (every repetition's b-bit hash is zero).
//   - knowledge error about Q·2^(−bρ) = Q·2^−128 for Q random-oracle queries: the curve's security level;
//   - completeness error ρ·(1 − 2^−b)^(2^t) = 16·e^−256: a repetition with no zero hash among its 2^16
//     challenges is, for all practical purposes, impossible (the prover then starts over);
//   - cost: ρ fixed-base multiplications and about ρ·2^b = 4096 short hashes to prove, ρ checks to verify.
//
// The repetition hash is H(tag, D, i, c_i, z_i) with D = H(tag', context, prover, X, R_1..R_ρ): the
// context carries the session id, the prover's party id is bound, and every tag is versioned and
// distinct from every other hash of the protocol.
import { Fn, G, pointHex, randomScalar, scalarHex, parsePoint, parseScalar, type Point } from '../math/curve.ts';
import { transcript } from '../../../core/codec/transcript.ts';
import { noblePrimitives, taggedHashWith, type Primitives } from '../math/primitives.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import type { Rng } from '../round/machine.ts';

export const FISCHLIN_RHO = 16;
export const FISCHLIN_B = 8;
export const FISCHLIN_T = 16;

export interface FischlinProof {
  /** ρ commitments R_i = k_i·G, compressed hex. */
  R: string[];
  /** ρ challenges c_i < 2^t. */
  c: number[];
  /** ρ responses z_i = k_i + c_i·x, 32-byte hex. */
  z: string[];
}

function commitmentsDigest(prims: Primitives, tag: string, context: string, prover: number, X: Point, R: string[]): Uint8Array {
  return taggedHashWith(prims, `custody/pok-fischlin/${tag}/commitments/v1`, [context, prover, pointHex(X), R.join('')]);
}

/**
 * The S = 0 test of repetition i: are the first b bits of H(tag, D, i, c, z) zero? The transcript of
 * (tag, D, i, c, z) is laid out once; each challenge only writes its c (2 bytes) and z (32 bytes).
 */
function repetition(prims: Primitives, tag: string, D: Uint8Array, i: number) {
  const buf = transcript(`custody/pok-fischlin/${tag}/v1`, [D, i, new Uint8Array(2), new Uint8Array(32)]);
  const zAt = buf.length - 32;
  const cAt = zAt - 4 - 2;
  return (c: number, z: bigint): boolean => {
    buf[cAt] = c >> 8;
    buf[cAt + 1] = c & 0xff;
    buf.set(Fn.toBytes(z), zAt);
    const h = prims.sha256(buf);
    return ((h[0]! << 8) | h[1]!) >>> (16 - FISCHLIN_B) === 0;
  };
}

/** Proves knowledge of x with X = x·G, bound to the context (session) and the prover. */
export function proveDlogFischlin(tag: string, context: string, prover: number, x: bigint, X: Point, rng: Rng, prims: Primitives = noblePrimitives): FischlinProof {
  for (;;) {
    const k = Array.from({ length: FISCHLIN_RHO }, () => randomScalar(rng));
    const R = k.map((ki) => pointHex(prims.mulBase(ki)));
    const D = commitmentsDigest(prims, tag, context, prover, X, R);
    const c: number[] = [];
    const z: string[] = [];
    for (let i = 0; i < FISCHLIN_RHO; i++) {
      const zero = repetition(prims, tag, D, i);
      // z runs through k_i + c·x for c = 0, 1, 2, ... by one addition per challenge.
      let zc = k[i]!;
      let found = -1;
      for (let ch = 0; ch < 2 ** FISCHLIN_T; ch++, zc = Fn.add(zc, x)) {
        if (zero(ch, zc)) {
          found = ch;
          break;
        }
      }
      if (found < 0) break;
      c.push(found);
      z.push(scalarHex(zc));
    }
    if (c.length === FISCHLIN_RHO) return { R, c, z };
  }
}

/** Verifies a proof for X; false on any malformed part, failed hash condition or failed equation. */
export function verifyDlogFischlin(tag: string, context: string, prover: number, X: Point, proof: unknown, prims: Primitives = noblePrimitives): boolean {
  const p = proof as FischlinProof;
  if (typeof p !== 'object' || p === null || !Array.isArray(p.R) || !Array.isArray(p.c) || !Array.isArray(p.z)) return false;
  if (p.R.length !== FISCHLIN_RHO || p.c.length !== FISCHLIN_RHO || p.z.length !== FISCHLIN_RHO) return false;
  let R: Point[];
  let z: bigint[];
  try {
    R = p.R.map((r, i) => parsePoint(r, `proof R ${i}`));
    z = p.z.map((v, i) => parseScalar(v, `proof z ${i}`, true));
  } catch (err) {
    if (err instanceof InputError) return false;
    throw err;
  }
  if (!p.c.every((c) => Number.isInteger(c) && c >= 0 && c < 2 ** FISCHLIN_T)) return false;
  const D = commitmentsDigest(prims, tag, context, prover, X, p.R);
  for (let i = 0; i < FISCHLIN_RHO; i++) if (!repetition(prims, tag, D, i)(p.c[i]!, z[i]!)) return false;
  for (let i = 0; i < FISCHLIN_RHO; i++) {
    // z_i·G = R_i + c_i·X; public values only, so variable-time arithmetic is fine (c_i has t bits).
    if (!G.multiplyUnsafe(z[i]!).equals(R[i]!.add(X.multiplyUnsafe(BigInt(p.c[i]!))))) return false;
  }
  return true;
}
