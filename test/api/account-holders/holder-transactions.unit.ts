// GET /v1/account-holders/self/transactions (docs/platform/account-holders.md "Transactions") through
// the app on a real store with real Hosted sandbox-demo member sessions: funding driven through the
// sandbox rail on the manual clock, an off-ramp request, vault-API transactions stored as the
// transaction service stores them, and sandbox bank transfers made through the API, each with its
// direction and amounts; the kind filter; a walk page by page while every source grows (nothing twice,
// nothing missed); another member's movements never shown; and the credentials of the other self calls.
import t from 'tap';
import { moneyApp, type MoneyApp } from './holder-money-app.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { txIndex } from '../../../api/transactions/transaction-service.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import { newId } from '../../../api/store/ids.ts';

type Member = Awaited<ReturnType<MoneyApp['member']>>;
interface Item { id: string; kind: string; status: string; amount: string; asset: string | null; currency: string | null; fiat: unknown; direction: string; wallet_id?: string; created_at: string; reference: Record<string, string> }

const EXTERNAL = '0x00000000000000000000000000000000000000ee';

/** A vault-API transaction of the member's wallet, stored as TransactionService stores it (record and index entries). */
async function walletTx(s: MoneyApp, m: Member, recipient: string, amount: string): Promise<TransactionRecord> {
  const at = new Date(s.clock.now()).toISOString();
  const tx: TransactionRecord = {
    id: newId('txn', s.clock.now()), org: m.wallet.org, vault_id: m.vault.id, wallet_id: m.wallet.id, chain: 'evm-local', family: 'evm', state: 'final',
    idempotency_key: newId('idem'), request_hash: 'h', intent: '', intent_signature: '', api_key_id: 'key_x', intent_sha256: '',
    transfers: [{ recipient, asset: 'evm-local:native', amount }], tx_hash: '0xab', reason: null, fee: '21000', created_at: at, updated_at: at,
  };
  await s.store.batch([TRANSACTIONS.putOp(tx.id, tx, { index: txIndex(tx) })]);
  return tx;
}

async function fund(s: MoneyApp, m: Member, cents: string, key: string) {
  const r = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: m.id, wallet_id: m.wallet.id, fiat_amount: cents, currency: 'USD' }, s.acme.owner, { 'idempotency-key': key });
  if (r.statusCode !== 201) throw new Error(r.body);
  return r.json() as { id: string };
}

async function transfer(m: Member, amount: string, key: string) {
  const r = await m.self('POST', 'bank-transfers', { from: 'checking', to: 'savings', amount, currency: 'USD' }, { 'idempotency-key': key });
  if (r.statusCode !== 201) throw new Error(r.body);
  return r.json() as { id: string };
}

