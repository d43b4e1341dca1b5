// Long protocol steps on the node's worker threads (node/runtime/workers/): a DKG and an ECDSA OT setup
// whose every step runs on a worker give keys and OT material that sign (checked with noble), interoperate
// with parties running inline, and abort naming the same culprit with the same code as the inline run.
import t from 'tap';
import { hexToBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ProtocolWorkers, defaultWorkerCount, runProtocolOnWorkers } from '../../node/runtime/workers/protocol-workers.ts';
import { OFFLOADED, type OffloadedName } from '../../node/runtime/workers/offloaded.ts';
import { runProtocol, type Finish } from '../../node/runtime/protocols/run-protocol.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { keyShareParam, type KeyShare } from '../../node/protocols/keys/key-package.ts';
import type { EcdsaOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { loadNodeConfig } from '../../node/config.ts';
import { sid, sign } from '../protocols/ecdsa/harness.ts';
import { protocolWorkerBundle } from '../support/program.ts';

// The first test runs the pool's own entry (from TypeScript, as npm start does: protocol-worker-entry.mjs
// registers tsx in each worker); the others the node's bundled worker, the same code at a fraction of
// the cost to start (test/support/program.ts).
const WORKER = protocolWorkerBundle();

type Party = { me: number; run: PartyProtocol; result?: unknown };

/**
 * Runs the parties to the end over an in-memory network; `tamper` may change a payload in flight.
 * Returns each party's outcome: its finish result, or its abort.
 */
async function network(parties: Party[], tamper?: (from: number, to: number, round: number, payload: Uint8Array) => Uint8Array) {
  const outcome = new Map<number, Step>();
  const queue: { from: number; to: number; round: number; payload: Uint8Array; broadcast: boolean }[] = [];
  const send = (from: number, step: Step) => {
    outcome.set(from, step);
    if (step.kind === 'abort') return;
    for (const o of step.out) {
      const targets = o.to === 'all' ? parties.map((p) => p.me).filter((m) => m !== from) : [o.to];
      for (const to of targets) queue.push({ from, to, round: o.round, payload: tamper ? tamper(from, to, o.round, o.payload) : o.payload, broadcast: o.to === 'all' });
    }
  };
  for (const p of parties) send(p.me, await p.run.start());
  while (queue.length) {
    const m = queue.shift()!;
    if (outcome.get(m.to)?.kind === 'abort') continue;
    send(m.to, await parties.find((p) => p.me === m.to)!.run.deliver(m.from, m.round, m.payload, m.broadcast));
  }
  return outcome;
}

const PARTIES = [1, 2, 3];

function party<P, R>(workers: ProtocolWorkers | undefined, name: OffloadedName, params: (me: number) => P, onWorkers: (me: number) => boolean = () => true): Party[] {
  return PARTIES.map((me) => {
    const p: Party = { me, run: undefined as unknown as PartyProtocol };
    const finish = ([r]: R[]): Finish => {
      p.result = r;
      return { result: new Uint8Array([me]) };
    };
    p.run = workers && onWorkers(me)
      ? runProtocolOnWorkers<P, R>(workers, name, me, [params(me)], finish)
      : runProtocol(OFFLOADED[name].protocol as never, me, [params(me)], finish as never);
    return p;
  });
}

const dkgParams = (label: string) => (me: number) => ({ sessionId: sid(label), keyId: `key-${label}`, epoch: 1, threshold: 2, parties: PARTIES, me });

t.test('a DKG and an OT setup on workers make keys that sign; a mixed committee interoperates', async (t) => {
  const workers = new ProtocolWorkers(2);
  t.teardown(() => workers.close());

  // Party 2 runs inline: the messages are the same whichever thread computes them.
  const dkgRun = party<unknown, KeyShare>(workers, 'dkg', dkgParams('workers'), (me) => me !== 2);
  // A second DKG at the same time, all on workers: steps in flight together go to different workers.
  const other = party<unknown, KeyShare>(workers, 'dkg', dkgParams('concurrent'));
  const [dkgOut, otherOut] = await Promise.all([network(dkgRun), network(other)]);
  t.same([...otherOut.values()].map((s) => s.kind), ['done', 'done', 'done'], 'the concurrent DKG finished');
  t.same([...dkgOut.values()].map((s) => s.kind), ['done', 'done', 'done'], 'every party finished the DKG');
  const keys = new Map(dkgRun.map((p) => [p.me, p.result as KeyShare]));
  t.equal(new Set([...keys.values()].map((k) => k.pkg.groupKey)).size, 1, 'one group key');
  t.ok(workers.stats().steps >= 2 * 3, `the two parties on workers took their steps there (${workers.stats().steps})`);
  t.equal(workers.stats().live, 2, 'two workers served the two runs');

  const otRun = party<unknown, EcdsaOtSetup>(workers, 'ecdsa-ot-setup', (me) => ({ sessionId: sid('ot-workers'), keyId: 'key-workers', epoch: 1, parties: PARTIES, me }), (me) => me !== 3);
  const otOut = await network(otRun);
  t.same([...otOut.values()].map((s) => s.kind), ['done', 'done', 'done'], 'every party finished the OT setup');
  const ots = new Map(otRun.map((p) => [p.me, p.result as EcdsaOtSetup]));

  const committee = { keys: new Map([...keys].map(([i, k]) => [i, keyShareParam(k)])), ots };
  const digest = sid('a digest to sign');
  for (const signers of [[1, 2], [1, 3], [2, 3]]) {
    const sig = sign(committee, signers, digest, `sign-${signers.join('')}`).get(signers[0]!)!;
    t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(keys.get(1)!.pkg.groupKey), { prehash: false }), `signers ${signers} sign with the material made on workers`);
  }
  t.equal(workers.stats().inFlight, 0, 'nothing left in flight');
});

