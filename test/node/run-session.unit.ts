// The session runner authorizes every kind at one point: a kind that sends before authorization
// (a request-independent first round) gets no payload until `authorize` resolved, and preflight's
// holdings are released when a session is refused before its protocol exists.
import t from 'tap';
import { create } from '@bufbuild/protobuf';
import { runSession } from '../../node/runtime/sessions/run-session.ts';
import type { SessionKind } from '../../node/runtime/sessions/session-kind.ts';
import type { PartyProtocol } from '../../node/runtime/party-protocol.ts';
import { SessionRefused, type SessionContext } from '../../node/runtime/session-host.ts';
import { SessionOpenSchema, Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';

const TEST_AUTHORIZATION = { by: 'customer', evidence: 'a toy grant' } as const;

const ctx: SessionContext = { open: create(SessionOpenSchema, { sessionId: new Uint8Array(32), protocol: Protocol.SIGN_SCHNORR }), myIndex: 1, parties: [] };

function recorder(events: string[]): PartyProtocol {
  return {
    start: () => (events.push('start'), { kind: 'continue', out: [{ to: 'all', round: 1, payload: new Uint8Array([1]) }] }),
    deliver: () => (events.push('deliver'), { kind: 'continue', out: [] }),
    dispose: () => events.push('dispose'),
  };
}

t.test('a request-independent first round goes out, and nothing is delivered before authorize resolves', async (t) => {
  const events: string[] = [];
  let pass!: () => void;
  const kind: SessionKind<number, void, string, never> = {
    authorization: TEST_AUTHORIZATION,
    firstRoundIndependent: true,
    parse: () => 7,
    preflight: async () => void events.push('preflight'),
    authorize: () => (events.push('authorize'), new Promise<string>((resolve) => (pass = () => resolve('grant')))),
    run: () => (events.push('run'), recorder(events)),
  };
  const p = await runSession(kind, ctx);
  const first = await p.start();
  t.equal(first.kind, 'continue', 'the first round is sent');
  t.throws(() => p.deliver(2, 1, new Uint8Array([1]), true), /before the session was authorized/, 'a payload before authorization fails the session');
  const admitted = p.admit!();
  await Promise.resolve();
  t.throws(() => p.deliver(2, 1, new Uint8Array([1]), true), /before the session was authorized/, 'still refused while authorize runs');
  pass();
  await admitted;
  await p.deliver(2, 1, new Uint8Array([1]), true);
  t.same(events, ['preflight', 'run', 'start', 'authorize', 'deliver']);
});

t.test('a refused authorization keeps the early kind from delivering', async (t) => {
  const kind: SessionKind<number, void, string, never> = {
    authorization: TEST_AUTHORIZATION,
    firstRoundIndependent: true,
    parse: () => 7,
    preflight: async () => {},
    authorize: async () => {
      throw new SessionRefused('bad_intent_signature', 'no');
    },
    run: () => recorder([]),
  };
  const p = await runSession(kind, ctx);
  await p.start();
  await t.rejects(p.admit!(), { code: 'bad_intent_signature' });
  t.throws(() => p.deliver(2, 1, new Uint8Array([1]), true), /before the session was authorized/);
});

t.test('other kinds are built only after authorize, and a refusal releases what preflight holds', async (t) => {
  const events: string[] = [];
  const kind: SessionKind<number, string, string, never> = {
    authorization: TEST_AUTHORIZATION,
    parse: () => 7,
    preflight: async () => 'held',
    authorize: async () => {
      throw new SessionRefused('bad_creation_request', 'no');
    },
    release: (local) => void events.push(`release ${local}`),
    run: () => (events.push('run'), recorder(events)),
  };
  await t.rejects(runSession(kind, ctx), { code: 'bad_creation_request' });
  t.same(events, ['release held'], 'never run, and released');
});

t.test('commit receives the grant and the run output before the result leaves', async (t) => {
  const stored: string[] = [];
  const kind: SessionKind<number, void, string, string> = {
    authorization: TEST_AUTHORIZATION,
    parse: () => 7,
    preflight: async () => {},
    authorize: async () => 'grant',
    run: (_s, keep) => ({ start: () => ({ kind: 'done', out: [], ...keep(new Uint8Array([9]), 'secret') }), deliver: () => ({ kind: 'continue', out: [] }), dispose() {} }),
    commit: async ({ grant }, output) => void stored.push(`${grant}:${output}`),
  };
  const p = await runSession(kind, ctx);
  const step = await p.start();
  t.equal(step.kind, 'done');
  if (step.kind === 'done') await step.commit?.();
  t.same(stored, ['grant:secret']);
});