/** Every page of the list, following next_cursor. */
async function walk(m: Member, query = '', limit = 100): Promise<Item[]> {
  const out: Item[] = [];
  let cursor: string | null = null;
  do {
    const r = await m.self('GET', `transactions?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (r.statusCode !== 200) throw new Error(r.body);
    out.push(...r.json().data);
    cursor = r.json().next_cursor;
  } while (cursor);
  return out;
}

t.test('every kind, with its direction and base-unit amounts, oldest first', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  t.same((await m.self('GET', 'transactions')).json(), { data: [], next_cursor: null, has_more: false }, 'nothing yet: the list opens no bank account');
  t.equal((await m.self('GET', 'bank-balance')).statusCode, 200, 'the bank opens with its deposit');
  s.clock.advance(1000);
  const f = await fund(s, m, '50000', 'f1');
  s.clock.advance(60_000);
  await s.rail.runDue();
  await s.service.runDue();
  s.clock.advance(1000);
  const off = await s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: m.id, wallet_id: m.wallet.id, stablecoin_amount: '1990000000000000000', currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'o1' });
  t.equal(off.statusCode, 201, off.body);
  s.clock.advance(1000);
  const out = await walletTx(s, m, EXTERNAL, '123456789');
  s.clock.advance(1000);
  const self = await walletTx(s, m, m.wallet.address.toUpperCase().replace('0X', '0x'), '5');
  s.clock.advance(1000);
  const b = await transfer(m, '25000', 'b1');

  const r = await m.self('GET', 'transactions');
  t.equal(r.statusCode, 200, r.body);
  const data = r.json().data as Item[];
  t.same(data.map((i) => i.kind), ['bank_transfer', 'funding', 'off_ramp', 'wallet_transaction', 'wallet_transaction', 'bank_transfer'], 'oldest first, every source');
  const [opening, funding, offRamp, wOut, wSelf, bt] = data;
  t.match(opening, { id: `bop_${m.id.slice(3)}`, direction: 'in', amount: '100000', currency: 'USD', asset: null, status: 'completed', reference: { opening_deposit_id: `bop_${m.id.slice(3)}` } });
  t.notOk('wallet_id' in opening!, 'a bank entry has no wallet');
  t.match(funding, { id: f.id, direction: 'in', amount: '500000000000000000000', asset: s.issuer.asset, currency: null, fiat: { amount: '50000', currency: 'USD' }, wallet_id: m.wallet.id, reference: { funding_request_id: f.id } });
  t.equal(funding!.status, 'minting', 'the request\'s own status: the rail settled, the mint is on its way');
  t.match(offRamp, { id: off.json().id, direction: 'out', amount: '1990000000000000000', fiat: { amount: '199', currency: 'USD' }, status: 'awaiting_transfer', reference: { off_ramp_request_id: off.json().id } });
  t.match(wOut, { id: out.id, direction: 'out', amount: '123456789', asset: 'evm-local:native', status: 'final', wallet_id: m.wallet.id, reference: { transaction_id: out.id } });
  t.match(wSelf, { id: self.id, direction: 'internal', amount: '5' }, 'to one of the holder\'s own wallets');
  t.match(bt, { id: b.id, direction: 'internal', amount: '25000', currency: 'USD', reference: { bank_transfer_id: b.id } });
  for (const i of data) t.match(i.amount, /^[0-9]+$/, 'a base-unit digit string');
  const sorted = [...data].sort((x, y) => (x.created_at < y.created_at ? -1 : x.created_at > y.created_at ? 1 : 0));
  t.same(data.map((i) => i.id), sorted.map((i) => i.id), 'in created_at order');
});

t.test('the kind filter, and a cursor bound to it', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  await m.self('GET', 'bank-balance');
  await fund(s, m, '100', 'f1');
  await fund(s, m, '200', 'f2');
  await transfer(m, '1', 'b1');
  await walletTx(s, m, EXTERNAL, '7');
  for (const kind of ['funding', 'off_ramp', 'wallet_transaction', 'bank_transfer']) {
    const items = await walk(m, `&kind=${kind}`, 1);
    t.ok(items.every((i) => i.kind === kind), `${kind} only`);
    t.equal(items.length, { funding: 2, off_ramp: 0, wallet_transaction: 1, bank_transfer: 2 }[kind], kind);
  }
  const first = (await m.self('GET', 'transactions?limit=1&kind=funding')).json();
  t.equal(first.has_more, true);
  const mismatch = await m.self('GET', `transactions?limit=1&cursor=${encodeURIComponent(first.next_cursor)}`);
  t.equal(mismatch.statusCode, 400);
  t.equal(mismatch.json().code, 'cursor_filter_mismatch', 'the filter changed during the walk');
  const bad = await m.self('GET', 'transactions?kind=payment');
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().code, 'invalid_request');
  t.equal((await m.self('GET', 'transactions?cursor=abc.def')).json().code, 'invalid_cursor');
});

t.test('a walk while every source grows: nothing twice, nothing that existed missed', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  await m.self('GET', 'bank-balance');
  let n = 0;
  const add = async () => {
    n++;
    s.clock.advance(10);
    if (n % 3 === 0) await fund(s, m, String(100 + n), `f${n}`);
    else if (n % 3 === 1) await transfer(m, '1', `b${n}`);
    else await walletTx(s, m, EXTERNAL, String(n));
  };
  for (let i = 0; i < 14; i++) await add();
  const existing = (await walk(m)).map((i) => i.id);
  t.equal(existing.length, 15, 'the opening deposit and 14 movements');
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r = await m.self('GET', `transactions?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    t.equal(r.statusCode, 200, `page ${pages + 1}`);
    seen.push(...r.json().data.map((i: Item) => i.id));
    cursor = r.json().next_cursor;
    // Each page, one more of each source (for the first ten pages).
    if (++pages <= 10) for (let k = 0; k < 3; k++) await add();
  } while (cursor);
  t.equal(new Set(seen).size, seen.length, 'no item twice');
  t.same(existing.filter((id) => !seen.includes(id)), [], 'none that existed when the walk began was missed');
  t.same(seen.slice(0, existing.length), existing, 'and they came first, in order');
  t.equal(seen.length, 15 + 30, 'the items added during the walk came at its end');
});

