// Key material for signing tests: a key package built from a dealer polynomial (as the RFC vectors
// give it), or from a seeded DKG.
import { G, Fn, pointHex, polyEval, secretScalar } from '../../../node/protocols/math/curve.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { dkg, type DkgParams } from '../../../node/protocols/dkg/dkg.ts';
import { simulate } from '../simulate.ts';
import { bytesToHex } from '@noble/hashes/utils.js';
import { keyShareParam, type KeyShareParam } from '../../../node/protocols/keys/key-package.ts';

/** A key as the signing protocols take it: the share a SecretBytes (its hex: bytesToHex(share.expose())). */
export type StoredKey = KeyShareParam;

export function dealerKeys(coeffsHex: string[], n: number, chainCode = '00'.repeat(32)): Map<number, StoredKey> {
  const coeffs = coeffsHex.map((c) => Fn.create(BigInt('0x' + c)));
  const parties = Array.from({ length: n }, (_, i) => i + 1);
  const verificationShares: Record<string, string> = {};
  for (const p of parties) verificationShares[String(p)] = pointHex(G.multiply(polyEval(coeffs, BigInt(p))));
  const groupCommitment = coeffs.map((c) => pointHex(G.multiply(c)));
  const pkg: KeyPackage = { keyId: 'dealer', epoch: 0, threshold: coeffs.length, parties, groupKey: groupCommitment[0]!, verificationShares, groupCommitment, chainCode };
  return new Map(parties.map((p) => [p, { id: p, share: secretScalar(polyEval(coeffs, BigInt(p))), pkg }]));
}

export function dkgKeys(n: number, t: number, seed = 'keys'): Map<number, StoredKey> {
  const parties = Array.from({ length: n }, (_, i) => i + 1);
  const sessionId = bytesToHex(new TextEncoder().encode(seed.padEnd(32, '-')).slice(0, 32));
  const params = new Map<number, DkgParams>(parties.map((me) => [me, { sessionId, keyId: 'k-' + seed, epoch: 0, threshold: t, parties, me }]));
  const { results } = simulate(dkg, params, { seed });
  return new Map([...results].map(([id, k]) => [id, keyShareParam(k)]));
}

/** Every subset of `items` with at least `k` elements. */
export function subsets<T>(items: T[], k: number): T[][] {
  const out: T[][] = [];
  for (let mask = 1; mask < 1 << items.length; mask++) {
    const s = items.filter((_, i) => mask & (1 << i));
    if (s.length >= k) out.push(s);
  }
  return out;
}
