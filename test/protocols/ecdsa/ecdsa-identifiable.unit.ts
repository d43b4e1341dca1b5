// Identifiable abort in signing: a signer that sends different R_i (with a consistent multiplication
// toward each peer) is caught by the round-3 echo; one that sends different presigning images to
// different peers is caught by the online echo (an echo disagreement names the reporter and the subject,
// round/echo.ts, so every honest signer names the equivocator and one other); one that sends a wrong
// online share is named by the per-share check against its images. In every case no signature is released.
import t, { type Test } from 'tap';
import { deliver, startRun, type Message, type Run } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { G, ORDER, exposeScalar, pointHex, scalarHex } from '../../../node/protocols/math/curve.ts';
import type { SecretBytes } from '../../../core/codec/secret.ts';
import { ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import { ecdsaPresign, presignContext, r3Digest, type PresignParams, type PresignState } from '../../../node/protocols/ecdsa/presign.ts';
import type { Presignature } from '../../../node/protocols/ecdsa/presignature.ts';
import { seededRng, type Tamper } from '../simulate.ts';
import { ONLINE_SID, committee, online, presign, sid, type Committee } from './harness.ts';
import { ONLINE_R1_KIND, rerandomizer } from '../../../node/protocols/ecdsa/online.ts';
import { Fn } from '../../../node/protocols/math/curve.ts';
import { noblePrimitives } from '../../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';

const c = committee(3, 2, 'identifiable');
const digest = sid('identifiable message');
const signers = [1, 2, 3];

type Obj = Record<string, unknown>;
function rewrite(round: number, kind: string, f: (v: Obj) => void): Tamper {
  return (m: Message) => {
    if (m.round !== round) return [m];
    const v = decodeBlob<Obj>(kind, m.payload);
    f(v);
    return [{ ...m, payload: encodeBlob(kind, v) }];
  };
}

function expectNamed(t: Test, res: { aborts: Map<number, ProtocolAbort>; results: Map<number, unknown> }, honest: number[], code: string, culprit: number) {
  for (const h of honest) {
    const a = res.aborts.get(h);
    t.ok(a instanceof ProtocolAbort, `party ${h} aborts`);
    t.equal(a?.code, code, `party ${h}: code ${code}`);
    t.same(a?.culprits, [culprit], `party ${h} names party ${culprit}`);
    t.notOk(res.results.has(h), `party ${h} releases nothing`);
  }
}

/** An echo disagreement: each honest party names the equivocator together with the reporter it heard first. */
function expectEchoBlame(t: Test, res: { aborts: Map<number, ProtocolAbort>; results: Map<number, unknown> }, named: Record<number, number[]>, equivocator: number) {
  for (const [h, culprits] of Object.entries(named)) {
    const a = res.aborts.get(Number(h));
    t.ok(a instanceof ProtocolAbort, `party ${h} aborts`);
    t.equal(a?.code, 'equivocation', `party ${h}: code equivocation`);
    t.same(a?.culprits, culprits, `party ${h} names parties ${culprits.join(', ')}`);
    t.ok(a?.culprits.includes(equivocator), `party ${h}'s culprits include the equivocator`);
    t.notOk(res.results.has(Number(h)), `party ${h} releases nothing`);
  }
  const common = Object.values(named).reduce((acc, c) => acc.filter((x) => c.includes(x)));
  t.same(common, [equivocator], 'the honest parties\' reports intersect in the equivocator');
}

/**
 * Presigning where `evil` runs one honest instance per peer, each with its own instance key r: toward
 * each peer on its own it is a consistent signer (commitment, opening and multiplication all match),
 * but the peers see different R_evil. Every instance hears everyone; each speaks only to its peer.
 */
function presignEquivocating(c: Committee, evil: number, label: string) {
  const params = (me: number): PresignParams => ({ sessionId: sid(label), signers, me, key: c.keys.get(me)!, path: [], ot: c.ots.get(me)! });
  interface Inst { key: string; id: number; faces?: number; rng: (n: number) => Uint8Array; run: Run<PresignState> }
  const insts: Inst[] = [];
  const queue: { from: Inst; msg: Message }[] = [];
  const add = (key: string, id: number, faces?: number) => {
    const rng = seededRng(`${label}/${key}`);
    const { run, out } = startRun(ecdsaPresign, params(id), rng);
    const inst: Inst = { key, id, rng, run, ...(faces ? { faces } : {}) };
    insts.push(inst);
    for (const msg of out) queue.push({ from: inst, msg });
  };
  for (const p of signers) {
    if (p !== evil) add(String(p), p);
    else for (const q of signers) if (q !== evil) add(`${p}@${q}`, p, q);
  }
  const aborts = new Map<number, ProtocolAbort>();
  const results = new Map<number, Presignature>();
  const dead = new Set<string>();
  while (queue.length) {
    const { from, msg } = queue.shift()!;
    for (const to of insts) {
      if (to.id === from.id || dead.has(to.key)) continue;
      if (msg.to !== 'all' && msg.to !== to.id) continue;
      if (from.faces !== undefined && to.id !== from.faces) continue;
      try {
        const step = deliver(ecdsaPresign, to.run, msg, to.rng);
        to.run = step.run;
        for (const m of step.out) queue.push({ from: to, msg: m });
        if (step.kind === 'done') {
          dead.add(to.key);
          if (to.faces === undefined) results.set(to.id, step.result);
        }
      } catch (err) {
        if (!(err instanceof ProtocolAbort)) throw err;
        dead.add(to.key);
        if (to.faces === undefined) aborts.set(to.id, err);
      }
    }
  }
  return { aborts, results };
}

t.test('a signer that sends different R_i to different peers is caught, and nothing is released', async (t) => {
  const res = presignEquivocating(c, 3, 'equivocate-R');
  // Party 1 hears party 2 echo another R_3 than it received (and the reverse for party 2).
  expectEchoBlame(t, res, { 1: [2, 3], 2: [1, 3] }, 3);
});

t.test('a signer that sends different presigning images to different peers is caught in the online round', async (t) => {
  const split: Tamper = (m: Message) => {
    if (m.round !== 3 || m.to !== 2) return [m];
    const v = decodeBlob<Obj>('ecdsa-presign/r3/v3', m.payload);
    return [{ ...m, payload: encodeBlob('ecdsa-presign/r3/v3', { ...v, U: pointHex(G.multiply(4242n)) }) }];
  };
  const pre = presign(c, signers, 'equivocate-images', [], { tamper: new Map([[3, split]]) });
  t.equal(pre.results.size, 3, 'presigning cannot see it yet');
  const res = online(pre.results, digest);
  // Party 1 hears party 2 report other images of 3; party 2 hears 3 echo images of its own that differ
  // from what 3 sent it, which proves 3 dishonest alone.
  expectEchoBlame(t, res, { 1: [2, 3], 2: [3] }, 3);
});

for (const prims of [noblePrimitives, nativePrimitives]) {
  t.test(`a wrong online share is named by the check against its presigning images (${prims.name})`, async (t) => {
    const pre = presign(c, [1, 3], `wrong-w ${prims.name}`);
    const res = online(pre.results, digest, { prims, tamper: new Map([[3, rewrite(1, ONLINE_R1_KIND, (v) => { v.w = scalarHex(5n); })]]) });
    expectNamed(t, res, [1], 'bad_signature_share', 3);
    const pre2 = presign(c, signers, `wrong-u ${prims.name}`);
    const res2 = online(pre2.results, digest, { prims, tamper: new Map([[2, rewrite(1, ONLINE_R1_KIND, (v) => { v.u = scalarHex(7n); })]]) });
    expectNamed(t, res2, [1, 3], 'bad_signature_share', 2);
  });
}

for (const prims of [noblePrimitives, nativePrimitives]) {
  t.test(`a share that cancels the others (Σu = 0) is named as well (${prims.name})`, async (t) => {
    const pre = presign(c, [1, 2], `cancel-u ${prims.name}`);
    // A real attacker sees u_1 in party 1's online message first; the test reads it from party 1's stored presignature.
    const p1 = pre.results.get(1)!;
    const d1 = decodeBlob<{ u: SecretBytes; phi: SecretBytes }>('ecdsa-presignature', p1.encode(), { secrets: true });
    // What party 1 broadcasts is u_1' = u_1 + δ·φ_1.
    const delta = rerandomizer(ONLINE_SID, p1.R, digest, p1.signers, p1.publicKey);
    const u1p = Fn.add(exposeScalar(d1.u, 'u'), Fn.mul(delta, exposeScalar(d1.phi, 'phi')));
    const res = online(pre.results, digest, { prims, tamper: new Map([[2, rewrite(1, ONLINE_R1_KIND, (v) => { v.u = scalarHex(ORDER - u1p); })]]) });
    expectNamed(t, res, [1], 'bad_signature_share', 2);
  });
}

for (const prims of [noblePrimitives, nativePrimitives]) {
  t.test(`images that lie consistently in presigning and online abort without a culprit, releasing nothing (${prims.name})`, async (t) => {
    let sent: Obj = {};
    const pre = presign(c, [2, 3], `lying-images ${prims.name}`, [], { tamper: new Map([[3, rewrite(3, 'ecdsa-presign/r3/v3', (v) => { v.U = pointHex(G.multiply(99n)); sent = v; })]]) });
    // The liar also echoes its forged images, so the echo agrees and only the signature can fail.
    const params: PresignParams = { sessionId: sid(`lying-images ${prims.name}`), signers: [2, 3], me: 3, key: c.keys.get(3)!, path: [], ot: c.ots.get(3)! };
    const forgedEcho = r3Digest(presignContext(params, c.keys.get(3)!.pkg.groupKey), 3, sent as { U: string; V: string; Phi: string });
    // Its online u' is consistent with its forged U: 99 + δ·φ_3 (δ is public to every signer, φ_3 its own).
    const p2 = pre.results.get(2)!;
    const delta = rerandomizer(ONLINE_SID, p2.R, digest, p2.signers, p2.publicKey);
    const phi3 = exposeScalar(decodeBlob<{ phi: SecretBytes }>('ecdsa-presignature', pre.results.get(3)!.encode(), { secrets: true }).phi, 'phi');
    const res = online(pre.results, digest, { prims, tamper: new Map([[3, rewrite(1, ONLINE_R1_KIND, (v) => { v.u = scalarHex(Fn.add(99n, Fn.mul(delta, phi3))); (v.echo as Obj)['3'] = forgedEcho; })]]) });
    t.equal(res.aborts.get(2)?.code, 'bad_presignature', 'the honest signer aborts');
    t.same(res.aborts.get(2)?.culprits, [], 'naming no one');
    t.notOk(res.results.has(2), 'no signature is released');
  });
}
