// The node's session runtime, with an in-memory relay standing in for the coordinator: what it sends
// is sealed, what it receives is checked, and a relay that flips, replays or misroutes a message makes
// the session abort with the relay blamed, never a party.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { sha256 } from '@noble/hashes/sha2.js';
import { create } from '@bufbuild/protobuf';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { SessionHost, SessionRefused, type ToCoordinator, type ProtocolFactory } from '../../node/runtime/session-host.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { SessionOpenSchema, Protocol, type Envelope } from '../../proto/gen/mpc/v1/session_pb.ts';
import { createLogger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import { deadlineOf, newSessionId, sessionIdFields } from './session-ids.ts';

const log = createLogger('test', 'silent');

/** A two-round toy run: everyone broadcasts a value, then sends each peer a direct echo of it; the result is a hash of all values. */
function toy(myIndex: number, n: number): PartyProtocol {
  const mine = new Uint8Array(randomBytes(16));
  const values = new Map<number, Uint8Array>([[myIndex, mine]]);
  const echoes = new Map<number, Uint8Array>();
  const finish = (): Step => {
    const all = [...values.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
    return { kind: 'done', out: [], result: sha256(new Uint8Array(all.flatMap((v) => [...v]))) };
  };
  return {
    start: () => ({ kind: 'continue', out: [{ to: 'all', round: 1, payload: mine }] }),
    deliver(from, round, payload) {
      if (round === 1) {
        values.set(from, payload);
        return { kind: 'continue', out: [{ to: from, round: 2, payload: mine }] };
      }
      if (toHex(payload) !== toHex(values.get(from) ?? new Uint8Array())) {
        // Round 2 echoes the sender's own value back: mismatching it names the sender.
        return { kind: 'abort', code: 'equivocation', message: 'echo differs', culprits: [from] };
      }
      echoes.set(from, payload);
      return echoes.size === n - 1 ? finish() : { kind: 'continue', out: [] };
    },
    dispose() {
      mine.fill(0);
    },
  };
}

interface Net {
  hosts: SessionHost[];
  ids: NodeIdentity[];
  outbox: { from: number; msg: ToCoordinator }[];
  done: Map<number, Uint8Array>;
  failed: Map<number, { code: string; culprits: string[] }>;
  /** Transforms each relayed envelope; default passes it through. */
  tamper: (env: Envelope, count: number) => Envelope[];
}

function network(n: number, factory?: (i: number) => ProtocolFactory): Net {
  const ids = Array.from({ length: n }, () => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))));
  const net: Net = { hosts: [], ids, outbox: [], done: new Map(), failed: new Map(), tamper: (e) => [e] };
  let count = 0;
  net.hosts = ids.map((id, i) =>
    new SessionHost(id, (msg) => {
      const b = msg.body;
      if (b?.case === 'send') {
        const env = b.value.envelope as Envelope;
        for (const e of net.tamper(env, count++)) {
          const targets = e.to === '' ? ids.map((_, j) => j).filter((j) => j !== i) : [ids.findIndex((x) => x.nodeId === e.to)];
          for (const j of targets) queueMicrotask(() => net.hosts[j]!.onRelay(e));
        }
      } else if (b?.case === 'done') net.done.set(i, b.value.result as Uint8Array);
      else if (b?.case === 'failed') net.failed.set(i, { code: b.value.code as string, culprits: [...(b.value.culprits as string[])] });
    }, factory ? factory(i) : async (ctx) => toy(ctx.myIndex, ctx.parties.length), log),
  );
  return net;
}

function openAll(net: Net, sessionId = newSessionId(10_000)) {
  const parties = net.ids.map((id, i) => ({ nodeId: id.nodeId, index: i + 1, signingKey: id.signingKey, encryptionKey: id.encryptionKey }));
  const open = create(SessionOpenSchema, { sessionId, protocol: Protocol.SIGN_SCHNORR, keyId: 'k', parties, params: new Uint8Array(), deadlineMs: deadlineOf(sessionId) });
  for (const h of net.hosts) h.onOpen(open);
  return open;
}

const settle = () => new Promise((r) => setTimeout(r, 50));

t.test('three hosts run a session to one agreed result', async (t) => {
  const net = network(3);
  openAll(net);
  await settle();
  t.equal(net.done.size, 3, 'every party done');
  t.equal(new Set([...net.done.values()].map(toHex)).size, 1, 'same result everywhere');
  t.equal(net.failed.size, 0);
  t.ok(net.hosts.every((h) => h.running === 0), 'no session left running');
});

t.test('a flipped byte in transit aborts, blaming the relay', async (t) => {
  const net = network(3);
  net.tamper = (e, count) => (count === 2 ? [{ ...e, body: e.body.map((b, i) => (i === 0 ? b ^ 1 : b)) }] : [e]);
  openAll(net);
  await settle();
  const fails = [...net.failed.values()];
  t.ok(fails.length >= 1, 'someone failed');
  t.ok(fails.every((f) => f.code === 'relay_fault' && f.culprits.length === 0), 'relay faults name no party');
  t.ok(net.done.size < 3, 'the session did not complete everywhere');
});

t.test('a replayed message aborts', async (t) => {
  const net = network(2);
  net.tamper = (e) => [e, e];
  openAll(net);
  await settle();
  t.match([...net.failed.values()], [{ code: 'relay_fault' }]);
});

