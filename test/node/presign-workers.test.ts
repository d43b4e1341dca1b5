// ECDSA presigning on the node's protocol workers (node/runtime/workers/, docs/sessions.md "Worker
// threads"): the node's real session factories (node-protocols.ts) over real sealed stores, each node
// with a pool of its own. Presignatures made on workers sign, for the pool and inside a full signing,
// and interoperate with a node presigning inline; the OT guard (ot-guarded.ts) behaves as inline
// (an abort retires the pair, a retirement landing mid-run stops what would leave); a worker lost
// mid-presign fails that session alone, retires nothing, releases the pairs, and the next session runs;
// and the main thread is free while a presigning step is on a worker: a timer set then fires first,
// and another session's online round completes while the step is held on its worker.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { create } from '@bufbuild/protobuf';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { PresignatureStore } from '../../node/storage/presignature-store.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import { runLong } from '../../node/runtime/sessions/long-run.ts';
import type { NodeProtocolDeps } from '../../node/runtime/sessions/session-deps.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import type { SessionContext } from '../../node/runtime/session-host.ts';
import { OtPairLocks } from '../../node/runtime/ot-pair-locks.ts';
import { ProtocolWorkers } from '../../node/runtime/workers/protocol-workers.ts';
import { encodePresignParams } from '../../node/runtime/workers/presign-params.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import type { SignAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { encodeOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { ecdsaPresignWith } from '../../node/protocols/ecdsa/presign.ts';
import { nativePrimitives } from '../../node/runtime/native-primitives.ts';
import { presignParams, signParams, signResult } from '../../core/session/session-contract.ts';
import { SecretShare, keyShareParam } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar } from '../../node/protocols/math/curve.ts';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { committee, sid, type Committee } from '../protocols/ecdsa/harness.ts';
import { claimsOnlyLedger } from './claims-only-ledger.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';
import { protocolWorkerBundle } from '../support/program.ts';

// Slow protocols on a machine shared with other work.
t.setTimeout(600_000);

const CUE_ENTRY = new URL('./protocol-worker-cue-entry.mjs', import.meta.url);
// The pools run the node's bundled worker (test/support/program.ts says why); the cue entry loads it too.
const WORKER = protocolWorkerBundle();
process.env.CUSTODY_TEST_WORKER_ENTRY = WORKER.href;
const c: Committee = committee(3, 2, 'presign-workers');
const pkg = c.keys.get(1)!.pkg;
const keyId = pkg.keyId;
const members: PinnedMember[] = [1, 2, 3].map((i) => ({ index: i, nodeId: `node-${i}`, signingKey: bytesToHex(randomBytes(32)), encryptionKey: bytesToHex(randomBytes(32)) }));
const party = (m: PinnedMember): Party => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: m.index, signingKey: Uint8Array.from(Buffer.from(m.signingKey, 'hex')), encryptionKey: Uint8Array.from(Buffer.from(m.encryptionKey, 'hex')) });
const entry = () => bytesToHex(randomBytes(16));
const digest = () => new Uint8Array(secp256k1.utils.randomSecretKey());

interface Node {
  index: number;
  vault: VaultShareStore;
  pool: PresignatureStore;
  otLocks: OtPairLocks;
  workers?: ProtocolWorkers;
  factory: (ctx: SessionContext) => Promise<PartyProtocol>;
}

