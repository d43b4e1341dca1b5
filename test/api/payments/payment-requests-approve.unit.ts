// Approving a payment request on a real anvil (docs/platform/payment-requests.md "Approve"): the payment
// is made by the payment service (kind payment_request, the request as reference) from the payer's wallet
// whose stablecoin balance is read on chain; a retry answers the same payment; a payment refused at
// creation is answered unchanged and leaves the request pending; approve, cancel and decline raced: one
// wins, the others are 409; a payment a crash left without its approval is found by the next transition.
import t, { type Test } from 'tap';
import { paymentRequestApp } from './payment-requests-app.ts';
import { paymentKeyOf } from '../../../api/payments/payment-requests.ts';
import { IDEMPOTENCY } from '../../../api/idempotency.ts';
import type { PaymentRecord } from '../../../api/payments/payment-records.ts';

const codeOf = (r: { statusCode: number; json(): { code: string } }) => ({ status: r.statusCode, code: r.json().code });

async function setup(t: Test) {
  const s = await paymentRequestApp(t, { anvil: true });
  const ann = await s.holder();
  const bob = await s.holder();
  await s.fund(bob.wallet.address, 10_000_000n);
  let n = 0;
  const create = async (o: Record<string, unknown> = {}) => {
    const r = await s.call('POST', '/v1/payment-requests', { requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset, ...o }, s.acme.owner, { 'idempotency-key': `c-${++n}` });
    if (r.statusCode !== 201) throw new Error(r.body);
    s.clock.now += 1000;
    return r.json() as { id: string; status: string };
  };
  const approve = (id: string, body: Record<string, unknown>, key: string | null, token = s.acme.owner) =>
    s.call('POST', `/v1/payment-requests/${id}/approve`, body, token, key === null ? {} : { 'idempotency-key': key });
  /** The payments made for the request. */
  const paymentsOf = async (id: string) => {
    const out: PaymentRecord[] = [];
    for await (const p of s.store.all('payments') as AsyncIterable<PaymentRecord>) if (p.reference?.id === id) out.push(p);
    return out;
  };
  return { s, ann, bob, create, approve, paymentsOf };
}

t.test('approve: the payment is made from the payer\'s wallet to the requester, answered with what the member approves; a retry answers the same payment', async (t) => {
  const { s, ann, bob, create, approve, paymentsOf } = await setup(t);
  const pr = await create({ memo: 'rent' });
  const r = await approve(pr.id, { source_wallet_id: bob.wallet.id }, 'ap-1');
  t.equal(r.statusCode, 200, 'approved');
  const body = r.json();
  t.match(body, { id: pr.id, status: 'approved', payment_id: /^pay_/, completed_at: new Date(s.clock.now).toISOString(), memo: 'rent' });
  const payment = body.payment;
  t.equal(payment.id, body.payment_id);
  t.match(payment, {
    status: 'requires_authorization', kind: 'payment_request', reference: { type: 'payment_request', id: pr.id },
    payer: { account_holder_id: bob.id, wallet_id: bob.wallet.id, address: bob.wallet.address.toLowerCase() },
    payee: { account_holder_id: ann.id, wallet_id: ann.wallet.id, address: ann.wallet.address.toLowerCase() },
    amount: '2500000', asset: s.asset,
    next_action: { type: 'member_action', member_action: { kind: 'transaction.sign_batch', wallet_id: bob.wallet.id, purpose: { type: 'payment', id: payment.id } } },
  }, 'the payment as GET /payments/{id} answers it');
  t.same(payment, (await s.call('GET', `/v1/payments/${payment.id}`)).json(), 'every field of it');
  t.match(payment.next_action.intents[0], { role: 'principal', from: bob.wallet.address.toLowerCase(), to: ann.wallet.address.toLowerCase(), amount: '2500000' });
  t.match((await s.call('GET', `/v1/payment-requests/${pr.id}`)).json(), { status: 'approved', payment_id: payment.id });

  const [ev] = await s.events('payment_request.approved');
  t.same(ev!.data, { payment_request_id: pr.id, status: 'approved', requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset, payment_id: payment.id });
  t.equal((await s.events('payment.created')).length, 1, 'the payment\'s own event');
  t.match(await s.audits('payment_request.approve', pr.id), [{ before: { status: 'pending' }, after: { status: 'approved', payment_id: payment.id } }]);

  // Retries: the same key and body answer the same payment, even when the route's own record of the
  // answer was lost (a crash after the approval); another body under the key is 409; another key is 409.
  const again = await approve(pr.id, { source_wallet_id: bob.wallet.id }, 'ap-1');
  t.equal(again.statusCode, 200);
  t.same(again.json(), body, 'the same answer');
  for await (const e of s.store.entries('idempotency')) if (e.id.includes('approve_payment_request')) await IDEMPOTENCY.in(s.store).delete(e.id);
  const afterLoss = await approve(pr.id, { source_wallet_id: bob.wallet.id }, 'ap-1');
  t.equal(afterLoss.statusCode, 200, 'answered again');
  t.equal(afterLoss.json().payment_id, payment.id, 'the same payment without the route\'s record');
  t.same(codeOf(await approve(pr.id, { source_wallet_id: ann.wallet.id }, 'ap-1')), { status: 409, code: 'idempotency_key_reused' });
  const other = await approve(pr.id, { source_wallet_id: bob.wallet.id }, 'ap-2');
  t.same(codeOf(other), { status: 409, code: 'invalid_transition' }, 'a second approval');
  t.match(other.json().error, new RegExp(`is approved \\(payment ${payment.id}\\)`));
  for (const verb of ['cancel', 'decline', 'remind']) t.same(codeOf(await s.call('POST', `/v1/payment-requests/${pr.id}/${verb}`)), { status: 409, code: 'invalid_transition' }, `${verb} of an approved request`);
  t.equal((await paymentsOf(pr.id)).length, 1, 'one payment');
});

