// Fischlin-transformed Schnorr proofs (fischlin.ts): a valid proof verifies and meets the b-bit hash
// condition in every one of the ρ repetitions; a tampered proof, another session, another prover,
// another statement and malformed proofs are each refused.
import t from 'tap';
import { G, randomScalar } from '../../../node/protocols/math/curve.ts';
import { FISCHLIN_RHO, FISCHLIN_T, proveDlogFischlin, verifyDlogFischlin, type FischlinProof } from '../../../node/protocols/ecdsa/fischlin.ts';
import { seededRng } from '../simulate.ts';
import { sid } from './harness.ts';

const rng = seededRng('fischlin tests');
const x = randomScalar(rng);
const X = G.multiply(x);
const ctx = sid('fischlin session');
const proof = proveDlogFischlin('test', ctx, 3, x, X, rng);

t.test('a valid proof verifies', async (t) => {
  t.equal(proof.R.length, FISCHLIN_RHO, 'ρ commitments');
  t.ok(proof.c.every((c) => c < 2 ** FISCHLIN_T), 'challenges in the t-bit space');
  t.ok(verifyDlogFischlin('test', ctx, 3, X, proof), 'verifies');
  t.ok(verifyDlogFischlin('test', ctx, 3, X, JSON.parse(JSON.stringify(proof)) as unknown), 'verifies after a JSON round trip');
});

t.test('a tampered proof is refused', async (t) => {
  const bump = (h: string) => h.slice(0, 63) + (h[63] === '0' ? '1' : '0');
  const z = [...proof.z];
  z[5] = bump(z[5]!);
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, z }), 'changed response');
  const c = [...proof.c];
  c[0] = (c[0]! + 1) % 2 ** FISCHLIN_T;
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, c }), 'changed challenge');
  const R = [...proof.R];
  R[2] = G.multiply(12345n).toHex(true);
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, R }), 'changed commitment');
  // A single Fiat-Shamir-style repetition with a valid equation is not enough: the hash condition binds all ρ.
  const swapped: FischlinProof = { R: [proof.R[1]!, proof.R[0]!, ...proof.R.slice(2)], c: [proof.c[1]!, proof.c[0]!, ...proof.c.slice(2)], z: [proof.z[1]!, proof.z[0]!, ...proof.z.slice(2)] };
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, swapped), 'reordered repetitions');
});

t.test('another session, prover, statement or domain is refused', async (t) => {
  t.notOk(verifyDlogFischlin('test', sid('another session'), 3, X, proof), 'wrong session');
  t.notOk(verifyDlogFischlin('test', ctx, 4, X, proof), 'wrong party');
  t.notOk(verifyDlogFischlin('test', ctx, 3, G.multiply(7n), proof), 'wrong statement');
  t.notOk(verifyDlogFischlin('other', ctx, 3, X, proof), 'wrong domain tag');
});

t.test('malformed proofs are refused, not thrown on', async (t) => {
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, null), 'null');
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, R: proof.R.slice(1) }), 'too few repetitions');
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, z: proof.z.map(() => 'ff'.repeat(32)) }), 'out-of-range responses');
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, R: proof.R.map(() => '02' + '00'.repeat(32)) }), 'points off the curve');
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, c: proof.c.map(() => 2 ** FISCHLIN_T) }), 'challenge outside the t-bit space');
  t.notOk(verifyDlogFischlin('test', ctx, 3, X, { ...proof, c: proof.c.map(() => 0.5) }), 'non-integer challenge');
});
