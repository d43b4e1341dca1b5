// Payment requests without a chain (docs/platform/payment-requests.md): create with its checks and
// Idempotency-Key, read, the list with its filters and cursor, decline and cancel, expiry seen on read and
// refused transitions, reminders with their limits, tenancy and permissions, events and audit entries.
// Approval, which makes a payment and reads a balance on chain, is payment-requests-approve.unit.ts.
import t, { type Test } from 'tap';
import { paymentRequestApp } from './payment-requests-app.ts';

interface RequestView {
  id: string; status: string; requester: { account_holder_id: string; wallet_id: string; address: string }; payer: { account_holder_id: string };
  chain: string; asset: string; amount: string; memo: string | null; expires_at: string; payment_id: string | null; decline_reason: string | null;
  reminders: { count: number; last_at: string | null }; created_at: string; updated_at: string; completed_at: string | null;
}

const DAY = 86_400_000;

async function setup(t: Test) {
  const s = await paymentRequestApp(t);
  const ann = await s.holder();
  const bob = await s.holder();
  let n = 0;
  const body = (o: Record<string, unknown> = {}) => ({ requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset, ...o });
  /** POST /payment-requests under a fresh key (or `key`). */
  const post = (o: Record<string, unknown> = {}, key: string | null = `k-${++n}`, token = s.acme.owner) =>
    s.call('POST', '/v1/payment-requests', body(o), token, key === null ? {} : { 'idempotency-key': key });
  const create = async (o: Record<string, unknown> = {}) => {
    const r = await post(o);
    if (r.statusCode !== 201) throw new Error(r.body);
    s.clock.now += 1000;
    return r.json() as RequestView;
  };
  const act = (id: string, verb: string, payload?: unknown, token = s.acme.owner) => s.call('POST', `/v1/payment-requests/${id}/${verb}`, payload, token);
  return { s, ann, bob, body, post, create, act };
}

const codeOf = (r: { statusCode: number; json(): { code: string } }) => ({ status: r.statusCode, code: r.json().code });

t.test('create: pending, with the requester\'s wallet, the default expiry, its event and audit entry; read back as created', async (t) => {
  const { s, ann, bob, post } = await setup(t);
  const r = await post({ memo: 'Dinner on Friday 🍝' }, 'create-1');
  t.equal(r.statusCode, 201, 'created');
  const pr = r.json() as RequestView;
  t.match(pr.id, /^prq_[0-9a-f]{26}$/);
  t.same(pr, {
    id: pr.id, status: 'pending', requester: { account_holder_id: ann.id, wallet_id: ann.wallet.id, address: ann.wallet.address.toLowerCase() }, payer: { account_holder_id: bob.id },
    chain: 'evm-local', asset: s.asset, amount: '2500000', memo: 'Dinner on Friday 🍝', expires_at: new Date(s.clock.now + 7 * DAY).toISOString(),
    payment_id: null, decline_reason: null, reminders: { count: 0, last_at: null },
    created_at: new Date(s.clock.now).toISOString(), updated_at: new Date(s.clock.now).toISOString(), completed_at: null,
  }, 'every field, nothing internal');
  const got = await s.call('GET', `/v1/payment-requests/${pr.id}`);
  t.equal(got.statusCode, 200);
  t.same(got.json(), pr, 'read back');

  const [ev] = await s.events('payment_request.created');
  t.same(ev!.data, { payment_request_id: pr.id, status: 'pending', requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset }, 'ids, state and amount; never the memo');
  t.equal(ev!.actor.type, 'api_key');
  const [audit] = await s.audits('payment_request.create', pr.id);
  t.match(audit, { before: null, after: { id: pr.id, status: 'pending' } });

  // The same key and body: the same request, nothing new. Another body: 409. No key: 400.
  const before = await s.snapshot();
  const again = await post({ memo: 'Dinner on Friday 🍝' }, 'create-1');
  t.equal(again.statusCode, 201);
  t.same(again.json(), pr, 'a retry answers the same request');
  t.equal(await s.snapshot(), before, 'and writes nothing');
  t.same(codeOf(await post({ amount: '1' }, 'create-1')), { status: 409, code: 'idempotency_key_reused' });
  t.same(codeOf(await post({}, null)), { status: 400, code: 'invalid_request' }, 'Idempotency-Key required');
  t.equal(await s.snapshot(), before, 'refusals write nothing');

  // An explicit expiry within bounds.
  const at = new Date(s.clock.now + 30 * DAY).toISOString();
  const far = await post({ expires_at: at });
  t.equal(far.statusCode, 201, 'created with an expiry');
  t.equal(far.json().expires_at, at, '30 days is the most');
});