t.test('a tampered message aborts a party on a worker as it aborts one inline', async (t) => {
  const workers = new ProtocolWorkers(1, undefined, WORKER);
  t.teardown(() => workers.close());
  // Party 3 cheats towards both others in round 2: party 1 runs on the worker, party 2 inline.
  const flip = (from: number, _to: number, round: number, payload: Uint8Array) => {
    if (from !== 3 || round !== 2) return payload;
    const changed = Uint8Array.from(payload);
    changed[changed.length - 5]! ^= 0x01;
    return changed;
  };
  const out = await network(party(workers, 'dkg', dkgParams('tamper'), (me) => me === 1), flip);
  const one = out.get(1)!;
  const two = out.get(2)!;
  t.equal(one.kind, 'abort', 'the party on the worker aborts');
  t.equal(two.kind, 'abort', 'the inline party aborts');
  if (one.kind === 'abort' && two.kind === 'abort') {
    t.equal(one.code, two.code, `the same code (${one.code})`);
    t.same(one.culprits, [3], 'naming the cheating party');
    t.same(two.culprits, [3]);
  }
});

t.test('closing the pool fails what is in flight and refuses new steps', async (t) => {
  const workers = new ProtocolWorkers(1, undefined, WORKER);
  const refused = t.rejects(workers.step('dkg', { op: 'start', params: dkgParams('close')(1) }), /closed/, 'the step in flight is refused');
  await workers.close();
  await refused;
  await t.rejects(workers.step('dkg', { op: 'start', params: dkgParams('close')(1) }), /closed/, 'a new step is refused');
  t.throws(() => new ProtocolWorkers(0), RangeError, 'a pool has at least one worker');
});

t.test('a bad step is a protocol error, and the worker serves on', async (t) => {
  const workers = new ProtocolWorkers(1, undefined, WORKER);
  t.teardown(() => workers.close());
  await t.rejects(workers.step('dkg', { op: 'start', params: { ...dkgParams('bad')(1), parties: [1, 1, 2] } }), { name: 'InputError', code: 'bad_parties' }, 'bad parameters are an InputError, rebuilt on this thread');
  await t.rejects(workers.step('dkg', { op: 'deliver', run: new Uint8Array([9, 9, 9]), msg: { from: 2, to: 1, round: 1, payload: new Uint8Array(1) } }), { name: 'InputError' }, 'an unreadable run is refused');
  const ok = await workers.step('dkg', { op: 'start', params: dkgParams('bad')(1) });
  t.ok(ok.run && ok.run.length > 0, 'the next step runs');
  t.equal(workers.stats().failures, 0, 'no worker was lost');
});

t.test('NODE_PROTOCOL_WORKERS and the default', async (t) => {
  t.equal(defaultWorkerCount(1), 1);
  t.equal(defaultWorkerCount(2), 1);
  t.equal(defaultWorkerCount(3), 2);
  t.equal(defaultWorkerCount(32), 4);
  t.equal(loadNodeConfig({ NODE_PROTOCOL_WORKERS: '0' }).protocolWorkers, 0, '0: inline');
  t.equal(loadNodeConfig({}).protocolWorkers, undefined, 'unset: the default');
  t.throws(() => loadNodeConfig({ NODE_PROTOCOL_WORKERS: '65' }), /NODE_PROTOCOL_WORKERS/);
  t.throws(() => loadNodeConfig({ NODE_PROTOCOL_WORKERS: 'two' }), /NODE_PROTOCOL_WORKERS/);
});
