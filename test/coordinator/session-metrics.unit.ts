// Session metrics of the coordinator and the nodes (docs/operations.md "Metrics and health"), with the
// real SessionHub relaying between real SessionHosts in this process: sessions by kind and outcome on
// both sides, durations, refusals by code, and the culprit a misbehaving party is named as, counted by
// node id, while ids no party has are never made labels.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { create } from '@bufbuild/protobuf';
import { SessionHub, type ToNode } from '../../coordinator/sessions/session-hub.ts';
import { SessionMetrics } from '../../coordinator/sessions/session-metrics.ts';
import { SessionHost, SessionRefused, type ProtocolFactory, type ToCoordinator } from '../../node/runtime/session-host.ts';
import { NodeSessionMetrics } from '../../node/runtime/session-metrics.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { PartySchema, Protocol, SessionFailedSchema, SessionOpenSchema, type Envelope, type SessionDone, type SessionFailed } from '../../proto/gen/mpc/v1/session_pb.ts';
import { createMetricsRegistry, type Registry } from '../../common/metrics/metrics-registry.ts';
import { createLogger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import { newSessionId } from '../node/session-ids.ts';

const log = createLogger('test', 'silent');

/** Everyone broadcasts a value, then echoes each peer's value back; a wrong echo names its sender. */
function toy(myIndex: number, n: number): PartyProtocol {
  const mine = new Uint8Array(randomBytes(16));
  const values = new Map<number, Uint8Array>([[myIndex, mine]]);
  let echoes = 0;
  return {
    start: () => ({ kind: 'continue', out: [{ to: 'all', round: 1, payload: mine }] }),
    deliver(from, round, payload): Step {
      if (round === 1) {
        values.set(from, payload);
        return { kind: 'continue', out: [{ to: from, round: 2, payload }] };
      }
      if (toHex(payload) !== toHex(mine)) return { kind: 'abort', code: 'equivocation', message: 'echo differs', culprits: [from] };
      return ++echoes === n - 1 ? { kind: 'done', out: [], result: sha256(mine) } : { kind: 'continue', out: [] };
    },
    dispose: () => mine.fill(0),
  };
}

/** A liar: echoes zeros instead of what it was sent. */
function liar(p: PartyProtocol): PartyProtocol {
  return { ...p, deliver: async (f, r, pl, b) => {
    const s = await p.deliver(f, r, pl, b);
    if (s.kind === 'continue') s.out = s.out.map((o) => ({ ...o, payload: new Uint8Array(16) }));
    return s;
  } };
}

/** A hub and `n` hosts wired to each other in memory, each with metrics of its own. */
function cluster(n: number, factory: (i: number) => ProtocolFactory = () => async (ctx) => toy(ctx.myIndex, ctx.parties.length), timeoutMs = 5_000) {
  const ids = Array.from({ length: n }, () => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))));
  const coordRegistry = createMetricsRegistry({ process: false });
  const coordMetrics = new SessionMetrics(coordRegistry);
  const nodeRegistries = ids.map(() => createMetricsRegistry({ process: false }));
  const attached = new Set(ids.map((id) => id.nodeId));
  const hosts = new Map<string, SessionHost>();
  const hub = new SessionHub({
    isAttached: (id) => attached.has(id),
    send(nodeId, msg: ToNode) {
      const host = hosts.get(nodeId);
      const b = msg.body;
      if (!host || !b) return false;
      queueMicrotask(() => {
        if (b.case === 'open') host.onOpen(create(SessionOpenSchema, b.value));
        else if (b.case === 'relay') host.onRelay(b.value.envelope as Envelope);
        else if (b.case === 'cancel') host.onCancel(b.value.sessionId as Uint8Array, b.value.reason ?? '');
      });
      return true;
    },
  }, log, coordMetrics);
  coordMetrics.countAttached(() => [...attached].map(() => ({ kind: 'service' as const })));
  ids.forEach((id, i) => {
    const toHub = (m: ToCoordinator) => {
      const b = m.body;
      if (!b) return;
      queueMicrotask(() => {
        if (b.case === 'send') hub.fromNode(id.nodeId, { case: 'send', value: { envelope: b.value.envelope as Envelope } });
        else if (b.case === 'done') hub.fromNode(id.nodeId, { case: 'done', value: b.value as SessionDone });
        else if (b.case === 'failed') hub.fromNode(id.nodeId, { case: 'failed', value: create(SessionFailedSchema, b.value) as SessionFailed });
      });
    };
    hosts.set(id.nodeId, new SessionHost(id, toHub, factory(i), log, Date.now, new NodeSessionMetrics(nodeRegistries[i]!, { running: () => hosts.get(id.nodeId)!.running })));
  });
  const run = (protocol = Protocol.SIGN_SCHNORR, parties = ids, sessionId = newSessionId(timeoutMs)) => hub.run({
    sessionId, requestId: 'req_1', protocol, keyId: 'k', params: new Uint8Array(), timeoutMs,
    parties: parties.map((p, i) => create(PartySchema, { nodeId: p.nodeId, index: i + 1, signingKey: p.signingKey, encryptionKey: p.encryptionKey })),
  });
  return { ids, hub, run, attached, coordRegistry, nodeRegistries };
}