t.test('create: bad input is refused with its status and code, and changes nothing', async (t) => {
  const { s, ann, bob, post } = await setup(t);
  const other = await s.holder('active', s.globex);
  const closed = await s.holder('closed');
  const pendingHolder = await s.holder('pending_verification');
  const suspended = await s.holder('suspended');
  const walletless = await s.holder('active', s.acme, { wallet: false });
  const rows: [string, Record<string, unknown>, number, string, string?][] = [
    ['amount zero', { amount: '0' }, 422, 'validation_failed', 'amount'],
    ['amount with a leading zero', { amount: '0100' }, 422, 'validation_failed', 'amount'],
    ['amount over 2^256 - 1', { amount: (2n ** 256n).toString() }, 422, 'validation_failed', 'amount'],
    ['amount as a number', { amount: 100 }, 400, 'invalid_request'],
    ['native asset', { asset: 'evm-local:native' }, 422, 'validation_failed', 'asset'],
    ['a Bitcoin asset', { asset: 'bitcoin-regtest:native' }, 422, 'validation_failed', 'asset'],
    ['asset not an id', { asset: 'USDC' }, 422, 'validation_failed', 'asset'],
    ['an unknown chain', { asset: `nochain:${'0x'.padEnd(42, '1')}` }, 422, 'validation_failed', 'asset'],
    ['memo too long', { memo: 'x'.repeat(281) }, 422, 'validation_failed', 'memo'],
    ['memo blank', { memo: '   ' }, 422, 'validation_failed', 'memo'],
    ['memo with a line break', { memo: 'a\nb' }, 422, 'validation_failed', 'memo'],
    ['memo with a bidi override', { memo: 'pay \u202Eevil' }, 422, 'validation_failed', 'memo'],
    ['expiry in the past', { expires_at: '2026-02-01T00:00:00Z' }, 422, 'validation_failed', 'expires_at'],
    ['expiry under a minute', { expires_at: new Date(s.clock.now + 30_000).toISOString() }, 422, 'validation_failed', 'expires_at'],
    ['expiry over 30 days', { expires_at: new Date(s.clock.now + 30 * DAY + 1000).toISOString() }, 422, 'validation_failed', 'expires_at'],
    ['expiry not UTC ISO', { expires_at: '2026-03-05 12:00' }, 422, 'validation_failed', 'expires_at'],
    ['payer is the requester', { payer_account_holder_id: ann.id }, 422, 'validation_failed', 'payer_account_holder_id'],
    ['an unknown payer', { payer_account_holder_id: 'ah_00000000000000000000000000' }, 422, 'validation_failed', 'payer_account_holder_id'],
    ['another tenant\'s payer', { payer_account_holder_id: other.id }, 422, 'validation_failed', 'payer_account_holder_id'],
    ['another tenant\'s requester', { requester_account_holder_id: other.id }, 422, 'validation_failed', 'requester_account_holder_id'],
    ['a closed requester', { requester_account_holder_id: closed.id }, 409, 'account_holder_closed'],
    ['a requester pending verification', { requester_account_holder_id: pendingHolder.id }, 409, 'account_holder_not_active'],
    ['a suspended requester', { requester_account_holder_id: suspended.id }, 409, 'account_holder_not_active'],
    ['a closed payer', { payer_account_holder_id: closed.id }, 409, 'account_holder_closed'],
    ['a requester without a wallet on the chain', { requester_account_holder_id: walletless.id }, 422, 'validation_failed', 'requester_account_holder_id'],
    ['an unknown field', { note: 'x' }, 400, 'invalid_request'],
    ['a missing payer', { payer_account_holder_id: undefined }, 400, 'invalid_request'],
  ];
  const before = await s.snapshot();
  for (const [name, o, status, code, field] of rows) {
    const r = await post(o);
    t.same(codeOf(r), { status, code }, name);
    if (field) t.ok((r.json().fields as { field: string }[]).some((f) => f.field === field), `${name}: names ${field}`);
  }
  t.equal(await s.snapshot(), before, 'no refusal stored anything');
  // A payer pending verification may be asked: the payment's compliance checks decide when it pays.
  t.equal((await post({ payer_account_holder_id: pendingHolder.id })).statusCode, 201);
  t.equal((await post({ payer_account_holder_id: bob.id })).statusCode, 201);
});

