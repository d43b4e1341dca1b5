// Malicious parties, replays and single use: a tampered OT message, a wrong consistency-check value, a
// wrong multiplication share, a bad proof and a message replayed from another session each abort,
// name the sender and release no signature; a presignature and OT material are never used twice.
import t, { type Test } from 'tap';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { G, pointHex } from '../../../node/protocols/math/curve.ts';
import { ProtocolAbort, ProtocolBug, InputError } from '../../../core/errors/protocol-errors.ts';
import { R1_KIND as R1_PRESIGN, ecdsaPresign, type PresignParams } from '../../../node/protocols/ecdsa/presign.ts';
import { R3_KIND as R3_SETUP, retireOtPairs } from '../../../node/protocols/ecdsa/ot-setup.ts';
import { startRun, deliver } from '../../../node/protocols/round/machine.ts';
import { seededRng, type Tamper } from '../simulate.ts';
import { committee, online, otSetup, presign, sid } from './harness.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { ONLINE_R1_KIND } from '../../../node/protocols/ecdsa/online.ts';

const c = committee(3, 2, 'adversarial');
const digest = sid('adversarial message');
// The tampered OT setups run on the native primitives, as the nodes run them (the noble reference makes
// the same bytes from the same seed: test/protocols/primitives.unit.ts).
const native = { prims: nativePrimitives };

type Obj = Record<string, unknown>;
/** A tamper rule for party `from`: rewrites the payload of its messages of `round` (kind `kind`). */
function rewrite(round: number, kind: string, f: (v: Obj) => void, to?: number): Tamper {
  return (m: Message) => {
    if (m.round !== round || (to !== undefined && m.to !== to)) return [m];
    const v = decodeBlob<Obj>(kind, m.payload);
    f(v);
    return [{ ...m, payload: encodeBlob(kind, v) }];
  };
}

const flipHex = (h: string, at = 10) => h.slice(0, at) + (h[at] === '0' ? '1' : '0') + h.slice(at + 1);
const flipByte = (b: Uint8Array, at: number) => {
  const c = b.slice();
  c[at]! ^= 1;
  return c;
};

function expectAbort(t: Test, res: { aborts: Map<number, ProtocolAbort>; results: Map<number, unknown> }, victim: number, code: string, culprit: number) {
  const a = res.aborts.get(victim);
  t.ok(a instanceof ProtocolAbort, `party ${victim} aborts`);
  t.equal(a?.code, code, `code ${code}`);
  t.same(a?.culprits, [culprit], `names party ${culprit}`);
  t.notOk(res.results.has(victim), 'no output for the honest party');
}

t.test('a tampered OT-extension matrix aborts naming its sender', async (t) => {
  const res = presign(c, [1, 2], 'tamper-u', [], { tamper: new Map([[2, rewrite(1, R1_PRESIGN, (v) => { const ot = v.ot as Obj; ot.u = flipByte(ot.u as Uint8Array, 250); })]]) });
  expectAbort(t, res, 1, 'bad_ot_check', 2);
});

t.test('a wrong OT consistency-check value aborts naming its sender', async (t) => {
  const res = presign(c, [1, 3], 'tamper-check', [], { tamper: new Map([[3, rewrite(1, R1_PRESIGN, (v) => { const ot = v.ot as Obj; ot.check = flipByte(ot.check as Uint8Array, 1); })]]) });
  expectAbort(t, res, 1, 'bad_ot_check', 3);
});

t.test('a wrong multiplication share (Γ) aborts naming its sender', async (t) => {
  const res = presign(c, [1, 2], 'tamper-gamma', [], { tamper: new Map([[2, rewrite(2, 'ecdsa-presign/r2/v3', (v) => { v.gu = pointHex(G.multiply(12345n)); })]]) });
  expectAbort(t, res, 1, 'bad_multiplication', 2);
});

t.test('an inconsistent multiplication input (τ) fails the DKLs19 check, naming its sender', async (t) => {
  const res = presign(c, [2, 3], 'tamper-tau', [], { tamper: new Map([[3, rewrite(2, 'ecdsa-presign/r2/v3', (v) => { const m = v.mult as Obj; m.tau = flipByte(m.tau as Uint8Array, 32 * 40 + 2); })]]) });
  expectAbort(t, res, 2, 'bad_multiplication', 3);
});

t.test('a wrong opening of R aborts naming its sender', async (t) => {
  const res = presign(c, [1, 2], 'tamper-R', [], { tamper: new Map([[1, rewrite(2, 'ecdsa-presign/r2/v3', (v) => { v.R = pointHex(G.multiply(777n)); })]]) });
  expectAbort(t, res, 2, 'bad_commitment', 1);
});