/** A metric's samples; a histogram's carry the name of their series (`_bucket`, `_sum`, `_count`). */
type Sample = { metricName?: string; labels: Record<string, string | number | undefined>; value: number };
async function samples(registry: Registry, name: string): Promise<Sample[]> {
  return ((await registry.getSingleMetric(name)?.get())?.values ?? []) as Sample[];
}

async function value(registry: Registry, name: string, labels: Record<string, string | number>): Promise<number | undefined> {
  const want = Object.entries(labels);
  return (await samples(registry, name)).find((v) => (v.metricName ?? name) === name && want.every(([k, x]) => v.labels[k] === x))?.value;
}

const settle = () => new Promise((r) => setTimeout(r, 50));

t.test('a session that completes counts as ok, by kind, on the coordinator and every node', async (t) => {
  const c = cluster(3);
  const outcome = await c.run(Protocol.DKG);
  t.ok(outcome.ok);
  await settle();
  t.equal(await value(c.coordRegistry, 'sessions_started_total', { kind: 'dkg' }), 1);
  t.equal(await value(c.coordRegistry, 'sessions_finished_total', { kind: 'dkg', outcome: 'ok' }), 1);
  t.equal(await value(c.coordRegistry, 'session_duration_seconds', { kind: 'dkg', outcome: 'ok' }), undefined, 'histograms expose buckets, not a bare value');
  const hist = await samples(c.coordRegistry, 'session_duration_seconds');
  t.equal(hist.find((v) => v.metricName === 'session_duration_seconds_count' && v.labels.outcome === 'ok')?.value, 1, 'one duration observed');
  t.equal(await value(c.coordRegistry, 'attached_nodes', { kind: 'service' }), 3);
  t.equal(await value(c.coordRegistry, 'attached_nodes', { kind: 'tee' }), 0);
  for (const r of c.nodeRegistries) {
    t.equal(await value(r, 'node_sessions_total', { kind: 'dkg', outcome: 'ok' }), 1, 'each node counts its part');
    t.equal(await value(r, 'node_sessions_running', {}), 0);
  }
  t.equal((await samples(c.coordRegistry, 'session_culprits_total')).length, 0, 'no culprit named');
});

t.test('a party that lies is named as culprit by node id; the node that caught it counts an abort', async (t) => {
  const c = cluster(3, (i) => async (ctx) => (i === 2 ? liar(toy(ctx.myIndex, ctx.parties.length)) : toy(ctx.myIndex, ctx.parties.length)));
  const outcome = await c.run(Protocol.SIGN_SCHNORR);
  t.notOk(outcome.ok);
  await settle();
  const liarId = c.ids[2]!.nodeId;
  t.equal(await value(c.coordRegistry, 'sessions_finished_total', { kind: 'sign-schnorr', outcome: 'party_failed' }), 1);
  t.equal(await value(c.coordRegistry, 'session_culprits_total', { node: liarId }), 1, 'the liar is named');
  const named = (await samples(c.coordRegistry, 'session_culprits_total')).map((v) => v.labels.node);
  t.same(named, [liarId], 'and nobody else');
  const aborted = await Promise.all(c.nodeRegistries.map((r) => value(r, 'node_sessions_total', { kind: 'sign-schnorr', outcome: 'aborted' })));
  t.ok(aborted.some((n) => n === 1), 'a node that caught the lie counts an abort');
});

/** A protocol that sends its first round and then waits forever. */
const stuck: ProtocolFactory = async () => ({ start: () => ({ kind: 'continue', out: [] }), deliver: () => ({ kind: 'continue', out: [] }), dispose: () => {} });

