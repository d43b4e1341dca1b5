// A node attached to two coordinators (docs/operations.md "Coordinator shards"): each session answers on
// the link that opened it, a session id is one id space across the links, and neither coordinator can
// feed, cancel or abort a session the other opened. Every coordinator is untrusted; the second one is the
// adversary here.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { create } from '@bufbuild/protobuf';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { SessionHost, type Origin, type ToCoordinator } from '../../node/runtime/session-host.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { SessionOpenSchema, Protocol, type Envelope, type SessionOpen } from '../../proto/gen/mpc/v1/session_pb.ts';
import { createLogger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

const log = createLogger('test', 'silent');
const A: Origin = 'coordinator-a:7400';
const B: Origin = 'coordinator-b:7400';

/** Everyone broadcasts a value; the result is a hash of all values. `hold` keeps a party from finishing until released. */
function toy(myIndex: number, n: number, hold?: Promise<void>): PartyProtocol {
  const values = new Map<number, Uint8Array>([[myIndex, new Uint8Array(randomBytes(16))]]);
  return {
    start: () => ({ kind: 'continue', out: [{ to: 'all', round: 1, payload: values.get(myIndex)! }] }),
    async deliver(from, _round, payload): Promise<Step> {
      values.set(from, payload);
      if (values.size < n) return { kind: 'continue', out: [] };
      await hold;
      const all = [...values.entries()].sort((a, b) => a[0] - b[0]).flatMap(([, v]) => [...v]);
      return { kind: 'done', out: [], result: sha256(new Uint8Array(all)) };
    },
    dispose() {},
  };
}

interface Sent {
  node: number;
  origin: Origin;
  msg: ToCoordinator;
}

/**
 * Two nodes attached to both coordinators. Each coordinator relays what a node sent on its own link to
 * the other node on the same link; `sent` keeps everything, with the link it went out on.
 */
function twoLinks(hold?: Promise<void>) {
  const ids = [0, 1].map(() => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))));
  const sent: Sent[] = [];
  const hosts: SessionHost[] = ids.map((id, i) => new SessionHost(id, (msg, origin) => {
    sent.push({ node: i, origin, msg });
    if (msg.body?.case === 'send') {
      const env = msg.body.value.envelope as Envelope;
      queueMicrotask(() => hosts[1 - i]!.onRelay(env, origin));
    }
  }, async (ctx) => toy(ctx.myIndex, ctx.parties.length, hold), log));
  const open = (sessionId: Uint8Array = newSessionId(10_000)): SessionOpen => create(SessionOpenSchema, {
    sessionId: new Uint8Array(sessionId), protocol: Protocol.SIGN_SCHNORR, keyId: 'k', params: new Uint8Array(), deadlineMs: deadlineOf(sessionId),
    parties: ids.map((id, i) => ({ nodeId: id.nodeId, index: i + 1, signingKey: id.signingKey, encryptionKey: id.encryptionKey })),
  });
  /** What node `node` reported for `sessionId` on `origin`: the cases of its done and failed messages, with codes. */
  const outcomes = (sessionId: Uint8Array, origin: Origin, node?: number) => sent
    .filter((s) => s.origin === origin && (node === undefined || s.node === node))
    .map((s) => s.msg.body)
    .filter((b) => (b?.case === 'done' || b?.case === 'failed') && toHex(b.value.sessionId as Uint8Array) === toHex(sessionId))
    .map((b) => (b!.case === 'failed' ? `failed:${String(b!.value.code)}` : 'done'));
  return { ids, hosts, sent, open, outcomes };
}

const settle = () => new Promise((r) => setTimeout(r, 50));

/** One session opened by coordinator A and one by B, on every node. */
function openOnBoth(n: ReturnType<typeof twoLinks>) {
  const onA = n.open();
  const onB = n.open();
  for (const h of n.hosts) {
    h.onOpen(onA, A);
    h.onOpen(onB, B);
  }
  return { onA, onB };
}

