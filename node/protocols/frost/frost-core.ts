// FROST signing arithmetic (RFC 9591 §4.1–4.6, §5.1–5.4) for the two ciphersuites the node signs with:
// FROST(secp256k1, SHA-256) ("FROST-secp256k1-SHA256-v1", RFC 9591 §6.5) and its BIP-340 variant as the
// ZF frost-secp256k1-tr crate and noble's `schnorr_FROST` define it ("FROST-secp256k1-SHA256-TR-v1":
// the group key and the group commitment taken with even y, the BIP-340 challenge, x-only R in the
// 64-byte signature).
//
// Why our own and not noble's `createFROST`: noble computes the group commitment twice per signer (in
// `signShare` and again in `aggregate`), recomputes the signer's own commitments from its nonces, and
// does every product in JavaScript. Here the group commitment is computed once per signing and kept for
// the aggregation, and the products go through the injected `Primitives` (libsecp256k1 in the node):
// the nonce commitments d·G and e·G by secret scalars, the binding products ρ_i·E_i by public ones, and
// the final BIP-340 verification. Nothing hashed or sent changes: the bytes are RFC 9591's, which the
// RFC and ZF vectors pin, and noble's implementation is the independent reference the tests compare
// every output with (test/protocols/frost/frost-core.unit.ts).
import { schnorr, secp256k1_FROST, secp256k1_hasher } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { bytesToNumberBE } from '@noble/curves/utils.js';
import { Fn, G, Point, lagrangeAtZero } from '../math/curve.ts';
import type { Primitives } from '../math/primitives.ts';

/** `secp256k1`: RFC 9591 FROST(secp256k1, SHA-256). `tr`: its BIP-340 (Taproot) variant. */
export type Ciphersuite = 'secp256k1' | 'tr';

const NAMES: Record<Ciphersuite, string> = { secp256k1: 'FROST-secp256k1-SHA256-v1', tr: 'FROST-secp256k1-SHA256-TR-v1' };
const dst = (cs: Ciphersuite, h: string) => utf8ToBytes(NAMES[cs] + h);
const DST = {
  secp256k1: { rho: dst('secp256k1', 'rho'), chal: dst('secp256k1', 'chal'), nonce: dst('secp256k1', 'nonce'), msg: dst('secp256k1', 'msg'), com: dst('secp256k1', 'com') },
  tr: { rho: dst('tr', 'rho'), chal: dst('tr', 'chal'), nonce: dst('tr', 'nonce'), msg: dst('tr', 'msg'), com: dst('tr', 'com') },
};

// RFC 9591 §6.5: H1, H2, H3 are hash_to_field (expand_message_xmd, SHA-256) with the suite's DST; H4 and
// H5 are SHA-256 of the prefixed input.
const H1 = (cs: Ciphersuite, m: Uint8Array) => secp256k1_hasher.hashToScalar(m, { DST: DST[cs].rho });
const H2 = (cs: Ciphersuite, m: Uint8Array) => secp256k1_hasher.hashToScalar(m, { DST: DST[cs].chal });
const H3 = (cs: Ciphersuite, m: Uint8Array) => secp256k1_hasher.hashToScalar(m, { DST: DST[cs].nonce });
const H4 = (cs: Ciphersuite, m: Uint8Array) => sha256(concatBytes(DST[cs].msg, m));
const H5 = (cs: Ciphersuite, m: Uint8Array) => sha256(concatBytes(DST[cs].com, m));

const odd = (p: Point) => p.toBytes(true)[0] === 0x03;
const xOnly = (p: Point) => p.toBytes(true).subarray(1);

/**
 * RFC 9591 §4.1 nonce_generate: H3(32 random bytes ‖ SerializeScalar(secret)). The secret is the signing
 * share as held (for Taproot: derived and tweaked, before any even-y negation). A zero nonce, which
 * would commit to the identity, is refused (probability 2^-256).
 */
export function nonceGenerate(cs: Ciphersuite, random: Uint8Array, secret: bigint): bigint {
  if (random.length !== 32) throw new RangeError('nonce_generate takes 32 random bytes');
  const k = H3(cs, concatBytes(random, Fn.toBytes(secret)));
  if (k === 0n) throw new RangeError('nonce_generate gave zero');
  return k;
}

/** One signer's entry of the commitment list: its identifier and its (D, E). */
export interface CommitmentEntry {
  id: bigint;
  hiding: Point;
  binding: Point;
}

/** What the signature shares and the aggregation of one signing share, computed once (§4.4–4.6). */
export interface SigningContext {
  cs: Ciphersuite;
  msg: Uint8Array;
  /** The group key the suite signs under: for `tr` with even y. */
  Y: Point;
  /** `tr`: the key given had odd y, so it and every share are negated. */
  flipKey: boolean;
  /** The group commitment R as computed (its y as it falls). */
  R: Point;
  /** `tr`: R has odd y, so every nonce is negated. */
  flipNonces: boolean;
  /** Sorted identifiers of the signers. */
  ids: bigint[];
  /** Binding factor ρ_i by identifier. */
  rho: Map<bigint, bigint>;
  /** The challenge c. */
  c: bigint;
}

