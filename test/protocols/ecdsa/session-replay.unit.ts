// A repeated presigning session id (a node restored from a backup forgets it ran one) must not let the
// peer learn the key share. The attack: a malicious Bob runs the extension twice under one session id
// with the same nonce and complemented choice bits, so that the honest Alice's rows are q_k then q_k ⊕ Δ.
// If her pads depended only on those rows and the session, her two pads would swap between the runs and
// τ¹ + τ² = α¹ + α², whose second entry is 2·sk_i, with every check passing. Alice's fresh salt (rvole.ts)
// keeps the pads of the two runs unrelated.
import t from 'tap';
import { Fn, ORDER, mulBase, parsePoint } from '../../../node/protocols/math/curve.ts';
import { deliver, startRun, type Message, type Rng } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { R1_KIND, R2_KIND, ecdsaPresign, pairContext, presignContext, type PresignParams } from '../../../node/protocols/ecdsa/presign.ts';
import { splitKeys } from '../../../node/protocols/ot/base-ot.ts';
import { XI, kosReceive } from '../../../node/protocols/ot/kos.ts';
import { seededRng } from '../simulate.ts';
import { committee, sid } from './harness.ts';

const c = committee(2, 2, 'session-replay');
const alice = 1;
const bob = 2;
const params: PresignParams = { sessionId: sid('replayed session'), signers: [alice, bob], me: alice, key: c.keys.get(alice)!, path: [], ot: c.ots.get(alice)! };
const ctx = presignContext(params, c.keys.get(alice)!.pkg.groupKey);
const pair = pairContext(ctx, alice, bob, c.ots.get(alice)!.peers[String(bob)]!.setupId);

/** Bob's extension randomness: his fixed nonce first, then the choice bits `bits` gives for the length asked. */
function bobRng(nonce: Uint8Array, bits: (n: number) => Uint8Array): Rng {
  let calls = 0;
  return (n) => (calls++ === 0 ? nonce.slice(0, n) : bits(n));
}

/** One run of the honest Alice against Bob's crafted round-1 message: her round-2 message to Bob. */
function aliceRun(run: number, bobOt: ReturnType<typeof kosReceive>['msg']): { tau: Uint8Array; pk: string } {
  // Alice's randomness is fresh in every run (a restored node still has a working CSPRNG).
  const rng = seededRng(`alice run ${run}`);
  const started = startRun(ecdsaPresign, params, rng);
  const r1: Message = { from: bob, to: alice, round: 1, payload: encodeBlob(R1_KIND, { commitR: 'ab'.repeat(32), ot: bobOt }) };
  const step = deliver(ecdsaPresign, started.run, r1, rng);
  const out = step.out.find((m) => m.to === bob && m.round === 2);
  if (!out) throw new Error(`run ${run}: Alice sent no round-2 message (the extension check refused Bob)`);
  const r2 = decodeBlob<{ pk: string; mult: { tau: Uint8Array } }>(R2_KIND, out.payload);
  return { tau: r2.mult.tau, pk: r2.pk };
}

const entry = (tau: Uint8Array, i: number): bigint => BigInt('0x' + Buffer.from(tau.subarray(32 * i, 32 * i + 32)).toString('hex'));

t.test('a replayed session with a reused nonce and complemented choice bits does not reveal sk_i', async (t) => {
  const peer = c.ots.get(bob)!.peers[String(alice)]!;
  const k0 = splitKeys(peer.k0);
  const k1 = splitKeys(peer.k1);
  const nonce = seededRng('bob nonce')(32);
  let first: Uint8Array | undefined;
  const ext1 = kosReceive(pair, k0, k1, bobRng(nonce, (n) => (first = seededRng('bob bits')(n))));
  const ext2 = kosReceive(pair, k0, k1, bobRng(nonce, () => first!.map((b) => b ^ 0xff)));
  t.equal(ext1.msg.nonce, ext2.msg.nonce, 'Bob reuses his nonce');
  t.ok(ext1.r.every((b, i) => (b ^ ext2.r[i]!) === 0xff), 'with every choice bit complemented');

  const run1 = aliceRun(1, ext1.msg);
  const run2 = aliceRun(2, ext2.msg);
  t.pass('both runs pass Alice\'s extension check: Bob\'s messages are well formed');
  t.equal(run1.pk, run2.pk, 'the same sk_i in both runs (pk_i = sk_i·G is sent in round 2)');

  // Bob's reconstruction, row by row: sk_i = (τ¹_k,1 + τ²_k,1) / 2 (entry 1 of a row carries sk_i).
  const pk = parsePoint(run1.pk, 'pk');
  const half = Fn.inv(2n);
  let recovered = 0;
  for (let k = 0; k < XI; k++) {
    const guess = Fn.mul(Fn.add(entry(run1.tau, 4 * k + 1), entry(run2.tau, 4 * k + 1)), half);
    if (guess !== 0n && guess < ORDER && mulBase(guess).equals(pk)) recovered++;
  }
  t.equal(recovered, 0, `no row of τ¹ + τ² gives sk_i (${recovered} of ${XI} rows did)`);
});