t.test('sessions opened by two coordinators run side by side, each answered on its own link', async (t) => {
  const n = twoLinks();
  const { onA, onB } = openOnBoth(n);
  await settle();
  t.same(n.outcomes(onA.sessionId, A), ['done', 'done'], 'A\'s session finished on A');
  t.same(n.outcomes(onB.sessionId, B), ['done', 'done'], 'B\'s session finished on B');
  t.same(n.outcomes(onA.sessionId, B), [], 'nothing of A\'s session went to B');
  t.same(n.outcomes(onB.sessionId, A), [], 'nothing of B\'s session went to A');
  const envelopesFor = (s: SessionOpen, origin: Origin) => n.sent.filter((x) => x.msg.body?.case === 'send' && toHex((x.msg.body.value.envelope as Envelope).sessionId) === toHex(s.sessionId) && x.origin === origin).length;
  t.equal(envelopesFor(onA, B) + envelopesFor(onB, A), 0, 'every envelope left on the link of its session');
  t.equal(envelopesFor(onA, A), 2);
});

t.test('a session id live on one link is refused on the other, and the first session is untouched', async (t) => {
  let release!: () => void;
  const n = twoLinks(new Promise<void>((r) => (release = r)));
  const onA = n.open();
  for (const h of n.hosts) h.onOpen(onA, A);
  await settle();
  t.equal(n.hosts[0]!.running, 1);
  // The second coordinator opens the same session id (the same parties, a copy of A's open).
  for (const h of n.hosts) h.onOpen(n.open(onA.sessionId), B);
  await settle();
  t.same(n.outcomes(onA.sessionId, B), ['failed:session_reused', 'failed:session_reused'], 'refused on B, to B');
  t.same(n.outcomes(onA.sessionId, A), [], 'A was told nothing');
  t.equal(n.hosts[0]!.runningFor(A), 1, 'A\'s session still runs');
  release();
  await settle();
  t.same(n.outcomes(onA.sessionId, A), ['done', 'done'], 'and finishes on A');
  // Ended, it stays used on every link.
  n.hosts[0]!.onOpen(n.open(onA.sessionId), B);
  await settle();
  t.same(n.outcomes(onA.sessionId, B, 0), ['failed:session_reused', 'failed:session_reused']);
});

t.test('traffic and cancels for a session from the other coordinator are ignored', async (t) => {
  let release!: () => void;
  const n = twoLinks(new Promise<void>((r) => (release = r)));
  const onA = n.open();
  // Only node 0 opens it: node 1's envelope will come from B, which relays what it saw on A.
  n.hosts[0]!.onOpen(onA, A);
  n.hosts[1]!.onOpen(onA, A);
  await settle();
  const fromB = n.sent.find((s) => s.origin === A && s.node === 1 && s.msg.body?.case === 'send')!.msg.body!.value as { envelope: Envelope };
  // B replays node 1's genuine round-1 envelope and a forged one into A's session on node 0, then cancels it.
  n.hosts[0]!.onRelay(fromB.envelope, B);
  n.hosts[0]!.onRelay({ ...fromB.envelope, body: new Uint8Array(fromB.envelope.body.length) }, B);
  n.hosts[0]!.onCancel(onA.sessionId, 'cancelled by B', B);
  await settle();
  t.equal(n.hosts[0]!.runningFor(A), 1, 'the session runs on: no relay fault, no cancel');
  t.same(n.outcomes(onA.sessionId, B), [], 'nothing answered to B');
  release();
  await settle();
  t.same(n.outcomes(onA.sessionId, A), ['done', 'done'], 'A\'s session finishes');
});

t.test('losing one coordinator ends only its sessions', async (t) => {
  let release!: () => void;
  const n = twoLinks(new Promise<void>((r) => (release = r)));
  const { onA, onB } = openOnBoth(n);
  await settle();
  for (const h of n.hosts) h.abortFrom(A, 'detached from the coordinator');
  t.equal(n.hosts[0]!.runningFor(A), 0);
  t.equal(n.hosts[0]!.runningFor(B), 1);
  release();
  await settle();
  t.same(n.outcomes(onB.sessionId, B), ['done', 'done'], 'B\'s session finishes');
  t.same(n.outcomes(onA.sessionId, A), [], 'A\'s was abandoned');
  // A comes back and opens the abandoned id again: it stays used.
  n.hosts[0]!.onOpen(n.open(onA.sessionId), A);
  await settle();
  t.same(n.outcomes(onA.sessionId, A), ['failed:session_reused']);
});