t.test('approve refused: bad input and every refusal of the payment leave the request pending and change nothing', async (t) => {
  const { s, ann, bob, create, approve, paymentsOf } = await setup(t);
  const cy = await s.holder();
  const dee = await s.holder('suspended');
  const pr = await create();
  const poor = await create({ payer_account_holder_id: cy.id });
  const blocked = await create({ payer_account_holder_id: dee.id });
  await s.fund(dee.wallet.address, 10_000_000n);
  const quote = await s.call('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: bob.wallet.id, destination: { account_holder_id: ann.id }, amount: '2500000', asset: s.asset });
  t.equal(quote.statusCode, 201, 'quoted');

  const before = await s.snapshot();
  const rows: [string, string, Record<string, unknown>, string | null, number, string, string?][] = [
    ['no Idempotency-Key', pr.id, { source_wallet_id: bob.wallet.id }, null, 400, 'invalid_request'],
    ['an unknown field', pr.id, { source_wallet_id: bob.wallet.id, amount: '1' }, 'k', 400, 'invalid_request'],
    ['no source wallet', pr.id, {}, 'k', 400, 'invalid_request'],
    ['the requester\'s wallet', pr.id, { source_wallet_id: ann.wallet.id }, 'k1', 422, 'validation_failed', 'source_wallet_id'],
    ['an unknown wallet', pr.id, { source_wallet_id: 'wal_000000000000000000000000' }, 'k2', 422, 'validation_failed', 'source_wallet_id'],
    ['a quote of another kind (the payment\'s own error)', pr.id, { source_wallet_id: bob.wallet.id, quote_id: quote.json().id }, 'k3', 422, 'validation_failed', 'quote_id'],
    ['an unknown quote (the payment\'s own error)', pr.id, { source_wallet_id: bob.wallet.id, quote_id: 'pqt_00000000000000000000000000' }, 'k4', 404, 'not_found'],
    ['the payer\'s balance is short', poor.id, { source_wallet_id: cy.wallet.id }, 'k5', 403, 'insufficient_funds'],
    ['compliance blocks a suspended payer', blocked.id, { source_wallet_id: dee.wallet.id }, 'k6', 403, 'forbidden'],
  ];
  for (const [name, id, body, key, status, code, field] of rows) {
    const r = await approve(id, body, key);
    t.same(codeOf(r), { status, code }, name);
    if (field) t.ok((r.json().fields as { field: string }[]).some((f) => f.field === field), `${name}: names ${field}`);
  }
  t.equal(await s.snapshot(), before, 'no refusal wrote anything');
  for (const id of [pr.id, poor.id, blocked.id]) {
    t.equal((await s.call('GET', `/v1/payment-requests/${id}`)).json().status, 'pending', 'still pending');
    t.same(await paymentsOf(id), [], 'no payment');
  }

  // Once the payer holds enough, the same key goes through: a refusal stored nothing under it.
  await s.fund(cy.wallet.address, 2_500_000n);
  const ok = await approve(poor.id, { source_wallet_id: cy.wallet.id }, 'k5');
  t.equal(ok.statusCode, 200, 'approved once funded');
  t.equal(ok.json().payment.total_debit, '2500000', 'exactly the balance');
  t.same(codeOf(await approve(pr.id, { source_wallet_id: bob.wallet.id }, 'k5')), { status: 409, code: 'idempotency_key_reused' }, 'a key names one approval');
});

t.test('approve, cancel and decline raced: exactly one wins, the others are 409 naming the state; at most one payment', async (t) => {
  const { s, bob, create, approve, paymentsOf } = await setup(t);
  const wins: Record<string, number> = { approve: 0, cancel: 0, decline: 0 };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // Each round sends two approvals, a cancel and a decline, one side given a head start of 0 to 150 ms:
  // with the closing calls ahead they win; with the approvals ahead, the cancel and decline arrive while
  // the approval holds the request's lock (making its payment, reading the balance on chain); with none,
  // whoever is quicker.
  const rounds: [approveDelay: number, closeDelay: number][] = [[150, 0], [10, 0], [0, 0], [0, 0], [0, 10], [0, 150]];
  for (const [round, [approveDelay, closeDelay]] of rounds.entries()) {
    const pr = await create({ amount: '1000' });
    const later = <T>(ms: number, f: () => Promise<T>) => sleep(ms).then(f);
    type Res = Awaited<ReturnType<typeof approve>>;
    const calls: [string, Promise<Res>][] = [
      ['approve', later(approveDelay, () => approve(pr.id, { source_wallet_id: bob.wallet.id }, `race-${round}-a`))],
      ['approve', later(approveDelay, () => approve(pr.id, { source_wallet_id: bob.wallet.id }, `race-${round}-b`))],
      ['cancel', later(closeDelay, () => s.call('POST', `/v1/payment-requests/${pr.id}/cancel`))],
      ['decline', later(closeDelay, () => s.call('POST', `/v1/payment-requests/${pr.id}/decline`, { reason: 'duplicate' }))],
    ];
    const head = `${approveDelay ? `closing calls ${approveDelay}` : `approvals ${closeDelay}`} ms ahead`;
    const results = await Promise.all(calls.map(([, p]) => p));
    const won = results.map((r, i) => [calls[i]![0], r] as const).filter(([, r]) => r.statusCode === 200);
    t.equal(won.length, 1, `round ${round} (${head}): one winner`);
    const [verb, res] = won[0]!;
    wins[verb]!++;
    const state = res.json().status as string;
    t.equal(state, verb === 'approve' ? 'approved' : verb === 'cancel' ? 'canceled' : 'declined');
    for (const r of results.filter((x) => x !== res)) {
      t.same(codeOf(r), { status: 409, code: 'invalid_transition' }, 'the losers: 409');
      t.match(r.json().error, new RegExp(`is ${state}`), 'naming the state');
    }
    const stored = (await s.call('GET', `/v1/payment-requests/${pr.id}`)).json();
    t.equal(stored.status, state, 'the stored state is the winner\'s');
    t.equal((await paymentsOf(pr.id)).length, verb === 'approve' ? 1 : 0, 'a payment only when approve won');
  }
  t.ok(wins.approve! > 0 && wins.cancel! + wins.decline! > 0, `both sides won some rounds: ${JSON.stringify(wins)}`);
});

t.test('a payment made for a request whose approval was not recorded (a crash between them) approves it at the next transition', async (t) => {
  const { s, ann, bob, create, approve, paymentsOf } = await setup(t);
  const scope = { tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id };
  const actor = { type: 'api_key' as const, id: 'key_crashed' };
  const orphan = (id: string) => s.app.payments!.create(scope, actor, { source_wallet_id: bob.wallet.id, destination: { account_holder_id: ann.id }, amount: '2500000', asset: s.asset }, paymentKeyOf(id), { kind: 'payment_request', reference: { type: 'payment_request', id } });

  const a = await create();
  const pa = await orphan(a.id);
  const cancel = await s.call('POST', `/v1/payment-requests/${a.id}/cancel`);
  t.same(codeOf(cancel), { status: 409, code: 'invalid_transition' }, 'a cancel finds it approved');
  t.match(cancel.json().error, new RegExp(`approved \\(payment ${pa.id}\\)`));
  t.match((await s.call('GET', `/v1/payment-requests/${a.id}`)).json(), { status: 'approved', payment_id: pa.id });
  t.match(await s.audits('payment_request.approve', a.id), [{ after: { status: 'approved', payment_id: pa.id, recovered: true } }], 'audited as recovered');
  t.equal((await s.events('payment_request.approved')).length, 1, 'its event sent once');

  const b = await create();
  const pb = await orphan(b.id);
  const retry = await approve(b.id, { source_wallet_id: bob.wallet.id }, 'retry');
  t.equal(retry.statusCode, 200, 'the retried approval');
  t.equal(retry.json().payment_id, pb.id, 'an approval retried after the crash answers that payment');
  t.equal((await paymentsOf(b.id)).length, 1, 'and makes no second');
});
