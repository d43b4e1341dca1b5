// A payment's states with a real batch member action (docs/platform/payments.md "States"): a BYO member
// signed in at a real OpenID provider (oidc-provider-fixture.ts) approves the payment's transfers as one
// batch with purpose {type: "payment"}; the authorizer refuses any other batch; each intent becomes a
// vault-API transaction through POST /v1/transactions with the signing session; the sweep moves the
// payment to submitted, then to confirmed (ledger entries, payment.confirmed) or failed once the
// transactions end. An expired action puts it back; a cancel revokes the action, and a cancel racing the
// member's submission has exactly one winner.
import t, { type Test } from 'tap';
import { paymentsApp, withMember, ASSET, PLATFORM_COLLECTOR, TENANT_COLLECTOR } from './payments-app.ts';
import { PAYMENTS } from '../../../api/payments/collections.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import { ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { LEDGER_ENTRIES } from '../../../api/ledger/collections.ts';
import { holderStablecoin, PlatformLedger } from '../../../api/ledger/platform-ledger.ts';
import { platformFees, tenantFees } from '../../../api/payments/payments.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';

const AMOUNT = 1_000_000n;

async function setup(t: Test) {
  let skew = 0;
  const s = await paymentsApp(t, { clock: () => Date.now() + skew });
  const m = await withMember(t, s, () => skew);
  return { ...m, advance: (sec: number) => { skew += sec * 1000; } };
}

t.test('approved as one batch, submitted, confirmed: the ledger records the principal and each fee once', async (t) => {
  const s = await setup(t);
  const p = await s.pay();
  const { actionId, signing, intents } = await s.approve(p);
  t.match(await s.get(p.id), { status: 'authorizing', member_action_id: actionId, next_action: null }, 'the action began: authorizing');
  t.equal((await s.submit(intents[0]!, signing)).statusCode, 202);
  await s.service.runDue();
  t.equal((await s.get(p.id)).status, 'authorizing', 'one of three intents submitted: still authorizing');
  const late = await s.bearer('POST', `/v1/payments/${p.id}/cancel`);
  t.match([late.statusCode, late.json().code], [409, 'invalid_transition'], 'a transaction exists: no cancel');
  for (const i of intents.slice(1)) t.equal((await s.submit(i, signing)).statusCode, 202);
  await s.service.runDue();
  const submitted = await s.get(p.id);
  t.equal(submitted.status, 'submitted');
  t.same(submitted.transactions.map((x) => x.role), ['principal', 'tenant_fee', 'platform_fee']);
  for (const x of submitted.transactions.slice(0, 2)) await s.end(x.transaction_id, 'final');
  await s.service.runDue();
  t.equal((await s.get(p.id)).status, 'submitted', 'two of three final: still submitted');
  await s.end(submitted.transactions[2]!.transaction_id, 'final');
  await s.service.runDue();
  await s.service.runDue();
  const done = await s.get(p.id);
  t.match(done, { status: 'confirmed', failure_reason: null });
  t.same(await s.history(p.id), [['requires_authorization', null], ['authorizing', null], ['submitted', null], ['confirmed', null]]);
  t.same(await s.hooks('payment.confirmed'), [{ payment_id: p.id, status: 'confirmed', account_holder_id: s.ada.id, amount: AMOUNT.toString(), asset: ASSET, fees_total: '4006' }], 'one payment.confirmed');

  const ledger = new PlatformLedger(s.store);
  t.equal(await ledger.balance(holderStablecoin(s.ada.id, ASSET), ASSET), -(AMOUNT + 4006n), 'the payer paid the principal and both fees');
  t.equal(await ledger.balance(holderStablecoin(s.bob.id, ASSET), ASSET), AMOUNT);
  t.equal(await ledger.balance(tenantFees(s.acme.sandbox.id), ASSET), 3001n);
  t.equal(await ledger.balance(platformFees(), ASSET), 1005n);
  const entries: string[] = [];
  for await (const e of LEDGER_ENTRIES.in(s.store).all()) entries.push(e.source);
  t.same(entries.sort(), [`${p.id}/platform_fee`, `${p.id}/principal`, `${p.id}/tenant_fee`], 'one entry per transfer, keyed by its source');
  t.equal((await PAYMENTS.in(s.store).byIndex('open\x00', 10)).length, 0, 'nothing left for the sweep');
  t.same([TENANT_COLLECTOR, PLATFORM_COLLECTOR], p.transfers.slice(1).map((x) => x.to));
});

