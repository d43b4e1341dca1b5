// Batch member actions through the API (docs/platform/member-actions.md "Batch actions"): one fresh
// proof from the real OpenID provider approves an ordered list of intents of one wallet; the signing
// session then takes each intent of the list once, and the binding each job forwards to the nodes
// carries the list its nonce commits to. Revoking an action nothing was signed from wins over a later
// submission; one with a submitted intent cannot be revoked.
import t from 'tap';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { memberActionBatchNonce, memberActionNonceFor } from '../../../core/auth/member-action.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import { TX_JOBS } from '../../../api/transactions/collections.ts';
import { memberActionOfJob } from '../../../api/transactions/records.ts';
import { memberActionSetup as setup, P, type Begun, type Completed } from './member-action-harness.ts';

type Intent = ReturnType<Awaited<ReturnType<typeof setup>>['intent']>;
interface BatchBegun extends Begun { kind: string; intents_sha256: string[] }
const digestOf = (i: Intent) => bytesToHex(sha256(i.bytes));
const sessionHash = (id: string) => bytesToHex(sha256(new TextEncoder().encode(id)));

t.test('one proof approves a batch; the signing session takes each intent of it once, and nothing else', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const [a, b, c] = [h.intent(h.wallet, '1000'), h.intent(h.wallet, '25'), h.intent(h.wallet, '7')];
  const r = await h.bff('POST', P.begin, { kind: 'transaction.sign_batch', wallet_id: h.wallet.id, intents: [a.b64, b.b64] }, { session });
  t.equal(r.statusCode, 201, r.body);
  const begun = r.json() as BatchBegun;
  t.match(begun, { kind: 'transaction.sign_batch', status: 'pending_proof', intent_sha256: digestOf(a), intents_sha256: [digestOf(a), digestOf(b)] });
  const stored = (await ACTION_COLLECTIONS.actions.in(h.store).get(begun.id))!;
  t.equal(begun.proof.nonce, memberActionBatchNonce(begun.id, hexToBytes(stored.salt), [digestOf(a), digestOf(b)]), 'the nonce commits to the ordered list');

  const idToken = await h.op.signIn({ sub: 'alice', nonce: begun.proof.nonce, maxAge: 300 });
  const c1 = await h.complete(session, begun.id, idToken);
  t.equal(c1.statusCode, 200, c1.body);
  const done = c1.json() as Completed;
  const url = new URL(done.signing_session.signing_url, 'http://api.test').pathname;

  // An intent of the same wallet outside the batch: refused, nothing used.
  const outside = await h.submit(c, { member_signing_session: done.signing_session.id });
  t.match([outside.statusCode, outside.json().code], [403, 'signing_session_mismatch']);

  const txA = await h.submit(a, { member_signing_session: done.signing_session.id });
  t.equal(txA.statusCode, 202, txA.body);
  const half = (await h.bff('GET', url, undefined, { session })).json();
  t.match(half, { status: 'active', operation: { kind: 'transaction.sign_batch', intents_sha256: [digestOf(a), digestOf(b)] }, transaction_ids: [txA.json().id, null] }, 'active until every intent is submitted');
  t.not((await ACTION_COLLECTIONS.signing.in(h.store).get(sessionHash(done.signing_session.id)))!.sealed_proof, null, 'the proof stays sealed for the rest of the batch');

  // The same intent again under another idempotency key cannot be made (the key is in the intent); a
  // replay of the same request answers the same transaction without using the session again.
  t.equal((await h.submit(a, { member_signing_session: done.signing_session.id })).json().id, txA.json().id, 'a replay');

  const txB = await h.submit(b, { member_signing_session: done.signing_session.id });
  t.equal(txB.statusCode, 202, txB.body);
  t.match((await h.bff('GET', url, undefined, { session })).json(), { status: 'used', transaction_id: txA.json().id, transaction_ids: [txA.json().id, txB.json().id] });
  t.equal((await ACTION_COLLECTIONS.signing.in(h.store).get(sessionHash(done.signing_session.id)))!.sealed_proof, null, 'dropped once the batch is used');
  t.equal((await ACTION_COLLECTIONS.actions.in(h.store).get(begun.id))!.status, 'used');
  const late = await h.submit(c, { member_signing_session: done.signing_session.id });
  t.match([late.statusCode, late.json().code], [409, 'signing_session_used']);

  // Each job forwards the proof and the list: every node recomputes the batch nonce from it and the intent it signs.
  for (const [tx, i] of [[txA, a], [txB, b]] as const) {
    const job = (await TX_JOBS.in(h.store).get(tx.json().id))!;
    t.equal(job.end_user_token, idToken);
    t.same(job.member_action!.batch, [digestOf(a), digestOf(b)]);
    t.equal(memberActionNonceFor(memberActionOfJob(job.member_action!), digestOf(i)), begun.proof.nonce, 'the forwarded binding gives the signed nonce');
  }
  t.same(await h.memberActions().batchTransactions(begun.id), {
    status: 'used', expires_at: done.signing_session.expires_at,
    intents: [{ intent_sha256: digestOf(a), transaction_id: txA.json().id }, { intent_sha256: digestOf(b), transaction_id: txB.json().id }],
  });
});