/** The binding factors of §4.4 over the sorted commitment list. */
function bindingFactors(cs: Ciphersuite, Y: Point, list: CommitmentEntry[], msg: Uint8Array): Map<bigint, bigint> {
  const encoded = concatBytes(...list.flatMap((e) => [Fn.toBytes(e.id), e.hiding.toBytes(true), e.binding.toBytes(true)]));
  const prefix = concatBytes(Y.toBytes(true), H4(cs, msg), H5(cs, encoded));
  return new Map(list.map((e) => [e.id, H1(cs, concatBytes(prefix, Fn.toBytes(e.id)))]));
}

function challenge(cs: Ciphersuite, R: Point, Y: Point, msg: Uint8Array): bigint {
  if (cs === 'tr') return Fn.create(bytesToNumberBE(schnorr.utils.taggedHash('BIP0340/challenge', xOnly(R), xOnly(Y), msg)));
  return H2(cs, concatBytes(R.toBytes(true), Y.toBytes(true), msg));
}

/**
 * §4.4–4.6 for one signing: binding factors, group commitment R = Σ D_i + ρ_i·E_i (products by the
 * public ρ_i through `prims`), challenge. `knownR` skips the products when R was computed for this very
 * list and message earlier in the run (the aggregation reuses round 2's). Duplicate identifiers are refused.
 */
export function signingContext(prims: Primitives, cs: Ciphersuite, groupKey: Point, commitments: CommitmentEntry[], msg: Uint8Array, knownR?: Point): SigningContext {
  const list = [...commitments].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = list.map((e) => e.id);
  if (new Set(ids).size !== ids.length) throw new RangeError('a signer appears twice in the commitment list');
  const flipKey = cs === 'tr' && odd(groupKey);
  const Y = flipKey ? groupKey.negate() : groupKey;
  const rho = bindingFactors(cs, Y, list, msg);
  let R = knownR;
  if (!R) {
    R = Point.ZERO;
    for (const e of list) R = R.add(e.hiding).add(prims.mulPublic(e.binding, rho.get(e.id)!));
  }
  if (R.is0()) throw new RangeError('the group commitment is the identity');
  return { cs, msg, Y, flipKey, R, flipNonces: cs === 'tr' && odd(R), ids, rho, c: challenge(cs, R, Y, msg) };
}

/**
 * §5.2: z_i = d_i + e_i·ρ_i + λ_i·s_i·c, with `tr`'s negations of the share (odd key) and the nonces
 * (odd R). The caller zeroes its copies of the secrets.
 */
export function signatureShare(s: SigningContext, id: bigint, share: bigint, hiding: bigint, binding: bigint): bigint {
  const rho = s.rho.get(id);
  if (rho === undefined) throw new RangeError('the signer is not in the commitment list');
  const sk = s.flipKey ? Fn.neg(share) : share;
  const d = s.flipNonces ? Fn.neg(hiding) : hiding;
  const e = s.flipNonces ? Fn.neg(binding) : binding;
  const lambda = lagrangeAtZero(s.ids, id);
  return Fn.add(Fn.add(d, Fn.mul(e, rho)), Fn.mul(Fn.mul(lambda, sk), s.c));
}

/**
 * §5.4: whether z_i·G = R_i + (c·λ_i)·Y_i, with R_i = D_i + ρ_i·E_i (negated for `tr` when R is odd)
 * and Y_i the signer's verification share (negated for `tr` when the key is). Public values only.
 */
export function shareVerifies(s: SigningContext, e: CommitmentEntry, verificationShare: Point, z: bigint): boolean {
  const rho = s.rho.get(e.id);
  if (rho === undefined) return false;
  let Ri = e.hiding.add(e.binding.multiplyUnsafe(rho));
  if (s.flipNonces) Ri = Ri.negate();
  const Yi = s.flipKey ? verificationShare.negate() : verificationShare;
  const lhs = z === 0n ? Point.ZERO : G.multiplyUnsafe(z);
  return lhs.equals(Ri.add(Yi.multiplyUnsafe(Fn.mul(s.c, lagrangeAtZero(s.ids, e.id)))));
}

/** §5.3 aggregation: z = Σ z_i; the signature is SerializeElement(R) ‖ z, or x(R) ‖ z for `tr`. */
export function aggregate(s: SigningContext, shares: bigint[]): Uint8Array {
  let z = 0n;
  for (const zi of shares) z = Fn.add(z, zi);
  return concatBytes(s.cs === 'tr' ? xOnly(s.R) : s.R.toBytes(true), Fn.toBytes(z));
}

/**
 * Whether the signature verifies under the group key, by a verifier independent of this module: BIP-340
 * (`prims.verifySchnorr`: libsecp256k1 in the node, noble's `schnorr.verify` in the reference) for
 * `tr`, noble's RFC 9591 verification for `secp256k1`.
 */
export function signatureVerifies(prims: Primitives, cs: Ciphersuite, sig: Uint8Array, msg: Uint8Array, groupKey: Point): boolean {
  if (cs === 'tr') return prims.verifySchnorr(sig, msg, xOnly(groupKey));
  return secp256k1_FROST.verify(sig, msg, groupKey.toBytes(true));
}
