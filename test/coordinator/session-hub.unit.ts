// The session hub takes a node's SessionFailed from the wire: a registered code is kept as the report's
// code, an unregistered one (a newer or broken node) becomes `party_failed` with the node's code in the
// message, and what a node sends is bounded.
import t from 'tap';
import { create } from '@bufbuild/protobuf';
import { EnvelopeSchema, PartySchema, Protocol, SessionFailedSchema } from '../../proto/gen/mpc/v1/session_pb.ts';
import { SessionHub, type SessionOutcome } from '../../coordinator/sessions/session-hub.ts';
import { createLogger } from '../../common/logger.ts';

function hub() {
  const h = new SessionHub({ send: () => true, isAttached: (id) => id !== 'gone' }, createLogger('hub-test', 'silent'));
  let n = 0;
  const run = (nodeIds = ['n1', 'n2']) => {
    const sessionId = new Uint8Array(32).fill(++n);
    const outcome = h.run({
      sessionId, requestId: '', protocol: Protocol.SIGN_SCHNORR, keyId: 'k', params: new Uint8Array(), timeoutMs: 5_000,
      parties: nodeIds.map((nodeId, i) => create(PartySchema, { nodeId, index: i + 1 })),
    });
    const fail = (nodeId: string, code: string, message: string, culprits: string[] = []) =>
      h.fromNode(nodeId, { case: 'failed', value: create(SessionFailedSchema, { sessionId, code, message, culprits }) });
    return { outcome, fail };
  };
  return { run };
}

function failed(o: SessionOutcome): Extract<SessionOutcome, { ok: false }> {
  if (o.ok) throw new Error('expected the session to fail');
  return o;
}

t.test('a registered code is the report\'s code', async (t) => {
  const { run } = hub();
  const s = run();
  s.fail('n2', 'digest_mismatch', 'not the intent\'s digest');
  const o = failed(await s.outcome);
  t.equal(o.code, 'party_failed');
  t.same(o.reports, [{ nodeId: 'n2', code: 'digest_mismatch', message: 'not the intent\'s digest', culprits: [] }]);
});

t.test('an unregistered code becomes party_failed, the node\'s code kept in the message', async (t) => {
  const { run } = hub();
  const s = run();
  s.fail('n1', 'made_up_code', 'something new', ['n2']);
  const o = failed(await s.outcome);
  t.same(o.reports, [{ nodeId: 'n1', code: 'party_failed', message: 'unregistered code "made_up_code": something new', culprits: ['n2'] }]);
  t.same(o.culprits, ['n2']);
});

t.test('what a node reports is bounded', async (t) => {
  const { run } = hub();
  const s = run();
  s.fail('n1', 'x'.repeat(5000), 'y'.repeat(50_000), Array.from({ length: 1000 }, (_, i) => `n${i}`.repeat(100)));
  const [r] = failed(await s.outcome).reports;
  t.equal(r!.code, 'party_failed');
  t.ok(r!.message.length < 1200, 'message bounded');
  t.equal(r!.culprits.length, 64, 'culprit count bounded');
  t.ok(r!.culprits.every((c) => c.length <= 128), 'culprit ids bounded');
});

t.test('a party that is not attached fails the session before it opens', async (t) => {
  const { run } = hub();
  const o = failed(await run(['n1', 'gone']).outcome);
  t.same({ code: o.code, culprits: o.culprits }, { code: 'node_not_attached', culprits: ['gone'] });
});

t.test('a session that makes no progress for progressMs ends as a timeout naming the parties behind, long before its deadline', async (t) => {
  const h = new SessionHub({ send: () => true, isAttached: () => true }, createLogger('hub-test', 'silent'));
  const sessionId = new Uint8Array(32).fill(0xaa);
  const started = Date.now();
  const outcome = h.run({
    sessionId, requestId: '', protocol: Protocol.SIGN_ECDSA, keyId: 'k', params: new Uint8Array(), timeoutMs: 60_000, progressMs: 300,
    parties: ['n1', 'n2', 'n3'].map((nodeId, i) => create(PartySchema, { nodeId, index: i + 1 })),
  });
  const send = (from: string) => h.fromNode(from, { case: 'send', value: { envelope: create(EnvelopeSchema, { sessionId, from, to: '', round: 1, body: new Uint8Array([1]) }) } });
  // Round 1 from n1 and n3; n2 is frozen. Then steady traffic from n1 for longer than progressMs in all.
  send('n1');
  send('n3');
  for (let i = 0; i < 4; i++) {
    await new Promise((r) => setTimeout(r, 150));
    send('n1');
  }
  const o = failed(await outcome);
  t.equal(o.code, 'timeout');
  t.same(o.culprits, ['n2'], 'the party that sent the fewest messages is named');
  t.ok(Date.now() - started >= 600, 'progress kept the session alive past progressMs');
  t.ok(Date.now() - started < 5_000, 'it ended at the round deadline, not the session deadline');
});

t.test('without progressMs a quiet session waits for its deadline', async (t) => {
  const h = new SessionHub({ send: () => true, isAttached: () => true }, createLogger('hub-test', 'silent'));
  const sessionId = new Uint8Array(32).fill(0xbb);
  const started = Date.now();
  const o = failed(await h.run({
    sessionId, requestId: '', protocol: Protocol.DKG, keyId: 'k', params: new Uint8Array(), timeoutMs: 700,
    parties: ['n1', 'n2'].map((nodeId, i) => create(PartySchema, { nodeId, index: i + 1 })),
  }));
  t.equal(o.code, 'timeout');
  t.same(o.culprits, ['n1', 'n2']);
  t.ok(Date.now() - started >= 650);
});
