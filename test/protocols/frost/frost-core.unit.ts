// frost-core.ts against noble's FROST, an independent implementation of the same ciphersuites: on random
// dealer keys (odd and even group keys), random signer subsets, random nonces and messages, both
// suites and both primitive providers give noble's nonces, signature shares and signatures byte for
// byte; a wrong share fails verification where noble's does; and what the core refuses.
import t from 'tap';
import { schnorr_FROST, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { aggregate, nonceGenerate, shareVerifies, signatureShare, signatureVerifies, signingContext, type Ciphersuite, type CommitmentEntry } from '../../../node/protocols/frost/frost-core.ts';
import { Fn, Point } from '../../../node/protocols/math/curve.ts';
import { noblePrimitives, type Primitives } from '../../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { seededRng } from '../simulate.ts';

const providers: Primitives[] = [noblePrimitives, nativePrimitives];
const nobleOf = (cs: Ciphersuite) => (cs === 'tr' ? schnorr_FROST : secp256k1_FROST);
const odd = (hex: string | Uint8Array) => (typeof hex === 'string' ? hexToBytes(hex) : hex)[0] === 0x03;

interface Trial { cs: Ciphersuite; n: number; min: number; signers: number[]; msg: Uint8Array; seed: string }

/** Runs one signing through noble and through the core on `prims`; returns what each produced. */
function run(prims: Primitives, { cs, n, min, signers, msg, seed }: Trial) {
  const F = nobleOf(cs);
  const rng = seededRng(seed);
  const ids = Array.from({ length: n }, (_, i) => F.Identifier.fromNumber(i + 1));
  const deal = F.trustedDealer({ min, max: n }, ids, undefined, (k?: number) => rng(k ?? 32) as Uint8Array<ArrayBuffer>);
  const randoms = new Map(signers.map((p) => [p, [rng(32), rng(32)]]));
  const commits = signers.map((p) => {
    const [h, b] = randoms.get(p)!;
    const queue = [h!, b!];
    return F.commit(deal.secretShares[ids[p - 1]!]!, () => queue.shift()! as Uint8Array<ArrayBuffer>);
  });
  const nonceCopies = commits.map((c) => ({ hiding: Fn.fromBytes(c.nonces.hiding), binding: Fn.fromBytes(c.nonces.binding) }));
  const list = commits.map((c) => c.commitments);
  const nobleShares = signers.map((p, i) => F.signShare(deal.secretShares[ids[p - 1]!]!, deal.public, commits[i]!.nonces, list, msg));
  const nobleSig = F.aggregate(deal.public, list, msg, Object.fromEntries(signers.map((p, i) => [ids[p - 1]!, nobleShares[i]!])));

  const Y = Point.fromBytes(deal.public.commitments[0]!);
  const entries: CommitmentEntry[] = signers.map((p, i) => ({ id: BigInt(p), hiding: Point.fromBytes(list[i]!.hiding), binding: Point.fromBytes(list[i]!.binding) }));
  // The list in another order: the core sorts it, as the RFC does.
  const ctx = signingContext(prims, cs, Y, [...entries].reverse(), msg);
  const shares = signers.map((p, i) => signatureShare(ctx, BigInt(p), Fn.fromBytes(deal.secretShares[ids[p - 1]!]!.signingShare), nonceCopies[i]!.hiding, nonceCopies[i]!.binding));
  const sig = aggregate(ctx, shares);
  const nonces = signers.map((p) => {
    const [h, b] = randoms.get(p)!;
    const s = Fn.fromBytes(deal.secretShares[ids[p - 1]!]!.signingShare);
    return [nonceGenerate(cs, h!, s), nonceGenerate(cs, b!, s)];
  });
  return { F, deal, ids, ctx, entries, list, Y, nobleShares, nobleSig, shares, sig, nonces, nonceCopies };
}

for (const cs of ['secp256k1', 'tr'] as const) {
  for (const prims of providers) {
    t.test(`${cs} [${prims.name}]: nonces, shares and signatures are noble's, for odd and even keys`, async (t) => {
      const parities = new Set<boolean>();
      let trials = 0;
      for (let i = 0; trials < 6 || parities.size < 2; i++) {
        if (i > 64) throw new Error('no key of each parity in 64 draws');
        const [n, min] = i % 2 ? [5, 3] : [3, 2];
        const all = Array.from({ length: n }, (_, k) => k + 1);
        const signers = i % 3 === 0 ? all : all.filter((p) => p !== 1 + (i % n)).slice(0, min + (i % 2));
        const msgLength = cs === 'tr' && i % 4 === 3 ? 17 : 32;
        const msg = seededRng(`msg ${cs} ${i}`)(msgLength);
        const r = run(prims, { cs, n, min, signers, msg, seed: `${cs} ${prims.name} ${i}` });
        parities.add(odd(r.deal.public.commitments[0]!));
        trials++;
        t.same(r.nonces.flat(), r.nonceCopies.flatMap((x) => [x.hiding, x.binding]), `trial ${i}: nonce_generate gives noble's nonces`);
        t.same(r.shares.map((z) => bytesToHex(Fn.toBytes(z))), r.nobleShares.map(bytesToHex), `trial ${i}: every signature share is noble's`);
        t.equal(bytesToHex(r.sig), bytesToHex(r.nobleSig), `trial ${i}: the signature is noble's`);
        t.ok(signatureVerifies(prims, cs, r.sig, msg, r.Y), `trial ${i}: and verifies`);
        const forged = r.sig.slice();
        forged[forged.length - 1]! ^= 1;
        t.notOk(signatureVerifies(prims, cs, forged, msg, r.Y), `trial ${i}: a changed signature does not`);
        for (const [k, e] of r.entries.entries()) {
          const Yi = Point.fromBytes(r.deal.public.verifyingShares[r.ids[Number(e.id) - 1]!]!);
          t.ok(shareVerifies(r.ctx, e, Yi, r.shares[k]!), `trial ${i}: share of ${e.id} verifies`);
          const wrong = Fn.add(r.shares[k]!, 1n);
          t.notOk(shareVerifies(r.ctx, e, Yi, wrong), `trial ${i}: a share off by one does not`);
          t.notOk(r.F.verifyShare(r.deal.public, r.list, msg, r.ids[Number(e.id) - 1]!, Fn.toBytes(wrong)), `trial ${i}: nor does noble's verification take it`);
        }
        // The aggregation reuses the group commitment: given it, the context is the same.
        const again = signingContext(prims, cs, r.Y, r.entries, msg, r.ctx.R);
        t.equal(again.c, r.ctx.c, `trial ${i}: the context from a known R has the same challenge`);
      }
      t.same([...parities].sort(), [false, true], 'keys of both parities were signed for');
    });
  }
}

t.test('the core refuses a duplicated signer, a signer outside the list and a bad nonce input', async (t) => {
  const r = run(noblePrimitives, { cs: 'tr', n: 3, min: 2, signers: [1, 2], msg: new Uint8Array(32), seed: 'refusals' });
  t.throws(() => signingContext(noblePrimitives, 'tr', r.Y, [...r.entries, r.entries[0]!], new Uint8Array(32)), /twice/);
  t.throws(() => signatureShare(r.ctx, 3n, 5n, 7n, 11n), /not in the commitment list/);
  t.throws(() => nonceGenerate('tr', new Uint8Array(31), 5n), /32 random bytes/);
  t.notOk(shareVerifies(r.ctx, { ...r.entries[0]!, id: 3n }, r.Y, r.shares[0]!), 'a share for an identifier outside the list does not verify');
});

t.test('verifySchnorr: malformed signatures and keys are false on both providers', async (t) => {
  const r = run(nativePrimitives, { cs: 'tr', n: 3, min: 2, signers: [2, 3], msg: new Uint8Array(32).fill(7), seed: 'malformed' });
  const key = r.Y.toBytes(true).subarray(1);
  for (const prims of providers) {
    t.ok(prims.verifySchnorr(r.sig, new Uint8Array(32).fill(7), key), `${prims.name}: the signature verifies`);
    t.notOk(prims.verifySchnorr(r.sig.subarray(0, 63), new Uint8Array(32).fill(7), key), `${prims.name}: 63 bytes`);
    t.notOk(prims.verifySchnorr(r.sig, new Uint8Array(32).fill(7), new Uint8Array(32).fill(0xff)), `${prims.name}: a key off the curve`);
    const highS = r.sig.slice();
    highS.set(Fn.toBytes(Fn.ORDER - 1n).map((b, i) => (i === 31 ? b + 1 : b)), 32);
    t.notOk(prims.verifySchnorr(highS, new Uint8Array(32).fill(7), key), `${prims.name}: s = n`);
  }
});