t.test('a batch is checked as each of its intents would be, and refused whole; nothing is stored', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const other = await h.hostedWallet('alice');
  const a = h.intent();
  const before = await h.snapshot();
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['no intents', { intents: [] }, 400, 'invalid_request'],
    ['nine intents', { intents: Array.from({ length: 9 }, () => h.intent().b64) }, 400, 'invalid_request'],
    ['the same intent twice', { intents: [a.b64, a.b64] }, 400, 'invalid_request'],
    ['an intent of another wallet among them', { intents: [a.b64, h.intent(other).b64] }, 400, 'invalid_request'],
    ['an intent that is not one', { intents: [a.b64, Buffer.from('not an intent').toString('base64')] }, 400, 'invalid_request'],
    ['a purpose no one serves', { intents: [a.b64], purpose: { type: 'refund', id: 'x' } }, 400, 'invalid_request'],
    ['both shapes at once', { intents: [a.b64], intent: a.b64 }, 400, 'invalid_request'],
    ['no intents field', {}, 400, 'invalid_request'],
  ];
  for (const [what, body, status, code] of cases) {
    const r = await h.bff('POST', P.begin, { kind: 'transaction.sign_batch', wallet_id: h.wallet.id, ...body }, { session });
    t.match([r.statusCode, r.json().code], [status, code], `${what}: ${r.body}`);
  }
  for (const [what, body] of [['a list with kind transaction.sign', { intents: [a.b64] }], ['a purpose with kind transaction.sign', { intent: a.b64, purpose: { type: 'payment', id: 'pay_x' } }]] as const) {
    const r = await h.bff('POST', P.begin, { kind: 'transaction.sign', wallet_id: h.wallet.id, ...body }, { session });
    t.match([r.statusCode, r.json().code, r.json().error], [400, 'invalid_request', /transaction.sign_batch/], what);
  }
  t.equal(await h.snapshot(), before, 'no refusal stored anything');
});

t.test('revoke: wins over a later submission while nothing was signed; refused once an intent was submitted', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const approve = async (...intents: Intent[]) => {
    const begun = (await h.bff('POST', P.begin, { kind: 'transaction.sign_batch', wallet_id: h.wallet.id, intents: intents.map((i) => i.b64) }, { session })).json() as BatchBegun;
    const done = (await h.complete(session, begun.id, await h.op.signIn({ sub: 'alice', nonce: begun.proof.nonce, maxAge: 300 }))).json() as Completed;
    return { begun, done };
  };
  const [a, b] = [h.intent(h.wallet, '11'), h.intent(h.wallet, '12')];
  const first = await approve(a, b);
  let extraRan = 0;
  t.same(await h.memberActions().revoke(h.acme.org, first.begun.id, async () => { extraRan++; return []; }), { usedAny: false });
  t.equal(extraRan, 1, 'the caller\'s ops are committed with the revocation');
  const refused = await h.submit(a, { member_signing_session: first.done.signing_session.id });
  t.match([refused.statusCode, refused.json().code], [403, 'signing_session_invalid'], refused.body);
  t.match(await h.memberActions().batchTransactions(first.begun.id), { status: 'revoked', intents: [{ transaction_id: null }, { transaction_id: null }] });
  const url = new URL(first.done.signing_session.signing_url, 'http://api.test').pathname;
  t.match((await h.bff('GET', url, undefined, { session })).json(), { status: 'revoked' });

  // A pending action (no proof yet) is revoked too, and leaves the member's pending count.
  const pending = (await h.bff('POST', P.begin, { kind: 'transaction.sign_batch', wallet_id: h.wallet.id, intents: [h.intent().b64] }, { session })).json() as BatchBegun;
  t.same(await h.memberActions().revoke(h.acme.org, pending.id, async () => []), { usedAny: false });
  const late = await h.complete(session, pending.id, await h.op.signIn({ sub: 'alice', nonce: pending.proof.nonce, maxAge: 300 }));
  t.match([late.statusCode, late.json().code], [409, 'member_action_not_pending']);

  // Once an intent of the batch was submitted, revoke changes nothing and says so.
  const [c, d] = [h.intent(h.wallet, '13'), h.intent(h.wallet, '14')];
  const second = await approve(c, d);
  t.equal((await h.submit(c, { member_signing_session: second.done.signing_session.id })).statusCode, 202);
  t.same(await h.memberActions().revoke(h.acme.org, second.begun.id, async () => { extraRan++; return []; }), { usedAny: true });
  t.equal(extraRan, 1, 'nothing of the caller is committed');
  t.equal((await h.submit(d, { member_signing_session: second.done.signing_session.id })).statusCode, 202, 'the rest of the batch still goes through');

  // A revoke raced against submissions of the same batch: either the revoke wins and nothing is made, or a
  // submission wins and the revoke reports it; never both.
  for (let round = 0; round < 4; round++) {
    const [e, f] = [h.intent(h.wallet, `${20 + round}`), h.intent(h.wallet, `${30 + round}`)];
    const raced = await approve(e, f);
    const [rev, subE] = await Promise.all([
      h.memberActions().revoke(h.acme.org, raced.begun.id, async () => []),
      h.submit(e, { member_signing_session: raced.done.signing_session.id }),
    ]);
    t.ok(rev.usedAny === (subE.statusCode === 202), `round ${round}: revoke ${rev.usedAny ? 'lost' : 'won'}, submission ${subE.statusCode}`);
  }
});