t.test('the authorizer refuses a batch that is not exactly the payment\'s transfers, another member, another workspace\'s payment, and a second live action', async (t) => {
  const s = await setup(t);
  const p = await s.pay();
  const count = async () => {
    let n = 0;
    for await (const _ of ACTION_COLLECTIONS.actions.in(s.store).all()) n++;
    return n;
  };
  const refuse = async (what: string, r: Promise<{ statusCode: number; json(): { code: string } }>, status: number, code: string) => {
    const before = [await count(), JSON.stringify(await PAYMENTS.in(s.store).get(p.id))];
    const x = await r;
    t.match([x.statusCode, x.json().code], [status, code], what);
    t.same([await count(), JSON.stringify(await PAYMENTS.in(s.store).get(p.id))], before, `${what}: no action stored, the payment unchanged`);
  };
  const good = s.intentsOf(p);
  await refuse('the transfers in another order', s.begin(p, [good[1]!, good[0]!, good[2]!]), 422, 'validation_failed');
  await refuse('a fee left out', s.begin(p, good.slice(0, 2)), 422, 'validation_failed');
  await refuse('another amount', s.begin(p, s.intentsOf(p, (i) => (i === 0 ? { amount: '999999' } : {}))), 422, 'validation_failed');
  await refuse('another recipient', s.begin(p, s.intentsOf(p, (i) => (i === 0 ? { to: '0x00000000000000000000000000000000000a11ce' } : {}))), 422, 'validation_failed');
  await refuse('another idempotency key', s.begin(p, s.intentsOf(p, (i) => (i === 2 ? { idempotencyKey: 'mine' } : {}))), 422, 'validation_failed');
  await refuse('the native asset', s.begin(p, s.intentsOf(p, () => ({ asset: 'native' }))), 422, 'validation_failed');
  await refuse('an unknown payment', s.begin(p, good, s.alice.session, 'pay_00000000000000000000000000'), 404, 'not_found');
  const h = (await ACCOUNT_HOLDERS.in(s.store).get(s.ada.id))!;
  await s.store.batch([ACCOUNT_HOLDERS.putOp(h.id, { ...h, member_id: 'mem_someoneelse' })]);
  await refuse('a member who is not the payer\'s', s.begin(p, good), 403, 'member_subject_mismatch');
  await s.store.batch([ACCOUNT_HOLDERS.putOp(h.id, h)]);

  const first = await s.begin(p, good);
  t.equal(first.statusCode, 201, first.body);
  await refuse('a second action while the first is live', s.begin(p, s.intentsOf(p)), 409, 'invalid_transition');
  const canceled = await s.pay();
  t.equal((await s.bearer('POST', `/v1/payments/${canceled.id}/cancel`)).statusCode, 200);
  const x = await s.begin(canceled, s.intentsOf(canceled));
  t.match([x.statusCode, x.json().code], [409, 'invalid_transition'], 'a canceled payment is approved by no one');
});

t.test('an action that expires unused puts the payment back; a new action takes it; one that ends half used fails it', async (t) => {
  const s = await setup(t);
  const p = await s.pay();
  const b = await s.begin(p, s.intentsOf(p));
  t.equal(b.statusCode, 201, b.body);
  const half = await s.pay();
  const h = await s.approve(half);
  t.equal((await s.submit(h.intents[0]!, h.signing)).statusCode, 202);
  await s.service.runDue();
  t.equal((await s.get(p.id)).status, 'authorizing', 'still within its lifetime');
  t.equal((await s.get(half.id)).status, 'authorizing', 'one of three submitted, the signing session still open');
  s.advance(601);
  await s.service.runDue();
  t.match(await s.get(p.id), { status: 'requires_authorization', member_action_id: null });
  t.same((await s.history(p.id)).at(-1), ['requires_authorization', 'authorization_expired']);
  t.match(await s.get(half.id), { status: 'failed', failure_reason: 'authorization_incomplete' }, 'the signing session ended with one of three submitted');
  t.same(await s.hooks('payment.failed'), [{ payment_id: half.id, status: 'failed', account_holder_id: s.ada.id, reason: 'authorization_incomplete' }]);
  const again = await s.approve(p);
  t.match(await s.get(p.id), { status: 'authorizing', member_action_id: again.actionId }, 'a new action takes the payment');
});

t.test('a transaction that fails or is dropped fails the payment; nothing reaches the ledger', async (t) => {
  const s = await setup(t);
  const p = await s.pay();
  const a = await s.approve(p);
  for (const i of a.intents) t.equal((await s.submit(i, a.signing)).statusCode, 202);
  await s.service.runDue();
  const sub = await s.get(p.id);
  await s.end(sub.transactions[0]!.transaction_id, 'final');
  await s.end(sub.transactions[1]!.transaction_id, 'failed', 'dropped: nonce 7 was used by another transaction of the wallet');
  await s.service.runDue();
  t.match(await s.get(p.id), { status: 'failed', failure_reason: 'transaction_dropped' });
  let n = 0;
  for await (const _ of LEDGER_ENTRIES.in(s.store).all()) n++;
  t.equal(n, 0, 'no ledger entry for a failed payment');
  const c = await s.bearer('POST', `/v1/payments/${p.id}/cancel`);
  t.match([c.statusCode, c.json().code], [409, 'invalid_transition'], 'a failed payment is final');
});