t.test('another tenant\'s request is 404; a viewer reads and changes nothing; a role without payment.read is 403', async (t) => {
  const { s, create, act, post } = await setup(t);
  const pr = await create();
  const g = s.globex.owner;
  const viewer = await s.acme.key('viewer');
  const before = await s.snapshot();
  t.same(codeOf(await s.call('GET', `/v1/payment-requests/${pr.id}`, undefined, g)), { status: 404, code: 'not_found' }, 'read');
  for (const verb of ['cancel', 'decline', 'remind']) t.same(codeOf(await act(pr.id, verb, undefined, g)), { status: 404, code: 'not_found' }, verb);
  t.same(codeOf(await s.call('POST', `/v1/payment-requests/${pr.id}/approve`, { source_wallet_id: 'wal_x' }, g, { 'idempotency-key': 'a' })), { status: 404, code: 'not_found' }, 'approve');
  t.same((await s.call('GET', '/v1/payment-requests', undefined, g)).json().data, [], 'another tenant lists none');
  const production = await s.acme.key('owner', s.acme.production.id);
  t.same(codeOf(await s.call('GET', `/v1/payment-requests/${pr.id}`, undefined, production)), { status: 404, code: 'not_found' }, 'another workspace of the same tenant');
  t.same((await s.call('GET', '/v1/payment-requests', undefined, production)).json().data, [], 'which lists none');
  t.same(codeOf(await s.call('GET', '/v1/payment-requests/prq_00000000000000000000000000')), { status: 404, code: 'not_found' }, 'an unknown id');
  t.same(codeOf(await s.call('GET', '/v1/payment-requests/nonsense')), { status: 404, code: 'not_found' }, 'not an id');

  t.equal((await s.call('GET', `/v1/payment-requests/${pr.id}`, undefined, viewer)).statusCode, 200, 'a viewer reads');
  t.equal((await s.call('GET', '/v1/payment-requests', undefined, viewer)).json().data.length, 1, 'and lists');
  t.same(codeOf(await post({}, 'v', viewer)), { status: 403, code: 'role_denied' }, 'a viewer creates nothing');
  for (const verb of ['cancel', 'decline', 'remind']) t.same(codeOf(await act(pr.id, verb, undefined, viewer)), { status: 403, code: 'role_denied' }, `a viewer: ${verb}`);
  t.same(codeOf(await s.call('POST', `/v1/payment-requests/${pr.id}/approve`, { source_wallet_id: 'wal_x' }, viewer, { 'idempotency-key': 'a' })), { status: 403, code: 'role_denied' }, 'a viewer approves nothing');
  const brand = await s.acme.key('brand_manager');
  t.same(codeOf(await s.call('GET', '/v1/payment-requests', undefined, brand)), { status: 403, code: 'role_denied' }, 'no payment.read');
  t.equal((await s.app.inject({ method: 'GET', url: '/v1/payment-requests' })).statusCode, 401, 'no key');
  t.equal(await s.snapshot(), before, 'nothing changed');
  t.equal((await s.call('GET', `/v1/payment-requests/${pr.id}`)).json().status, 'pending');
});

