// The coordinator's request ids (docs/sessions.md "Request ids") and the session contract on its side,
// with fake nodes answering the real session hub: a malformed id or request is refused before any session
// opens; a good id is in every SessionOpen of the request, retries included, each under a fresh session
// id; the nodes get the request's own bytes, and their results come back as bytes.
import t, { type Test } from 'tap';
import { create } from '@bufbuild/protobuf';
import { SessionHub, type ToNode } from '../../coordinator/sessions/session-hub.ts';
import { deriveSessionId, SESSION_ID_TAG } from '../../coordinator/sessions/session-id.ts';
import { SessionDoneSchema, SessionFailedSchema } from '../../proto/gen/mpc/v1/session_pb.ts';
import { signParams, signResult } from '../../core/session/session-contract.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { InputError } from '../../core/errors/protocol-errors.ts';
import { taggedHash } from '../../core/codec/transcript.ts';
import { createLogger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import { activeVault, fill, vaultServiceFixture } from './vault-service-fixture.ts';
import { fixtureSigner } from './fixture-signer.ts';
import { sessionIdProblem, sessionIdTime } from '../../core/session/session-id.ts';


interface Opened {
  nodeId: string;
  sessionId: Uint8Array;
  requestId: string;
  params: Uint8Array;
  deadlineMs: bigint;
}

// The coordinator checks every result's signatures (docs/sessions.md "Checked results"): the nodes sign.
const signer = fixtureSigner(0x5an);
const signedAs = (params: Uint8Array) => {
  const p = signParams.decode(params);
  return signer.sign(p.path, p.scheme, p.digests);
};

/** A key service over a real hub whose nodes are this test: `answer` says what each party reports. */
async function setup(t: Test, answer: (o: Opened, nth: number) => { culprits: string[] } | 'done') {
  const opened: Opened[] = [];
  const sessions: string[] = [];
  const hub: SessionHub = new SessionHub({
    isAttached: () => true,
    send(nodeId: string, msg: ToNode) {
      if (msg.body?.case !== 'open') return true;
      const o = msg.body.value;
      const open: Opened = { nodeId, sessionId: o.sessionId as Uint8Array, requestId: o.requestId ?? '', params: o.params as Uint8Array, deadlineMs: o.deadlineMs ?? 0n };
      opened.push(open);
      const sid = toHex(open.sessionId);
      if (!sessions.includes(sid)) sessions.push(sid);
      const a = answer(open, sessions.indexOf(sid));
      queueMicrotask(() => hub.fromNode(nodeId, a === 'done'
        ? { case: 'done', value: create(SessionDoneSchema, { sessionId: open.sessionId, result: signResult.encode(signedAs(open.params)) }) }
        : { case: 'failed', value: create(SessionFailedSchema, { sessionId: open.sessionId, code: 'bad_proof', message: 'a proof does not verify', culprits: a.culprits }) }));
      return true;
    },
  }, createLogger('test', 'silent'));
  const { keys } = await vaultServiceFixture(t, { hub, vaults: [activeVault(4, { publicKey: signer.publicKey, chainCode: signer.chainCode })] });
  return { keys, opened };
}

const request = {
  vaultId: 'vault-1', path: [86, 1, 0, 0, 3], scheme: 'taproot' as const, digests: [fill(32, 0xd1), fill(32, 0xd2)],
  intent: fill(120, 0x1e), intentSignature: fill(64, 0x51), apiKeyId: 'key_1', template: fill(200, 0x7e), endUserToken: '', trustLog: [fill(9, 0xe1)],
};

t.test('a malformed request id is refused as invalid_request before any session opens', async (t) => {
  const { keys, opened } = await setup(t, () => 'done');
  for (const requestId of ['txn/1', 'with space', 'x'.repeat(129), 'é']) {
    const err = await keys.sign({ ...request, requestId }).catch((e: unknown) => e);
    t.ok(err instanceof CustodyError && err.code === 'invalid_request' && err.kind === 'invalid', `${JSON.stringify(requestId)}: invalid_request (INVALID_ARGUMENT)`);
    t.match((err as Error).message, /request_id/);
  }
  await t.rejects(keys.createVault({ vaultId: 'vault-2', owner: 'org_acme', tier: 'hosted', requestId: 'a/b' }), { code: 'invalid_request' });
  await t.rejects(keys.reshare({ vaultId: 'vault-1', requestId: 'a/b' }), { code: 'invalid_request' });
  // So is a malformed request, by the session contract's encoder.
  const short = await keys.sign({ ...request, digests: [fill(31, 1)] }).catch((e: unknown) => e);
  t.ok(short instanceof InputError && short.code === 'bad_params', 'a 31-byte digest: bad_params');
  const unsigned = await keys.sign({ ...request, intentSignature: new Uint8Array() }).catch((e: unknown) => e);
  t.ok(unsigned instanceof InputError && unsigned.code === 'bad_params', 'no intent signature: bad_params');
  t.equal(opened.length, 0, 'no session opened');
});

t.test('a request id is in every SessionOpen of the request, retries included, each under a fresh session id', async (t) => {
  // The first session fails with n1 naming n2; the retry never seats the two together.
  const { keys, opened } = await setup(t, (o, nth) => (nth === 0 && o.nodeId === 'n1' ? { culprits: ['n2'] } : 'done'));
  const out = await keys.sign({ ...request, requestId: 'txn_0193a1b2:1' });
  t.equal(out.signers.length, 2);
  t.ok(out.signers.includes('n3') && !(out.signers.includes('n1') && out.signers.includes('n2')), 'the retry does not seat the blamer with the blamed');
  const expected = signer.sign(request.path, request.scheme, request.digests);
  t.same(out.signatures, expected.signatures, 'the signatures come back as bytes');
  t.same(out.publicKey, expected.publicKey);
  const ids = [...new Set(opened.map((o) => toHex(o.sessionId)))];
  t.equal(ids.length, 2, 'two sessions');
  t.ok(opened.every((o) => o.sessionId.length === 32), '32-byte session ids');
  // Nodes refuse an open whose deadline is not its id's (core/session/session-id.ts).
  t.ok(opened.every((o) => o.deadlineMs === sessionIdTime(o.sessionId) && sessionIdProblem(o.sessionId, o.deadlineMs, Date.now()) === undefined), 'each id carries the deadline its open names, and a node would take it');
  t.ok(opened.every((o) => o.requestId === 'txn_0193a1b2:1'), 'every open names the request');
  // The nodes get the request's own bytes, no hex round trip, at the key's epoch.
  for (const o of opened) {
    const p = signParams.decode(o.params);
    const { vaultId, ...rest } = request;
    t.same({ ...p, epoch: undefined }, { ...rest, keyId: vaultId, epoch: undefined }, 'the nodes get the vault id as the key id');
    t.equal(p.epoch, 4);
  }
  // The same request id again: other session ids.
  opened.length = 0;
  await keys.sign({ ...request, requestId: 'txn_0193a1b2:1' });
  t.notOk(opened.some((o) => ids.includes(toHex(o.sessionId))), 'a session id is never reused');
  // No request id: sessions run as before, with an empty one.
  opened.length = 0;
  await keys.sign(request);
  t.ok(opened.length > 0 && opened.every((o) => o.requestId === ''), 'empty when the caller sends none');
});

t.test('session ids: the deadline, then a tagged hash of the request id, the ordinal, the deadline and 32 fresh bytes', async (t) => {
  const fresh = fill(32, 9);
  const at = 1_800_000_000_123;
  const id = deriveSessionId('txn_1', 0, at, fresh);
  t.equal(id.length, 32);
  t.equal(sessionIdTime(id), BigInt(at), 'the first 8 bytes are the deadline, big-endian ms');
  t.same(id.subarray(8), taggedHash(SESSION_ID_TAG, ['txn_1', 0, BigInt(at), fresh]).subarray(0, 24));
  t.equal(SESSION_ID_TAG, 'custody/session-id/v2');
  t.notSame(deriveSessionId('txn_1', 0, at, fresh), deriveSessionId('txn_1', 1, at, fresh), 'the ordinal is bound');
  t.notSame(deriveSessionId('txn_1', 0, at, fresh), deriveSessionId('txn_2', 0, at, fresh), 'the request id is bound');
  t.notSame(deriveSessionId('txn_1', 0, at, fresh).subarray(8), deriveSessionId('txn_1', 0, at + 1, fresh).subarray(8), 'the deadline is bound in the hash too');
  t.notSame(deriveSessionId('txn_1', 0, at), deriveSessionId('txn_1', 0, at), 'fresh bytes each time');
  t.throws(() => deriveSessionId('txn_1', 0, at, fill(31, 9)));
  t.ok(Buffer.compare(deriveSessionId('z', 0, at), deriveSessionId('a', 0, at + 1)) < 0, 'ids sort by deadline');
});