t.test('another member\'s movements are never shown; its cursor is refused', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const other = await s.member();
  const far = await s.member(s.globex);
  for (const x of [m, other]) {
    await x.self('GET', 'bank-balance');
    await transfer(x, '10', 'same-key');
    await walletTx(s, x, EXTERNAL, '1');
  }
  await fund(s, other, '300', 'of');
  await far.self('GET', 'bank-balance');
  const mine = await walk(m);
  const theirs = await walk(other);
  t.equal(mine.length, 3);
  t.equal(theirs.length, 4);
  t.same(mine.filter((i) => theirs.some((o) => o.id === i.id)), [], 'no item of the other holder');
  t.ok(mine.every((i) => !i.wallet_id || i.wallet_id === m.wallet.id), 'only the member\'s own wallet');
  const page = (await other.self('GET', 'transactions?limit=1')).json();
  const foreign = await m.self('GET', `transactions?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`);
  t.equal(foreign.statusCode, 400);
  t.equal(foreign.json().code, 'cursor_filter_mismatch', 'another holder\'s cursor');
  const farPage = (await far.self('GET', 'transactions?limit=0')).statusCode;
  t.equal(farPage, 400, 'limit 0 refused');
  const crossTenant = await m.self('GET', `transactions?cursor=${encodeURIComponent((await walkCursor(far)) ?? 'x')}`);
  t.equal(crossTenant.json().code, 'invalid_cursor', 'another workspace\'s cursor');
});

async function walkCursor(m: Member): Promise<string | null> {
  await transfer(m, '1', 'c1');
  return (await m.self('GET', 'transactions?limit=1')).json().next_cursor;
}

t.test('credentials: as the other self calls refuse them', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const other = await s.member();
  const brand = await s.acme.key('brand_manager');
  const lone = await s.session(s.acme);
  const call = (extra: Record<string, string> = {}, token?: string, path = 'transactions') => m.self('GET', path, undefined, extra, token);
  const expect = (r: Awaited<ReturnType<typeof call>>, status: number, code: string, why: string) => {
    t.equal(r.statusCode, status, `${why}: ${r.body}`);
    t.equal(r.json().code, code, why);
  };
  expect(await call({}, brand), 403, 'role_denied', 'a key without member_auth.session');
  expect(await call({ 'x-account-holder-id': m.id }), 400, 'caller_identity_refused', 'a named holder header');
  expect(await call({ 'x-end-user-id': 'u1' }), 400, 'caller_identity_refused', 'a named end user');
  expect(await call({}, undefined, `transactions?account_holder_id=${m.id}`), 400, 'caller_identity_refused', 'a holder id in the query');
  expect(await call({ 'x-member-session-id': `mss_${'A'.repeat(43)}` }), 401, 'member_session_invalid', 'an unknown session');
  expect(await call({ 'x-member-session-id': other.headers['x-member-session-id'] }), 401, 'member_session_invalid', 'another application\'s session');
  expect(await call({}, s.acme.owner), 401, 'member_session_invalid', 'another principal\'s session');
  expect(await s.bearer('GET', '/v1/account-holders/self/transactions', undefined, m.bff, { 'x-svc-publishable-key': m.headers['x-svc-publishable-key'] }), 400, 'invalid_request', 'no session header');
  expect(await s.bearer('GET', '/v1/account-holders/self/transactions', undefined, s.globex.owner, m.headers), 404, 'not_found', 'another tenant\'s key');
  expect(await s.bearer('GET', '/v1/account-holders/self/transactions', undefined, lone.bff, lone.headers), 404, 'account_holder_not_linked', 'no linked holder');
  expect(await s.bearer('GET', '/v1/account-holders/self/transactions', undefined, 'svc_test_nope', m.headers), 401, 'unauthorized', 'a bad key');
});
