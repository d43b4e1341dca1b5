// The payment operations through the API (docs/platform/payments.md): POST /v1/payments prices and checks
// a payment as the quote does, answers requires_authorization with its transfers (the principal and each
// fee to its collector) and what the member approves next; the refusals (form, tenancy, compliance,
// balance, collectors, quote, Idempotency-Key) change nothing; GET lists and reads, cancel before any
// transaction, the history, the dry run that writes nothing, and the payment in GET /v1/transactions.
import t, { type Test } from 'tap';
import { paymentsApp, ASSET, PLATFORM_COLLECTOR, TENANT_COLLECTOR, type PaymentsApp } from './payments-app.ts';
import { PAYMENTS } from '../../../api/payments/collections.ts';
import { WEBHOOK_EVENTS } from '../../../api/webhooks/collections.ts';
import { AUDIT_LOG } from '../../../api/tenancy/collections.ts';
import { ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';

interface Payment {
  id: string; status: string; amount: string; asset: string; total_debit: string; fees: { tenant: string; platform: string; total: string };
  payer: { account_holder_id: string; wallet_id: string; address: string }; payee: { account_holder_id: string | null; wallet_id: string | null; address: string };
  transfers: { role: string; to: string; amount: string; asset: string; idempotency_key: string }[];
  next_action: { type: string; member_action: { kind: string; wallet_id: string; purpose: { type: string; id: string } }; intents: { role: string; idempotency_key: string }[] } | null;
  compliance: { status: string }; review_accepted: boolean; quote_id: string | null; fee_schedule_id: string | null;
}

const AMOUNT = 1_000_000n;
// Tenant: 30 bps + 1 = 3001; platform (payments-app.ts): 10 bps + 5 = 1005.
const FEES = { tenant: '3001', platform: '1005', total: '4006' };

/** Every record a payment operation could write, as one string. */
async function snapshot(s: PaymentsApp): Promise<string> {
  const out: Record<string, unknown[]> = {};
  for (const c of ['payments', 'payment_events', 'payment_keys', 'idempotency', 'audit_log', 'webhook_events', 'webhook_deliveries', 'platform_ledger_entries', 'payment_quotes']) {
    const rows: unknown[] = [];
    for await (const r of s.store.all(c)) rows.push(r);
    out[c] = rows;
  }
  return JSON.stringify(out);
}

async function setup(t: Test) {
  const s = await paymentsApp(t);
  const schedule = await s.bearer('POST', '/v1/fee-schedules', { name: 'Standard', rules: [{ payment_kind: '*', asset: '*', basis_points: 30, fixed: '1', min: '0', max: null }], collectors: { 'evm-local': TENANT_COLLECTOR } }, s.acme.owner, { 'idempotency-key': 'fs-1' });
  t.equal(schedule.statusCode, 201, schedule.body);
  const ada = await s.holder();
  const bob = await s.holder();
  s.balances.set(ada.wallet.address.toLowerCase(), 10n ** 9n);
  let n = 0;
  const body = (over: Record<string, unknown> = {}) => ({ source_wallet_id: ada.wallet.id, destination: { account_holder_id: bob.id }, amount: AMOUNT.toString(), asset: ASSET, ...over });
  const create = (b: Record<string, unknown> = body(), key = `k-${++n}`, token = s.acme.owner) => s.bearer('POST', '/v1/payments', b, token, { 'idempotency-key': key });
  return { ...s, ada, bob, body, create, scheduleId: schedule.json().id as string };
}

t.test('POST /v1/payments: a payment to another holder, answered requires_authorization with its transfers and next action', async (t) => {
  const s = await setup(t);
  const r = await s.create(s.body(), 'first');
  t.equal(r.statusCode, 201, r.body);
  const p = r.json() as Payment;
  t.match(p, {
    id: /^pay_[0-9a-f]{26}$/, status: 'requires_authorization', kind: 'transfer', amount: AMOUNT.toString(), asset: ASSET, fees: FEES, total_debit: (AMOUNT + 4006n).toString(),
    fee_schedule_id: s.scheduleId, compliance: { status: 'pass' }, review_accepted: false, quote_id: null, member_action_id: null, transactions: [], failure_reason: null,
    payer: { account_holder_id: s.ada.id, wallet_id: s.ada.wallet.id, address: s.ada.wallet.address.toLowerCase() },
    payee: { account_holder_id: s.bob.id, wallet_id: s.bob.wallet.id, address: s.bob.wallet.address.toLowerCase() },
  });
  t.same(p.transfers, [
    { role: 'principal', to: s.bob.wallet.address.toLowerCase(), amount: AMOUNT.toString(), asset: ASSET, idempotency_key: `${p.id}:principal` },
    { role: 'tenant_fee', to: TENANT_COLLECTOR, amount: FEES.tenant, asset: ASSET, idempotency_key: `${p.id}:tenant_fee` },
    { role: 'platform_fee', to: PLATFORM_COLLECTOR, amount: FEES.platform, asset: ASSET, idempotency_key: `${p.id}:platform_fee` },
  ], 'the principal and each fee, as separate transfers to their collectors');
  t.same(p.next_action!.member_action, { kind: 'transaction.sign_batch', wallet_id: s.ada.wallet.id, purpose: { type: 'payment', id: p.id } });
  t.same(p.next_action!.intents.map((i) => i.idempotency_key), p.transfers.map((x) => x.idempotency_key), 'one intent per transfer, in order');

  // The same key and body: the same payment; another body under it: 409; no key: 400.
  const again = await s.create(s.body(), 'first');
  t.equal(again.json().id, p.id, 'a retry answers the same payment');
  const before = await snapshot(s);
  const other = await s.create(s.body({ amount: '5' }), 'first');
  t.match([other.statusCode, other.json().code], [409, 'idempotency_key_reused']);
  const noKey = await s.bearer('POST', '/v1/payments', s.body());
  t.match([noKey.statusCode, noKey.json().code], [400, 'invalid_request']);
  t.equal(await snapshot(s), before, 'refusals change nothing');

  // Read, the history, the audit entry and the webhook event.
  const got = await s.bearer('GET', `/v1/payments/${p.id}`);
  t.same(got.json(), p);
  const events = await s.bearer('GET', `/v1/payments/${p.id}/events`);
  t.equal(events.statusCode, 200, events.body);
  t.match(events.json().data, [{ payment_id: p.id, type: 'payment.created', from_status: null, to_status: 'requires_authorization', actor: { type: 'api_key' } }]);
  const audit: { action: string; resource_id: string }[] = [];
  for await (const e of AUDIT_LOG.in(s.store).all()) audit.push(e);
  t.ok(audit.some((e) => e.action === 'payment.create' && e.resource_id === p.id), 'audit entry payment.create');
  const hooks: { type: string; data: Record<string, unknown> }[] = [];
  for await (const e of WEBHOOK_EVENTS.in(s.store).all()) hooks.push(e);
  t.same(hooks.filter((e) => e.type === 'payment.created').map((e) => e.data), [{ payment_id: p.id, status: 'requires_authorization', account_holder_id: s.ada.id, amount: AMOUNT.toString(), asset: ASSET, fees_total: '4006' }]);

  // An address payee; a viewer reads but neither creates nor cancels; a brand manager does not read.
  const toAddress = await s.create(s.body({ destination: { address: '0x00000000000000000000000000000000000a11ce' } }));
  t.equal(toAddress.statusCode, 201, toAddress.body);
  t.match(toAddress.json(), { payee: { account_holder_id: null, wallet_id: null, address: '0x00000000000000000000000000000000000a11ce' } });
  const viewer = await s.acme.key('viewer');
  t.equal((await s.bearer('GET', `/v1/payments/${p.id}`, undefined, viewer)).statusCode, 200, 'a viewer reads');
  const denied = await s.create(s.body(), 'viewer', viewer);
  t.match([denied.statusCode, denied.json().code], [403, 'role_denied']);
  const cancelDenied = await s.bearer('POST', `/v1/payments/${p.id}/cancel`, undefined, viewer);
  t.match([cancelDenied.statusCode, cancelDenied.json().code], [403, 'role_denied']);
  t.equal((await s.bearer('GET', `/v1/payments/${p.id}`, undefined, await s.acme.key('brand_manager'))).statusCode, 403);
  const developer = await s.create(s.body(), 'dev', await s.acme.key('developer'));
  t.equal(developer.statusCode, 201, 'a developer creates');

  // Another tenant's id is unknown, on every operation.
  for (const [m, u] of [['GET', `/v1/payments/${p.id}`], ['GET', `/v1/payments/${p.id}/events`], ['POST', `/v1/payments/${p.id}/cancel`]] as const) {
    const x = await s.bearer(m, u, undefined, s.globex.owner);
    t.match([x.statusCode, x.json().code], [404, 'not_found'], `${m} ${u} with another tenant's key`);
  }
  t.equal((await s.bearer('GET', '/v1/payments/pay_1')).statusCode, 404, 'a malformed id');
});

t.test('POST /v1/payments refuses bad input, other tenants\' records, compliance blocks, a short balance and a missing collector; each changes nothing', async (t) => {
  const s = await setup(t);
  const gHolder = await s.holder({ who: s.globex });
  const plain = await s.holder();
  const refuse = async (what: string, body: Record<string, unknown>, status: number, code: string, field?: string) => {
    const before = await snapshot(s);
    const r = await s.create(body);
    t.match([r.statusCode, r.json().code], [status, code], `${what}: ${r.body.slice(0, 240)}`);
    if (field) t.ok((r.json().fields as { field: string }[]).some((f) => f.field === field), `${what}: names ${field}`);
    t.equal(await snapshot(s), before, `${what}: nothing changed`);
  };
  await refuse('an unknown field', { ...s.body(), memo: 'x' }, 400, 'invalid_request');
  await refuse('an amount with a leading zero', s.body({ amount: '01' }), 422, 'validation_failed', 'amount');
  await refuse('a zero amount', s.body({ amount: '0' }), 422, 'validation_failed', 'amount');
  await refuse('the native asset', s.body({ asset: 'evm-local:native' }), 422, 'validation_failed', 'asset');
  await refuse('an asset of another chain', s.body({ asset: 'bitcoin-regtest:native' }), 422, 'validation_failed', 'asset');
  await refuse('a bad address', s.body({ destination: { address: '0x1234' } }), 422, 'validation_failed', 'destination.address');
  await refuse('another tenant\'s source wallet', s.body({ source_wallet_id: gHolder.wallet.id }), 404, 'not_found');
  await refuse('another tenant\'s destination holder', s.body({ destination: { account_holder_id: gHolder.id } }), 404, 'not_found');
  await refuse('the payer itself', s.body({ destination: { account_holder_id: s.ada.id } }), 422, 'validation_failed', 'destination');
  await refuse('an unknown quote', s.body({ quote_id: 'pqt_00000000000000000000000000' }), 404, 'not_found');

  // A wallet of the organization that serves no account holder.
  const v = await s.vaults.createVault(s.acme.org, { tier: 'hosted' });
  const { wallet: loose } = await s.vaults.createWallet(s.acme.org, v.id, 'evm-local', 0, undefined).catch(() => ({ wallet: undefined }));
  if (loose) await refuse('a wallet of no account holder', s.body({ source_wallet_id: loose.id }), 422, 'validation_failed', 'source_wallet_id');

  // Compliance: a suspended payee blocks; a payee whose verification lapsed asks for review.
  const h = (await ACCOUNT_HOLDERS.in(s.store).get(plain.id))!;
  await s.store.batch([ACCOUNT_HOLDERS.putOp(h.id, { ...h, status: 'suspended' })]);
  await refuse('a suspended payee (block)', s.body({ destination: { account_holder_id: plain.id } }), 403, 'forbidden');
  await s.store.batch([ACCOUNT_HOLDERS.putOp(h.id, { ...h, status: 'active', verification_status: 'expired' })]);
  await refuse('a payee whose verification lapsed (review), not accepted', s.body({ destination: { account_holder_id: plain.id } }), 403, 'forbidden');
  const reviewed = await s.create(s.body({ destination: { account_holder_id: plain.id }, accept_review: true }));
  t.equal(reviewed.statusCode, 201, reviewed.body);
  t.match(reviewed.json(), { compliance: { status: 'review' }, review_accepted: true });

  // The payer's balance must cover the amount and both fees.
  s.balances.set(s.ada.wallet.address.toLowerCase(), AMOUNT + 4005n);
  await refuse('a balance one unit short of the total', s.body(), 403, 'insufficient_funds');
  s.balances.set(s.ada.wallet.address.toLowerCase(), AMOUNT + 4006n);
  t.equal((await s.create(s.body())).statusCode, 201, 'exactly the total is enough');

  // Globex charges a tenant fee but names no collector on the chain: refused, nothing moves.
  const schedule = await s.bearer('POST', '/v1/fee-schedules', { name: 'G', rules: [{ payment_kind: '*', asset: '*', basis_points: 10, fixed: '0', min: '0', max: null }] }, s.globex.owner, { 'idempotency-key': 'g' });
  t.equal(schedule.statusCode, 201);
  const gBob = await s.holder({ who: s.globex });
  s.balances.set(gHolder.wallet.address.toLowerCase(), 10n ** 9n);
  const before = await snapshot(s);
  const noCollector = await s.create({ ...s.body({ source_wallet_id: gHolder.wallet.id, destination: { account_holder_id: gBob.id } }) }, 'g1', s.globex.owner);
  t.match([noCollector.statusCode, noCollector.json().code], [409, 'conflict'], noCollector.body);
  t.equal(await snapshot(s), before);
});

const NEW_COLLECTOR = '0x00000000000000000000000000000000000000f3';

t.test('quote_id: a matching, unexpired quote prices the payment; another payment\'s or an expired one is 422', async (t) => {
  const s = await setup(t);
  const quote = async (amount = AMOUNT.toString()) => {
    const q = await s.bearer('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: s.ada.wallet.id, destination: { account_holder_id: s.bob.id }, amount, asset: ASSET });
    t.equal(q.statusCode, 201, q.body);
    return q.json() as { id: string; fees: typeof FEES };
  };
  const q = await quote();
  // A new schedule after the quote: the quote's price holds for the payment that names it.
  await s.bearer('POST', '/v1/fee-schedules', { name: 'Dearer', rules: [{ payment_kind: '*', asset: '*', basis_points: 100, fixed: '0', min: '0', max: null }], collectors: { 'evm-local': NEW_COLLECTOR } }, s.acme.owner, { 'idempotency-key': 'fs-2' });
  const r = await s.create(s.body({ quote_id: q.id }));
  t.equal(r.statusCode, 201, r.body);
  t.match(r.json(), { quote_id: q.id, fees: FEES, fee_schedule_id: s.scheduleId });
  t.equal(r.json().transfers.find((x: { role: string }) => x.role === 'tenant_fee').to, TENANT_COLLECTOR, 'the fee goes to the collector of the schedule it came from');
  const unquoted = await s.create(s.body());
  t.match(unquoted.json(), { fees: { tenant: '10000' }, quote_id: null }, 'without a quote, the schedule in force');
  t.equal(unquoted.json().transfers.find((x: { role: string }) => x.role === 'tenant_fee').to, NEW_COLLECTOR, 'and its collector');

  const other = await quote('999');
  const mismatch = await s.create(s.body({ quote_id: other.id }));
  t.match([mismatch.statusCode, mismatch.json().code, mismatch.json().fields], [422, 'validation_failed', [{ field: 'quote_id' }]]);
  const late = await quote();
  s.clock.now += 60_001;
  const expired = await s.create(s.body({ quote_id: late.id }));
  t.match([expired.statusCode, expired.json().fields], [422, [{ field: 'quote_id', reason: /expired/ }]]);
  const gQuote = await s.bearer('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: (await s.holder({ who: s.globex })).wallet.id, destination: { address: '0x00000000000000000000000000000000000a11ce' }, amount: '10', asset: ASSET }, s.globex.owner);
  const foreign = await s.create(s.body({ quote_id: gQuote.json().id }));
  t.match([foreign.statusCode, foreign.json().code], [404, 'not_found'], 'another tenant\'s quote is unknown');
});

t.test('GET /v1/payments: oldest first, by status, holder as payer or payee and creation time; cursor walks', async (t) => {
  const s = await setup(t);
  const carol = await s.holder();
  s.balances.set(s.bob.wallet.address.toLowerCase(), 10n ** 9n);
  const ids: string[] = [];
  const times: string[] = [];
  for (const b of [s.body(), s.body({ destination: { account_holder_id: carol.id } }), s.body({ source_wallet_id: s.bob.wallet.id, destination: { account_holder_id: carol.id } })]) {
    const r = await s.create(b);
    t.equal(r.statusCode, 201, r.body);
    ids.push(r.json().id);
    times.push(r.json().created_at);
    s.clock.now += 1000;
  }
  t.equal((await s.bearer('POST', `/v1/payments/${ids[1]}/cancel`)).statusCode, 200);
  const list = async (q = '', token = s.acme.owner) => s.bearer('GET', `/v1/payments${q}`, undefined, token);
  const idsOf = async (q = '') => ((await list(q)).json().data as Payment[]).map((p) => p.id);
  t.same(await idsOf(), ids);
  t.same(await idsOf('?status=canceled'), [ids[1]]);
  t.same(await idsOf(`?account_holder_id=${s.bob.id}`), [ids[0], ids[2]], 'bob as payee and as payer');
  t.same(await idsOf(`?account_holder_id=${carol.id}`), [ids[1], ids[2]]);
  t.same(await idsOf(`?created_after=${times[1]}`), [ids[1], ids[2]]);
  t.same(await idsOf(`?created_before=${times[1]}`), [ids[0]]);
  t.equal(((await list('', await s.acme.key('viewer'))).json().data as unknown[]).length, 3, 'a viewer lists');
  t.same((await list('', s.globex.owner)).json().data, [], 'another tenant lists none of them');
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await list(`?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    seen.push(...(r.json().data as Payment[]).map((p) => p.id));
    cursor = r.json().next_cursor;
  } while (cursor);
  t.same(seen, ids, 'a walk one at a time: each once, in order');
  const first = await list('?limit=1&status=requires_authorization');
  const changed = await list(`?status=canceled&cursor=${encodeURIComponent(first.json().next_cursor)}`);
  t.match([changed.statusCode, changed.json().code], [400, 'cursor_filter_mismatch']);
  t.equal((await list('?status=pending')).statusCode, 400, 'an unknown status');
  t.equal((await list('?created_after=yesterday')).statusCode, 400, 'a time that is not ISO 8601');
  t.equal((await list('', await s.acme.key('brand_manager'))).statusCode, 403);

  // The payments in the workspace's payment flows.
  const flows = await s.bearer('GET', '/v1/transactions?kind=payment');
  t.equal(flows.statusCode, 200, flows.body);
  t.same(flows.json().data.map((f: { id: string }) => f.id), ids);
  t.match(flows.json().data[0], { kind: 'payment', account_holder_id: s.ada.id, direction: 'internal', amount: AMOUNT.toString(), asset: ASSET, reference: { payment_id: ids[0] } });
  const bobFlows = await s.bearer('GET', `/v1/transactions?kind=payment&account_holder_id=${s.bob.id}`);
  t.same(bobFlows.json().data.map((f: { direction: string }) => f.direction), ['in', 'out'], 'seen from bob: paid to him, paid by him');
  t.same((await s.bearer('GET', '/v1/transactions')).json().data.map((f: { id: string }) => f.id), ids, 'among every kind');
});

t.test('POST /v1/payments/{id}/cancel before approval; never twice; the history and webhook say so', async (t) => {
  const s = await setup(t);
  const p = (await s.create()).json() as Payment;
  const c = await s.bearer('POST', `/v1/payments/${p.id}/cancel`);
  t.equal(c.statusCode, 200, c.body);
  t.match(c.json(), { id: p.id, status: 'canceled', next_action: null });
  t.ok(c.json().completed_at);
  const before = await snapshot(s);
  const again = await s.bearer('POST', `/v1/payments/${p.id}/cancel`);
  t.match([again.statusCode, again.json().code], [409, 'invalid_transition']);
  t.equal(await snapshot(s), before, 'a refused cancel changes nothing');
  t.same((await s.bearer('GET', `/v1/payments/${p.id}/events`)).json().data.map((e: { to_status: string }) => e.to_status), ['requires_authorization', 'canceled']);
  const hooks: { type: string; data: Record<string, unknown> }[] = [];
  for await (const e of WEBHOOK_EVENTS.in(s.store).all()) hooks.push(e);
  t.same(hooks.filter((e) => e.type === 'payment.cancelled').map((e) => e.data), [{ payment_id: p.id, status: 'canceled', account_holder_id: s.ada.id }]);
  t.equal((await PAYMENTS.in(s.store).get(p.id))!.status, 'canceled');
  // Events page.
  const page = await s.bearer('GET', `/v1/payments/${p.id}/events?limit=1`);
  t.equal(page.json().data.length, 1);
  t.equal((await s.bearer('GET', `/v1/payments/${p.id}/events?limit=1&cursor=${encodeURIComponent(page.json().next_cursor)}`)).json().data[0].to_status, 'canceled');
});

t.test('POST /v1/payments/simulate answers what the payment would be and whether it would be refused, and writes nothing', async (t) => {
  const s = await setup(t);
  const before = await snapshot(s);
  const sim = async (body: Record<string, unknown>, token = s.acme.owner) => s.bearer('POST', '/v1/payments/simulate', body, token);
  const ok = await sim(s.body());
  t.equal(ok.statusCode, 200, ok.body);
  t.match(ok.json(), { would_refuse: false, refusal: null, payment: { amount: AMOUNT.toString(), fees: FEES, total_debit: (AMOUNT + 4006n).toString(), compliance: { status: 'pass' } } });
  t.same(ok.json().payment.transfers.map((x: { role: string; to: string }) => [x.role, x.to]), [['principal', s.bob.wallet.address.toLowerCase()], ['tenant_fee', TENANT_COLLECTOR], ['platform_fee', PLATFORM_COLLECTOR]]);
  t.notOk('id' in ok.json().payment, 'no id: nothing was made');
  s.balances.set(s.ada.wallet.address.toLowerCase(), 1n);
  const poor = await sim(s.body());
  t.match(poor.json(), { would_refuse: true, refusal: { status: 403, code: 'insufficient_funds' } });
  const h = (await ACCOUNT_HOLDERS.in(s.store).get(s.bob.id))!;
  await s.store.batch([ACCOUNT_HOLDERS.putOp(h.id, { ...h, status: 'suspended' })]);
  const blocked = await sim(s.body());
  t.match(blocked.json(), { would_refuse: true, refusal: { status: 403, code: 'forbidden' }, payment: { compliance: { status: 'block' } } });
  await s.store.batch([ACCOUNT_HOLDERS.putOp(h.id, h)]);
  t.match([(await sim(s.body({ amount: 'x' }))).statusCode], [422], 'a form error is answered as POST /payments answers it');
  t.equal((await sim(s.body(), s.globex.owner)).statusCode, 404, 'another tenant\'s wallet');
  t.equal((await sim(s.body(), await s.acme.key('viewer'))).statusCode, 200, 'a viewer may dry-run');
  t.equal((await sim(s.body(), await s.acme.key('brand_manager'))).statusCode, 403);
  t.equal(await snapshot(s), before, 'no payment, history, key, idempotency record, audit entry, event or quote was written');
});