t.test('decline and cancel: pending only; each final; events and audit entries; every refused transition is 409 naming the state', async (t) => {
  const { s, ann, bob, create, act } = await setup(t);
  const a = await create();
  const b = await create();
  const c = await create();

  const d = await act(a.id, 'decline', { reason: 'incorrect_amount' });
  t.equal(d.statusCode, 200, 'declined');
  t.match(d.json(), { id: a.id, status: 'declined', decline_reason: 'incorrect_amount', completed_at: new Date(s.clock.now).toISOString(), payment_id: null });
  const plain = await act(c.id, 'decline');
  t.equal(plain.statusCode, 200, 'declined without a reason');
  t.match(plain.json(), { status: 'declined', decline_reason: null }, 'a reason is optional');
  const x = await act(b.id, 'cancel');
  t.equal(x.statusCode, 200, 'canceled');
  t.match(x.json(), { id: b.id, status: 'canceled', decline_reason: null });

  const declined = await s.events('payment_request.declined');
  t.same(declined.map((e) => e.data), [
    { payment_request_id: a.id, status: 'declined', requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset, reason: 'incorrect_amount' },
    { payment_request_id: c.id, status: 'declined', requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset },
  ]);
  t.same((await s.events('payment_request.cancelled')).map((e) => e.data), [
    { payment_request_id: b.id, status: 'canceled', requester_account_holder_id: ann.id, payer_account_holder_id: bob.id, amount: '2500000', asset: s.asset },
  ]);
  t.match(await s.audits('payment_request.decline', a.id), [{ before: { status: 'pending' }, after: { status: 'declined', decline_reason: 'incorrect_amount' } }]);
  t.match(await s.audits('payment_request.cancel', b.id), [{ before: { status: 'pending' }, after: { status: 'canceled' } }]);

  const before = await s.snapshot();
  for (const [id, state] of [[a.id, 'declined'], [b.id, 'canceled']] as const) {
    for (const verb of ['decline', 'cancel', 'remind']) {
      const r = await act(id, verb);
      t.same(codeOf(r), { status: 409, code: 'invalid_transition' }, `${verb} of a ${state} request`);
      t.match(r.json().error, new RegExp(`is ${state}`), 'the message names the state');
    }
    const ap = await s.call('POST', `/v1/payment-requests/${id}/approve`, { source_wallet_id: bob.wallet.id }, s.acme.owner, { 'idempotency-key': `ap-${id}` });
    t.same(codeOf(ap), { status: 409, code: 'invalid_transition' }, `approve of a ${state} request`);
  }
  t.same(codeOf(await act(c.id, 'decline', { reason: 'because' })), { status: 400, code: 'invalid_request' }, 'a reason outside the list');
  t.same(codeOf(await act(c.id, 'decline', { reason: 'other', note: 'x' })), { status: 400, code: 'invalid_request' }, 'an unknown field');
  t.equal(await s.snapshot(), before, 'refusals change nothing');
});

t.test('expiry: a pending request past expires_at reads expired, lists as expired, and every transition is 409', async (t) => {
  const { s, bob, create, act } = await setup(t);
  const soon = await create({ expires_at: new Date(s.clock.now + 60_000).toISOString() });
  const later = await create();
  s.clock.now = Date.parse(soon.expires_at) - 1;
  t.equal((await s.call('GET', `/v1/payment-requests/${soon.id}`)).json().status, 'pending', 'a millisecond before');
  s.clock.now = Date.parse(soon.expires_at);
  const r = (await s.call('GET', `/v1/payment-requests/${soon.id}`)).json() as RequestView;
  t.match(r, { status: 'expired', completed_at: soon.expires_at }, 'expired at expires_at');
  t.same((await s.call('GET', '/v1/payment-requests?status=expired')).json().data.map((x: RequestView) => x.id), [soon.id]);
  t.same((await s.call('GET', '/v1/payment-requests?status=pending')).json().data.map((x: RequestView) => x.id), [later.id]);

  const before = await s.snapshot();
  for (const verb of ['decline', 'cancel', 'remind']) {
    const res = await act(soon.id, verb);
    t.same(codeOf(res), { status: 409, code: 'invalid_transition' }, verb);
    t.match(res.json().error, /is expired/);
  }
  const ap = await s.call('POST', `/v1/payment-requests/${soon.id}/approve`, { source_wallet_id: bob.wallet.id }, s.acme.owner, { 'idempotency-key': 'ap' });
  t.same(codeOf(ap), { status: 409, code: 'invalid_transition' }, 'approve');
  t.equal(await s.snapshot(), before, 'nothing written');
  t.equal((await act(later.id, 'cancel')).statusCode, 200, 'the other one still moves');
});