/** A node with its own sealed store, key share, OT setup and (unless `inline`) a one-worker pool. */
async function newNode(t: Test, index: number, opts: { inline?: boolean; cue?: string } = {}): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), 'presign-workers-'));
  const storageKey = new Uint8Array(randomBytes(32));
  const store = await SealedStore.open(join(dir, 'db'), storageKey, { anchor: new FileRollbackAnchor(join(dir, 'anchor'), storageKey) });
  const vault = new VaultShareStore(store);
  const pool = new PresignatureStore(store);
  const otLocks = new OtPairLocks();
  let workers: ProtocolWorkers | undefined;
  if (!opts.inline) {
    // The cue is read by the worker when it starts (on the pool's first step): set for this pool only.
    if (opts.cue) process.env.CUSTODY_TEST_WORKER_CUE = opts.cue;
    workers = new ProtocolWorkers(1, undefined, opts.cue ? CUE_ENTRY : WORKER);
  }
  const authorizer = { authorize: async () => ({}) } as unknown as SignAuthorizer;
  const deps: NodeProtocolDeps = { vault, authorizer, ledger: claimsOnlyLedger(store), trust: new TrustRegistry(store, { operatorKeys: [] }), presignatures: pool, otLocks, ...(workers ? { workers } : {}) };
  const node: Node = { index, vault, pool, otLocks, ...(workers ? { workers } : {}), factory: nodeProtocols(deps) };
  const k = c.keys.get(index)!;
  await vault.putNew(keyId, { key: { share: new SecretShare(index, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: 'acme', committee: members, tier: 'hosted' });
  await store.putSecret(`key/${keyId}/current/ot`, encodeOtSetup(c.ots.get(index)!));
  t.teardown(async () => {
    await workers?.close();
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return node;
}

function context(protocol: Protocol, signers: number[], me: number, params: Uint8Array, sessionId: Uint8Array): SessionContext {
  const parties = members.filter((m) => signers.includes(m.index)).map(party);
  return { open: create(SessionOpenSchema, { sessionId, protocol, keyId, parties, params, deadlineMs: deadlineOf(sessionId) }), myIndex: me, parties };
}

type Wire = { from: number; to: number | 'all'; round: number; payload: Uint8Array };

interface Session {
  runs: Map<number, PartyProtocol>;
  queue: Wire[];
  results: Map<number, Uint8Array>;
  aborted: Map<number, { code: string; culprits: number[] }>;
  /** A step that threw (the session host fails the session as an internal error). */
  thrown: Map<number, string>;
  sentBy: Map<number, number>;
}

/** Opens the session at every node and starts it; nothing is delivered yet. */
async function open(nodes: Node[], protocol: Protocol, params: Uint8Array): Promise<Session> {
  const signers = nodes.map((n) => n.index);
  const sessionId = newSessionId();
  const s: Session = { runs: new Map(), queue: [], results: new Map(), aborted: new Map(), thrown: new Map(), sentBy: new Map() };
  for (const n of nodes) s.runs.set(n.index, await n.factory(context(protocol, signers, n.index, params, sessionId)));
  for (const [me, run] of s.runs) {
    await step(s, me, () => run.start());
    await run.admit?.();
  }
  return s;
}

async function step(s: Session, me: number, next: () => Step | Promise<Step>): Promise<void> {
  let st: Step;
  try {
    st = await next();
  } catch (err) {
    s.thrown.set(me, (err as Error).message);
    return;
  }
  if (st.kind === 'abort') {
    s.aborted.set(me, { code: st.code, culprits: [...st.culprits] });
    return;
  }
  for (const o of st.out) s.queue.push({ from: me, ...o });
  s.sentBy.set(me, (s.sentBy.get(me) ?? 0) + st.out.length);
  if (st.kind === 'done') {
    await st.commit?.();
    s.results.set(me, st.result);
  }
}

const live = (s: Session, me: number) => !s.results.has(me) && !s.aborted.has(me) && !s.thrown.has(me);

/** Routes every queued message (through `tamper`) until nothing moves; disposes the runs. */
async function drive(s: Session, tamper?: (m: Wire, to: number) => Uint8Array): Promise<Session> {
  while (s.queue.length) {
    const m = s.queue.shift()!;
    for (const [me, run] of s.runs) {
      if (me === m.from || (m.to !== 'all' && m.to !== me) || !live(s, me)) continue;
      const payload = tamper ? tamper(m, me) : m.payload;
      await step(s, me, () => run.deliver(m.from, m.round, payload, m.to === 'all'));
    }
  }
  for (const r of s.runs.values()) r.dispose();
  return s;
}

const presignParamsFor = (entryIds: string[]) => presignParams.encode({ keyId, epoch: 0, path: [], entryIds });
const signParamsFor = (digests: Uint8Array[], presignatures?: string[]) => signParams.encode({
  keyId, epoch: 0, path: [], scheme: 'ecdsa', digests, intent: new Uint8Array(), intentSignature: new Uint8Array(64), apiKeyId: '', template: new Uint8Array(), endUserToken: '',
  ...(presignatures ? { presignatures } : {}),
});
const presignSession = async (nodes: Node[], ids: string[], tamper?: (m: Wire, to: number) => Uint8Array) => drive(await open(nodes, Protocol.PRESIGN_ECDSA, presignParamsFor(ids)), tamper);
const signSession = async (nodes: Node[], digests: Uint8Array[], ids?: string[]) => drive(await open(nodes, Protocol.SIGN_ECDSA, signParamsFor(digests, ids)));

function verifies(t: Test, s: Session, digests: Uint8Array[], what: string) {
  t.equal(s.results.size, s.runs.size, `${what}: every node finished`);
  const r = signResult.decode([...s.results.values()][0]!);
  digests.forEach((d, i) => t.ok(secp256k1.verify(r.signatures[i]!, d, secp256k1.Point.fromHex(pkg.groupKey).toBytes(true), { prehash: false }), `${what}: signature ${i} verifies`));
}

const retiredAt = async (n: Node) => (await n.vault.otRetirement(keyId))?.retired.map((r) => r.peer) ?? [];

t.test('presignatures made on workers sign, pooled and in a full signing; a node presigning inline joins in', async (t) => {
  const [n1, n2, n3] = [await newNode(t, 1), await newNode(t, 2), await newNode(t, 3, { inline: true })];
  const ids = [entry(), entry(), entry()];
  const made = await presignSession([n1, n2, n3], ids);
  t.equal(made.results.size, 3, 'the presigning session completes at every node');
  for (const n of [n1, n2, n3]) t.equal(await n.pool.count(keyId, 0), 3, `node ${n.index} sealed three entries`);
  t.ok(n1.workers!.stats().steps >= 4 && n2.workers!.stats().steps >= 4, 'nodes 1 and 2 presigned on their workers');
  const digests = [digest(), digest(), digest()];
  verifies(t, await signSession([n1, n2, n3], digests, ids), digests, 'the pooled signing');

  const before = n1.workers!.stats().steps;
  const full = [digest(), digest()];
  verifies(t, await signSession([n1, n3], full), full, 'a full signing, node 1 on its worker');
  t.ok(n1.workers!.stats().steps > before, 'whose presigning ran on node 1\'s worker');
  for (const n of [n1, n2, n3]) {
    t.equal(n.otLocks.held, 0, `node ${n.index} holds no OT pair afterwards`);
    t.same(await retiredAt(n), [], `node ${n.index} retired nothing`);
  }
  t.equal(n1.workers!.stats().inFlight, 0, 'nothing left in flight');
});

t.test('the OT guard on workers: an abort retires the pair, a retirement mid-run stops what would leave', async (t) => {
  const [n1, n2, n3] = [await newNode(t, 1), await newNode(t, 2), await newNode(t, 3)];
  // Node 3 tampers with its multiplication message to node 1 (round 2).
  const flip = (m: Wire, to: number) => {
    if (m.from !== 3 || to !== 1 || m.round !== 2) return m.payload;
    const changed = Uint8Array.from(m.payload);
    changed[changed.length - 40]! ^= 0x01;
    return changed;
  };
  const tampered = await presignSession([n1, n2, n3], [entry()], flip);
  const a = tampered.aborted.get(1);
  t.ok(a, 'node 1 aborts');
  t.same(a?.culprits, [3], `naming node 3 (${a?.code})`);
  t.same(await retiredAt(n1), [3], 'node 1 retired its pair with node 3 on disk');
  t.equal(n1.otLocks.held, 0, 'and released its pairs');
  t.equal(await n1.pool.count(keyId, 0), 0, 'no entry was sealed');

  const refused = await open([n1, n3], Protocol.PRESIGN_ECDSA, presignParamsFor([entry()])).catch((err: { code?: string }) => err.code);
  t.equal(refused, 'ot_retired', 'the retired pair serves no new run');
  const [m1, m2] = [await newNode(t, 1), await newNode(t, 2)];
  const s = await open([m1, m2], Protocol.SIGN_ECDSA, signParamsFor([digest()]));
  const sentAfterStart = s.sentBy.get(1) ?? 0;
  // The pair {1, 2} is retired on node 1's disk while its run is under way (another session's abort).
  await m1.vault.retireOtPairs(keyId, [{ peer: 2, setupId: c.ots.get(1)!.peers['2']!.setupId }]);
  await drive(s);
  t.equal(s.aborted.get(1)?.code, 'ot_retired', 'node 1 stops at its next step');
  t.equal(s.sentBy.get(1) ?? 0, sentAfterStart, 'nothing derived from the retired material left node 1');
  t.equal(m1.otLocks.held, 0, 'its pairs are released');
});

t.test('a worker lost mid-presign fails that session only; nothing is retired and the next session runs', async (t) => {
  const marker = join(mkdtempSync(join(tmpdir(), 'presign-worker-cue-')), 'died');
  const n1 = await newNode(t, 1, { cue: `die:${marker}` });
  const [n2, n3] = [await newNode(t, 2), await newNode(t, 3)];
  const lost = await presignSession([n1, n2, n3], [entry(), entry()]);
  t.ok(existsSync(marker), 'node 1\'s worker died on its first presigning payload');
  t.match(lost.thrown.get(1), /^protocol worker (failed|exited)/, 'node 1\'s session fails (an internal error at the session host)');
  t.notOk(lost.aborted.has(1), 'not as a protocol abort: no peer is blamed');
  t.equal(n1.workers!.stats().failures, 1, 'the pool counts one lost worker');
  for (const n of [n1, n2, n3]) {
    t.same(await retiredAt(n), [], `node ${n.index} retired nothing`);
    t.equal(n.otLocks.held, 0, `node ${n.index} released its OT pairs`);
    t.equal(await n.pool.count(keyId, 0), 0, `node ${n.index} sealed nothing`);
  }
  const ids = [entry()];
  const next = await presignSession([n1, n2, n3], ids);
  t.equal(next.results.size, 3, 'the next presigning session completes, on a new worker');
  const d = [digest()];
  verifies(t, await signSession([n1, n2, n3], d, ids), d, 'and its entries sign');
  rmSync(join(marker, '..'), { recursive: true, force: true });
});

t.test('the main thread is free while a presigning step runs on a worker', async (t) => {
  const workers = new ProtocolWorkers(1, undefined, WORKER);
  t.teardown(() => workers.close());
  const presign = ecdsaPresignWith(nativePrimitives);
  const signers = [1, 2, 3];
  const params = (me: number) => Array.from({ length: 4 }, (_, i) => ({ sessionId: sid(`free ${i}`), signers, me, key: keyShareParam({ share: new SecretShare(me, exposeScalar(c.keys.get(me)!.share, 'share')), pkg }), path: [], ot: c.ots.get(me)! }));
  const finish = () => ({ result: new Uint8Array() });
  // Parties 2 and 3 inline; party 1 once on the worker, once inline, with the same payloads delivered.
  const others = [2, 3].map((me) => ({ me, run: runLong({} as NodeProtocolDeps, 'ecdsa-presign', presign, me, params(me), finish) }));
  const outs = await Promise.all(others.map(async (o) => ({ me: o.me, step: await o.run.start() })));
  const toOne = outs.map(({ me, step }) => ({ me, payload: step.kind === 'abort' ? new Uint8Array() : step.out.find((x) => x.to === 1)!.payload }));
  for (const [how, deps] of [['on the worker', { workers } as NodeProtocolDeps], ['inline', {} as NodeProtocolDeps]] as const) {
    const one = runLong(deps, 'ecdsa-presign', presign, 1, params(1), finish);
    t.equal((await one.start()).kind, 'continue', `${how}: party 1 starts`);
    await one.deliver(toOne[0]!.me, 1, toOne[0]!.payload, false);
    // The last round-1 payload: four runs' round-1 finish (the OT extension as Alice) in one step.
    const order: string[] = [];
    const delivered = Promise.resolve(one.deliver(toOne[1]!.me, 1, toOne[1]!.payload, false)).then((s) => order.push(`step ${s.kind}`));
    setImmediate(() => order.push('timer'));
    await delivered;
    await new Promise((resolve) => setImmediate(resolve));
    t.same(order, how === 'inline' ? ['step continue', 'timer'] : ['timer', 'step continue'], `${how}: ${order.join(' before ')}`);
    one.dispose();
  }
  for (const o of others) o.run.dispose();
});

t.test('another session\'s online round completes while a presigning step is held on its worker', async (t) => {
  const gateDir = mkdtempSync(join(tmpdir(), 'presign-worker-gate-'));
  t.teardown(() => rmSync(gateDir, { recursive: true, force: true }));
  const gate = join(gateDir, 'open');
  const n1 = await newNode(t, 1, { cue: `gate:${gate}` });
  const n2 = await newNode(t, 2);
  // Entries for the online round, made while the gate is open.
  writeFileSync(gate, '');
  const ids = [entry()];
  t.equal((await presignSession([n1, n2], ids)).results.size, 2, 'an entry in both pools');
  rmSync(gate);

  // A presigning session whose next step at node 1 waits on its worker until the gate opens.
  const held = await open([n1, n2], Protocol.PRESIGN_ECDSA, presignParamsFor([entry(), entry()]));
  const toOne = held.queue.filter((m) => m.from === 2 && m.to === 1);
  held.queue = held.queue.filter((m) => !(m.from === 2 && m.to === 1));
  t.equal(toOne.length, 1, 'node 2\'s first round for node 1');
  const order: string[] = [];
  const inFlight = step(held, 1, () => held.runs.get(1)!.deliver(2, toOne[0]!.round, toOne[0]!.payload, false)).then(() => order.push('presigning step'));
  const heartbeats: number[] = [];
  // Each beat records whether the presigning step had finished by then.
  const beat = setInterval(() => heartbeats.push(order.includes('presigning step') ? 1 : 0), 1);

  const d = [digest()];
  const signed = await signSession([n1, n2], d, ids);
  order.push('online round');
  // One more turn of the node's timers while the step is still held (the 1 ms beat comes due first).
  await new Promise((resolve) => setTimeout(resolve, 5));
  t.ok(heartbeats.length > 0 && heartbeats.every((n) => n === 0), `the node's timer fired while the step was held (${heartbeats.length} times)`);
  clearInterval(beat);
  writeFileSync(gate, '');
  await inFlight;
  t.same(order, ['online round', 'presigning step'], 'the online round of the other session finished first');
  verifies(t, signed, d, 'the pooled signing');
  await drive(held);
  t.equal(held.results.size, 2, 'the held presigning session completes once its worker runs');
});

t.test('a presigning step does not queue behind a long step: it takes the pool\'s short lane', async (t) => {
  const workers = new ProtocolWorkers(1, undefined, WORKER);
  t.teardown(() => workers.close());
  const dkgStart = (label: string) => workers.step('dkg', { op: 'start', params: { sessionId: sid(label), keyId: `key-${label}`, epoch: 1, threshold: 2, parties: [1, 2, 3], me: 1 } });
  const presignStart = (label: string) => workers.step('ecdsa-presign', { op: 'start', params: encodePresignParams({ sessionId: sid(label), signers: [1, 2], me: 1, key: keyShareParam({ share: new SecretShare(1, exposeScalar(c.keys.get(1)!.share, 'share')), pkg }), path: [], ot: c.ots.get(1)! }) });
  const alone = await presignStart('alone');
  t.ok(alone.run, 'a presigning step with the worker idle');
  t.same([workers.stats().live, workers.stats().laneLive], [1, false], 'runs on the pool\'s worker, no lane yet');
  const long = dkgStart('long');
  t.same([workers.stats().live, workers.stats().laneLive, workers.stats().laneInFlight], [1, true, 0], 'a DKG step starts the short lane beside its worker, idle');
  const short = presignStart('beside');
  t.equal(workers.stats().laneInFlight, 1, 'with the DKG step in flight, the next presigning step goes to the lane');
  const second = dkgStart('second');
  t.same([workers.stats().laneInFlight, workers.stats().inFlight], [1, 3], 'a long step never takes the lane');
  const [a, b, d] = await Promise.all([long, short, second]);
  t.ok(a.run && b.run && d.run, 'all three steps complete');
  t.equal(workers.stats().inFlight, 0, 'nothing left in flight');
});