t.test('a culprit that is no party of the session is not made a label', async (t) => {
  const c = cluster(2, () => stuck);
  const sessionId = newSessionId();
  const running = c.run(Protocol.SIGN_ECDSA, c.ids, sessionId);
  await settle();
  c.hub.fromNode(c.ids[0]!.nodeId, { case: 'failed', value: create(SessionFailedSchema, { sessionId, code: 'equivocation', message: 'x', culprits: ['ghost-node', c.ids[1]!.nodeId] }) });
  t.notOk((await running).ok);
  const named = (await samples(c.coordRegistry, 'session_culprits_total')).map((v) => v.labels.node);
  t.same(named, [c.ids[1]!.nodeId], 'only the party is counted');
  t.equal(await value(c.coordRegistry, 'sessions_finished_total', { kind: 'sign-ecdsa', outcome: 'party_failed' }), 1);
  await settle();
  for (const r of c.nodeRegistries) t.equal(await value(r, 'node_sessions_total', { kind: 'sign-ecdsa', outcome: 'cancelled' }), 1, 'the hub cancelled it on the nodes');
});

t.test('a session nobody finishes times out and names the silent parties', async (t) => {
  const c = cluster(2, () => stuck, 100);
  const outcome = await c.run(Protocol.RESHARE);
  t.match(outcome, { ok: false, code: 'timeout' });
  t.equal(await value(c.coordRegistry, 'sessions_finished_total', { kind: 'reshare', outcome: 'timeout' }), 1);
  for (const id of c.ids) t.equal(await value(c.coordRegistry, 'session_culprits_total', { node: id.nodeId }), 1);
  const hist = await samples(c.coordRegistry, 'session_duration_seconds');
  const sum = hist.find((v) => v.metricName === 'session_duration_seconds_sum' && v.labels.outcome === 'timeout')?.value ?? 0;
  t.ok(sum >= 0.09 && sum < 5, `the duration is the time to the deadline (${sum} s)`);
});

t.test('a party that is not attached: the session fails at once and names it', async (t) => {
  const c = cluster(2);
  c.attached.delete(c.ids[1]!.nodeId);
  t.match(await c.run(Protocol.SIGN_SCHNORR), { ok: false, code: 'node_not_attached' });
  t.equal(await value(c.coordRegistry, 'sessions_started_total', { kind: 'sign-schnorr' }), 1);
  t.equal(await value(c.coordRegistry, 'sessions_finished_total', { kind: 'sign-schnorr', outcome: 'node_not_attached' }), 1);
  t.equal(await value(c.coordRegistry, 'session_culprits_total', { node: c.ids[1]!.nodeId }), 1);
  t.equal(await value(c.coordRegistry, 'attached_nodes', { kind: 'service' }), 1);
});

t.test('nodes count refusals by kind and code', async (t) => {
  const c = cluster(2, () => async () => {
    throw new SessionRefused('bad_intent_signature', 'the intent signature does not verify');
  });
  t.match(await c.run(Protocol.SIGN_ECDSA), { ok: false, code: 'party_failed' });
  await settle();
  const refused = await Promise.all(c.nodeRegistries.map((r) => value(r, 'node_session_refusals_total', { kind: 'sign-ecdsa', code: 'bad_intent_signature' })));
  t.ok(refused.some((n) => n === 1), 'a refusal counted under its code');
  t.ok(refused.every((n) => n === undefined || n === 1), 'at most once per node');
  const outcomes = await Promise.all(c.nodeRegistries.map(async (r) => (await samples(r, 'node_sessions_total')).map((v) => v.labels.outcome)));
  t.ok(outcomes.flat().every((o) => o === 'refused' || o === 'cancelled'), 'each node refused or was cancelled after the other refused');
});

t.test('a session open a node declines before it runs is a refusal too', async (t) => {
  const c = cluster(2);
  const sessionId = newSessionId();
  t.ok((await c.run(Protocol.SIGN_SCHNORR, c.ids, sessionId)).ok);
  // The same session id again: every node refuses it as reused.
  t.match(await c.run(Protocol.SIGN_SCHNORR, c.ids, sessionId), { ok: false });
  await settle();
  const reused = await Promise.all(c.nodeRegistries.map((r) => value(r, 'node_session_refusals_total', { kind: 'sign-schnorr', code: 'session_reused' })));
  t.ok(reused.some((n) => n === 1), 'counted under session_reused');
});