t.test('a message from another session is never accepted', async (t) => {
  const net = network(2);
  const captured: Envelope[] = [];
  net.tamper = (e) => {
    captured.push(e);
    return [e];
  };
  openAll(net);
  await settle();
  t.equal(net.done.size, 2);
  // Second session: the relay swaps in the first session's round-1 envelope.
  const old = captured[0]!;
  net.tamper = (e) => (e.round === 1 && e.from === old.from ? [{ ...old }] : [e]);
  net.done.clear();
  openAll(net);
  await settle();
  // The stale envelope is for a finished session: dropped unread, so the new session cannot complete
  // and ends at its deadline (the coordinator reports the timeout).
  t.equal(net.done.size, 0, 'no result from the tampered session');
  t.ok(net.hosts.some((h) => h.running === 1), 'the new session is still waiting for the real message');
  for (const h of net.hosts) h.abortAll('test over');
});

t.test('a protocol abort names the culprit by node id', async (t) => {
  const net = network(3, (i) => async (ctx) => {
    const p = toy(ctx.myIndex, ctx.parties.length);
    if (i !== 2) return p;
    // Party 3 echoes garbage in round 2.
    return { ...p, deliver: (f, r, pl, b) => { const s = p.deliver(f, r, pl, b) as Step; if (s.kind === 'continue') s.out = s.out.map((o) => ({ ...o, payload: new Uint8Array(16) })); return s; } };
  });
  openAll(net);
  await settle();
  const blamed = [...net.failed.values()].filter((f) => f.code === 'equivocation');
  t.ok(blamed.length >= 1);
  t.ok(blamed.every((f) => f.culprits.length === 1 && f.culprits[0] === net.ids[2]!.nodeId), 'party 3 is named');
});

t.test('a refused session reports why and runs nothing', async (t) => {
  const net = network(2, () => async () => {
    throw new SessionRefused('unauthorized', 'intent signature does not verify');
  });
  openAll(net);
  await settle();
  t.match([...net.failed.values()], [{ code: 'unauthorized' }, { code: 'unauthorized' }]);
  t.equal(net.done.size, 0);
});

t.test('an admission check runs after the first round is sent and before anything is delivered', async (t) => {
  const events: string[] = [];
  const net = network(2, (i) => async (ctx) => {
    const p = toy(ctx.myIndex, ctx.parties.length);
    return {
      ...p,
      start: () => {
        events.push(`${i}:start`);
        return p.start();
      },
      deliver: (f, r, pl, b) => {
        events.push(`${i}:deliver${r}`);
        return p.deliver(f, r, pl, b);
      },
      admit: async () => {
        events.push(`${i}:admit`);
        if (i === 1) throw new SessionRefused('digest_mismatch', 'not the intent\'s digest');
      },
    };
  });
  net.tamper = (e) => {
    events.push(`relay${e.round}:${net.ids.findIndex((id) => id.nodeId === e.from)}`);
    return [e];
  };
  openAll(net);
  await settle();
  t.match(net.failed.get(1), { code: 'digest_mismatch' }, 'the refusing node reports its code');
  t.equal(net.done.size, 0, 'no result anywhere');
  t.notOk(events.includes('1:deliver1'), 'the refusing node delivered nothing');
  t.ok(events.indexOf('relay1:1') >= 0 && events.indexOf('relay1:1') < events.indexOf('1:admit'), 'its first round went out before the check');
  t.equal(events.filter((e) => e.startsWith('relay2')).length, 1, 'only the admitted node answers round 1');
  t.notOk(events.includes('relay2:1'), 'the refusing node sends no second round');
  for (const h of net.hosts) h.abortAll('test over');
});

t.test('a session that names this node with other keys is refused', async (t) => {
  const net = network(2);
  const sessionId = newSessionId(1000);
  const parties = net.ids.map((id, i) => ({ nodeId: id.nodeId, index: i + 1, signingKey: id.signingKey, encryptionKey: net.ids[1 - i]!.encryptionKey }));
  net.hosts[0]!.onOpen(create(SessionOpenSchema, { sessionId, protocol: Protocol.SIGN_SCHNORR, keyId: 'k', parties, deadlineMs: deadlineOf(sessionId) }));
  await settle();
  t.match(net.failed.get(0), { code: 'identity_mismatch' });
});

t.test('the coordinator\'s request id: a malformed one is refused, a good one is on every log line about the session', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const id = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
  const failed: string[] = [];
  const host = new SessionHost(id, (msg) => {
    if (msg.body?.case === 'failed') failed.push(msg.body.value.code as string);
  }, async () => {
    throw new SessionRefused('digest_mismatch', 'not the intent\'s digest');
  }, createLogger('node', 'debug', sink));
  const open = (requestId: string) => create(SessionOpenSchema, {
    ...sessionIdFields(10_000), protocol: Protocol.SIGN_SCHNORR, keyId: 'k', requestId,
    parties: [{ nodeId: id.nodeId, index: 1, signingKey: id.signingKey, encryptionKey: id.encryptionKey }],
  });
  for (const bad of ['txn/1', 'a b', 'x'.repeat(129)]) host.onOpen(open(bad));
  await settle();
  t.same(failed, ['bad_params', 'bad_params', 'bad_params'], 'refused before anything runs');
  const good = open('txn_0193a1:2');
  host.onOpen(good);
  await settle();
  t.equal(failed[3], 'digest_mismatch');
  const about = lines.filter((l) => l.session === toHex(good.sessionId));
  t.same(about.map((l) => l.msg), ['session opened', 'session refused: not the intent\'s digest', 'session ended']);
  t.ok(about.every((l) => l.requestId === 'txn_0193a1:2'), 'each names the request');
});