t.test('cancel while authorizing revokes the action; a cancel racing the member\'s submission has exactly one winner', async (t) => {
  const s = await setup(t);
  const p = await s.pay();
  const a = await s.approve(p);
  const c = await s.bearer('POST', `/v1/payments/${p.id}/cancel`);
  t.equal(c.statusCode, 200, c.body);
  t.equal(c.json().status, 'canceled');
  t.equal((await ACTION_COLLECTIONS.actions.in(s.store).get(a.actionId))!.status, 'revoked', 'the member action is revoked with it');
  const after = await s.submit(a.intents[0]!, a.signing);
  t.equal(after.statusCode >= 400, true, `the revoked signing session takes nothing: ${after.statusCode} ${after.json().code}`);
  t.same(await s.hooks('payment.cancelled'), [{ payment_id: p.id, status: 'canceled', account_holder_id: s.ada.id }], 'payment.cancelled sent');
  t.equal((await PAYMENTS.in(s.store).get(p.id))!.unsent_event, null);
  t.same(await s.history(p.id), [['requires_authorization', null], ['authorizing', null], ['canceled', null]]);

  // The race, several times: the cancel and the first submission of a completed action, at once.
  const outcomes = new Set<string>();
  for (let round = 0; round < 4; round++) {
    const q = await s.pay();
    const x = await s.approve(q);
    // Started in either order, so both winners are exercised.
    const [cancel, tx] = round % 2 === 0
      ? await Promise.all([s.bearer('POST', `/v1/payments/${q.id}/cancel`), s.submit(x.intents[0]!, x.signing)])
      : await Promise.all([s.submit(x.intents[0]!, x.signing), s.bearer('POST', `/v1/payments/${q.id}/cancel`)]).then(([a, b]) => [b, a] as const);
    const stored = (await PAYMENTS.in(s.store).get(q.id))!;
    if (cancel.statusCode === 200) {
      t.ok(tx.statusCode >= 400, `round ${round}: the cancel won, the submission is refused (${tx.statusCode})`);
      t.equal(stored.status, 'canceled');
      let made = 0;
      for await (const r of TRANSACTIONS.in(s.store).all()) if (r.idempotency_key === x.intents[0]!.key) made++;
      t.equal(made, 0, 'no transaction exists for it');
      outcomes.add('cancel');
    } else {
      t.match([cancel.statusCode, cancel.json().code, tx.statusCode], [409, 'invalid_transition', 202], `round ${round}: the submission won, the cancel is 409`);
      t.equal(stored.status, 'authorizing', 'the payment goes ahead');
      outcomes.add('submit');
    }
  }
  t.ok(outcomes.size >= 1, `outcomes seen: ${[...outcomes].join(', ')}`);
});

t.test('the sweep sends an event a cancel recorded but could not send, and logs a payment it cannot advance by id and code only', async (t) => {
  const s = await setup(t);
  const p = await s.pay();
  // A cancel through a revocation whose process stopped before the webhook: the state says it is unsent.
  const stored = (await PAYMENTS.in(s.store).get(p.id))!;
  const canceled = { ...stored, status: 'canceled' as const, unsent_event: 'payment.cancelled' as const };
  await s.store.batch([PAYMENTS.putOp(p.id, canceled, { index: [`open\x00${p.id}`] })]);
  t.equal(await s.service.runDue(), 1, 'the sweep finds it');
  t.same(await s.hooks('payment.cancelled'), [{ payment_id: p.id, status: 'canceled', account_holder_id: s.ada.id }], 'sent once');
  t.equal((await PAYMENTS.in(s.store).get(p.id))!.unsent_event, null);
  t.equal(await s.service.runDue(), 0, 'and no longer open');

  // Member actions that cannot answer: the payment stays as it is, and the log names only its id and the code.
  const q = await s.pay();
  const a = await s.approve(q);
  s.service.useMemberActions({
    registerPurpose: () => undefined,
    batchTransactions: async () => { throw new CustodyError('unavailable', `the store holding ${a.actionId} for 1000000 units is unavailable`); },
    revoke: async () => ({ usedAny: false }),
  });
  await s.service.runDue();
  t.equal((await s.get(q.id)).status, 'authorizing', 'unchanged');
  t.same(s.warnings, [{ payment_id: q.id, category: 'unavailable' }], 'id and code, never an amount or a message');
});