t.test('a bad proof of knowledge in the OT setup aborts naming its sender', async (t) => {
  const res = otSetup(c.keys, 'bad-proof', { ...native, tamper: new Map([[1, rewrite(1, 'ecdsa-ot-setup/r1', (v) => { const p = v.proof as { z: string[] }; p.z[3] = flipHex(p.z[3]!, 20); }, 3)]]) });
  expectAbort(t, res, 3, 'bad_proof', 1);
});

t.test('a tampered base-OT point aborts naming its sender', async (t) => {
  const res = otSetup(c.keys, 'bad-base-ot', { ...native, tamper: new Map([[3, rewrite(2, 'ecdsa-ot-setup/r2', (v) => { v.B = flipHex(v.B as string, 140); }, 2)]]) });
  expectAbort(t, res, 2, 'bad_ot', 3);
});

t.test('a tampered bootstrapping extension in the OT setup aborts naming its sender', async (t) => {
  const res = otSetup(c.keys, 'bad-reverse-ot', { ...native, tamper: new Map([[1, rewrite(3, R3_SETUP, (v) => { const ot = v.ot as Obj; ot.u = flipByte(ot.u as Uint8Array, 450); }, 2)]]) });
  expectAbort(t, res, 2, 'bad_ot_check', 1);
});

t.test('a message replayed from another session aborts naming its sender', async (t) => {
  const old = presign(c, [1, 2], 'replay-source');
  const recorded = old.transcript.find((m) => m.from === 2 && m.to === 1 && m.round === 1)!;
  const res = presign(c, [1, 2], 'replay-target', [], { tamper: new Map([[2, (m: Message) => (m.round === 1 && m.to === 1 ? [{ ...m, payload: recorded.payload }] : [m])]]) });
  expectAbort(t, res, 1, 'bad_ot_check', 2);
  // Replaying the round-2 message instead breaks the commitment to R (it was bound to the other session).
  const rec2 = old.transcript.find((m) => m.from === 2 && m.to === 1 && m.round === 2)!;
  const res2 = presign(c, [1, 2], 'replay-target-2', [], { tamper: new Map([[2, (m: Message) => (m.round === 2 && m.to === 1 ? [{ ...m, payload: rec2.payload }] : [m])]]) });
  expectAbort(t, res2, 1, 'bad_commitment', 2);
});

t.test('a wrong online share aborts and releases no signature', async (t) => {
  const pre = presign(c, [1, 3], 'bad-online');
  const res = online(pre.results, digest, { tamper: new Map([[3, rewrite(1, ONLINE_R1_KIND, (v) => { v.w = '00'.repeat(31) + '05'; })]]) });
  t.equal(res.aborts.get(1)?.code, 'bad_signature_share', 'the honest signer refuses the signature');
  t.same(res.aborts.get(1)?.culprits, [3], 'and names the signer whose share is wrong');
  t.notOk(res.results.has(1), 'no signature is released to the honest signer');
});

t.test('a presignature is used once', async (t) => {
  const pre = presign(c, [2, 3], 'single-use');
  const first = online(pre.results, digest);
  t.equal(first.results.size, 2, 'first use signs');
  t.throws(() => online(pre.results, sid('another message')), ProtocolBug, 'second use is refused');
  t.throws(() => pre.results.get(2)!.encode(), ProtocolBug, 'a used presignature cannot be stored again');
  t.equal(String(pre.results.get(2)), '<redacted>', 'prints redacted');
  t.equal(JSON.stringify({ p: pre.results.get(3) }), '{"p":"<redacted>"}', 'serializes redacted');
});

t.test('OT-extension state is used once per run, and OT material is refused after an abort', async (t) => {
  // Drive party 1 by hand to the end of round 1: its extension keys as Alice are gone from the state.
  const params = (me: number): PresignParams => ({ sessionId: sid('ot-once'), signers: [1, 2], me, key: c.keys.get(me)!, path: [], ot: c.ots.get(me)! });
  const rng1 = seededRng('ot-once/1');
  const p1 = startRun(ecdsaPresign, params(1), rng1);
  const p2 = startRun(ecdsaPresign, params(2), seededRng('ot-once/2'));
  const step = deliver(ecdsaPresign, p1.run, p2.out[0]!, rng1);
  t.same(step.run.state.alice, {}, 'extension sender material dropped after use');
  t.throws(() => ecdsaPresign.finalize(step.run.state, 1, rng1), ProtocolAbort, 'finalizing round 1 again is refused');
  // After an abort with party 2, the pair is retired: signing with it is refused until a new setup.
  const retired = retireOtPairs(c.ots.get(1)!, [2]);
  t.throws(() => startRun(ecdsaPresign, { ...params(1), ot: retired }, rng1), InputError, 'retired OT material is refused');
  t.doesNotThrow(() => startRun(ecdsaPresign, { ...params(1), signers: [1, 3], ot: retired }, rng1), 'other pairs still sign');
});