t.test('remind: one per 24 hours (429 with Retry-After), three in all (409), pending only; each recorded with its event', async (t) => {
  const { s, bob, create, act } = await setup(t);
  const pr = await create({ expires_at: new Date(s.clock.now + 10 * DAY).toISOString() });
  const first = await act(pr.id, 'remind');
  t.equal(first.statusCode, 200, 'reminded');
  t.same(first.json().reminders, { count: 1, last_at: new Date(s.clock.now).toISOString() });

  s.clock.now += DAY - 5000;
  const before = await s.snapshot();
  const soon = await act(pr.id, 'remind');
  t.same(codeOf(soon), { status: 429, code: 'rate_limited' }, 'within 24 hours');
  t.equal(soon.headers['retry-after'], '5', 'Retry-After: the seconds left');
  t.equal(await s.snapshot(), before, 'a refused reminder records nothing');
  s.clock.now += 5000;
  t.equal((await act(pr.id, 'remind')).statusCode, 200, 'exactly 24 hours later');
  s.clock.now += DAY;
  const third = await act(pr.id, 'remind');
  t.equal(third.statusCode, 200);
  t.same(third.json().reminders, { count: 3, last_at: new Date(s.clock.now).toISOString() });
  s.clock.now += 2 * DAY;
  const fourth = await act(pr.id, 'remind');
  t.same(codeOf(fourth), { status: 409, code: 'conflict' }, 'exhausted after three');
  t.equal(fourth.headers['retry-after'], undefined);

  const reminded = await s.events('payment_request.reminded');
  t.same(reminded.map((e) => [e.data.reminder_count, e.data.payer_account_holder_id, e.data.status]), [[1, bob.id, 'pending'], [2, bob.id, 'pending'], [3, bob.id, 'pending']], 'one event per reminder, for the payer');
  t.equal((await s.audits('payment_request.remind', pr.id)).length, 3, 'one audit entry each');

  // Only pending: a declined request is reminded of nothing.
  const other = await create();
  t.equal((await act(other.id, 'decline')).statusCode, 200);
  t.same(codeOf(await act(other.id, 'remind')), { status: 409, code: 'invalid_transition' });
});

t.test('list: oldest first, by status, holder as requester or payer and creation time; a walk repeats nothing; the cursor is bound to its filters', async (t) => {
  const { s, ann, bob, create, act } = await setup(t);
  const cy = await s.holder();
  const t0 = new Date(s.clock.now).toISOString();
  const a = await create();
  const b = await create({ requester_account_holder_id: bob.id, payer_account_holder_id: cy.id });
  const t1 = new Date(s.clock.now).toISOString();
  const c = await create({ requester_account_holder_id: cy.id, payer_account_holder_id: ann.id });
  await act(b.id, 'decline');
  const ids = async (q: string) => {
    const r = await s.call('GET', `/v1/payment-requests${q}`);
    t.equal(r.statusCode, 200, `GET ${q || '(no filter)'}`);
    return (r.json().data as RequestView[]).map((x) => x.id);
  };
  t.same(await ids(''), [a.id, b.id, c.id], 'oldest first');
  t.same(await ids('?status=declined'), [b.id]);
  t.same(await ids('?status=pending'), [a.id, c.id]);
  t.same(await ids(`?account_holder_id=${ann.id}`), [a.id, c.id], 'as requester and as payer');
  t.same(await ids(`?account_holder_id=${cy.id}`), [b.id, c.id]);
  t.same(await ids(`?created_after=${t1}`), [c.id]);
  t.same(await ids(`?created_after=${t0}&created_before=${t1}`), [a.id, b.id]);

  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await s.call('GET', `/v1/payment-requests?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const p = r.json() as { data: RequestView[]; has_more: boolean; next_cursor: string | null };
    seen.push(...p.data.map((x) => x.id));
    t.equal(p.has_more, p.next_cursor !== null);
    cursor = p.next_cursor;
  } while (cursor);
  t.same(seen, [a.id, b.id, c.id], 'every request once');

  const first = (await s.call('GET', '/v1/payment-requests?limit=1')).json();
  t.same(codeOf(await s.call('GET', `/v1/payment-requests?limit=1&status=pending&cursor=${encodeURIComponent(first.next_cursor)}`)), { status: 400, code: 'cursor_filter_mismatch' });
  t.same(codeOf(await s.call('GET', `/v1/payment-requests?cursor=${'x'.repeat(40)}`)), { status: 400, code: 'invalid_cursor' });
  t.same(codeOf(await s.call('GET', '/v1/payment-requests?status=open')), { status: 400, code: 'invalid_request' }, 'a status outside the list');
  t.same(codeOf(await s.call('GET', '/v1/payment-requests?account_holder_id=bob')), { status: 400, code: 'invalid_request' });
  t.same(codeOf(await s.call('GET', '/v1/payment-requests?created_after=yesterday')), { status: 400, code: 'invalid_request' });
  t.same(codeOf(await s.call('GET', '/v1/payment-requests?limit=101')), { status: 400, code: 'invalid_request' });
});
