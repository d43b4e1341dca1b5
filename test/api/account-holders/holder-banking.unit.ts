// The sandbox bank (docs/platform/account-holders.md "Sandbox bank") through the app on a real store,
// with real Hosted sandbox-demo member sessions: the accounts open once with the opening deposit (also
// under concurrent first calls), a transfer is one two-sided ledger entry written under the holder's
// lock (concurrent transfers never overdraw), Idempotency-Key replays or refuses, bad input and every
// refusal change nothing, the credentials of the other self calls, production refused, and the bank
// transactions walked page by page.
import t from 'tap';
import { moneyApp, type MoneyApp } from './holder-money-app.ts';
import { LEDGER_ENTRIES } from '../../../api/ledger/collections.ts';
import type { LedgerEntryRecord } from '../../../api/ledger/platform-ledger.ts';
import { holderBank, sandboxBankDeposits } from '../../../api/ledger/platform-ledger.ts';
import { SANDBOX_MAGIC_AMOUNTS } from '../../../api/rails/sandbox-rail.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';

const OPS = ['bank-balance', 'checking-balance', 'bank-transactions', 'sandbox-banking-context'] as const;
const checking = (h: string) => holderBank(h, 'checking', 'USD');
const savings = (h: string) => holderBank(h, 'savings', 'USD');

/** The ledger entries of a holder's bank accounts, in id order. */
async function bankEntries(s: MoneyApp, holder: string): Promise<LedgerEntryRecord[]> {
  const out: LedgerEntryRecord[] = [];
  for await (const e of LEDGER_ENTRIES.in(s.store).all()) if (e.source.startsWith(`bank/${holder}/`)) out.push(e);
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** What a refused request must leave alone: every ledger entry, idempotency record and audit entry. */
async function snapshot(s: MoneyApp) {
  const out: unknown[] = [];
  for (const c of ['platform_ledger_entries', 'holder_bank_transfer_keys', 'idempotency', 'audit_log']) for await (const r of s.store.all(c)) out.push(r);
  return JSON.stringify(out);
}

t.test('the accounts open with the opening deposit; balances, checking alone, transactions and the sandbox context', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const bal = await m.self('GET', 'bank-balance');
  t.equal(bal.statusCode, 200, bal.body);
  t.same(bal.json(), { savings: { balance: '0', currency: 'USD' }, checking: { balance: '100000', currency: 'USD' } }, 'USD 1,000.00 in checking, nothing in savings');
  t.same((await m.self('GET', 'checking-balance')).json(), { balance: '100000', currency: 'USD' });
  const tx = (await m.self('GET', 'bank-transactions')).json();
  t.same(tx.data, [{
    id: `bop_${m.id.slice(3)}:checking`, account: 'checking', direction: 'credit', amount: '100000', currency: 'USD', kind: 'opening_deposit',
    counterparty_account: 'sandbox_bank', created_at: new Date(s.clock.now()).toISOString(),
  }]);
  t.equal(tx.next_cursor, null);
  t.equal(tx.has_more, false);
  const [opening] = await bankEntries(s, m.id);
  t.same(opening!.postings, [{ debit: sandboxBankDeposits('USD'), credit: checking(m.id), asset: 'fiat:USD', amount: '100000' }], 'against the sandbox bank\'s counter-account');

  const ctx = await m.self('GET', 'sandbox-banking-context');
  t.equal(ctx.statusCode, 200, ctx.body);
  const c = ctx.json();
  t.match(c, { account_holder_id: m.id, bank: { name: 'Sandbox Bank', routing_number: /^[0-9]{9}$/, sandbox: true }, opening_deposit: { savings: '0', checking: '100000', currency: 'USD' } });
  t.same(c.accounts.map((a: { account: string }) => a.account), ['savings', 'checking']);
  for (const a of c.accounts) t.match(a.account_number_masked, /^\*{6}[0-9]{4}$/, 'last 4 digits only');
  t.same((await m.self('GET', 'sandbox-banking-context')).json(), c, 'derived deterministically: the same on every call');
  t.same(c.funding_rail_magic_amounts.map((x: { amount: string }) => x.amount), Object.keys(SANDBOX_MAGIC_AMOUNTS), 'the rail\'s own magic amounts');
  t.same(c.funding_rail_magic_amounts[0], { amount: '100001', currency: 'USD', outcome: 'failed', reason: 'insufficient_funds' });
  const other = await s.member();
  const masked = (x: { accounts: { account_number_masked: string }[] }) => x.accounts.map((a) => a.account_number_masked);
  t.notSame(masked((await other.self('GET', 'sandbox-banking-context')).json()), masked(c), 'another holder, other numbers');
  t.equal((await bankEntries(s, m.id)).length, 1, 'reads wrote nothing more');
});

t.test('the opening deposit is written once under concurrent first calls', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => m.self('GET', OPS[i % OPS.length]!)));
  t.same(rs.map((r) => r.statusCode), rs.map(() => 200), 'every first call answered');
  const entries = await bankEntries(s, m.id);
  t.equal(entries.length, 1, 'one opening entry');
  t.equal(entries[0]!.source, `bank/${m.id}/account-opening`);
  t.equal(await s.ledger.balance(checking(m.id), 'fiat:USD'), 100000n);
  // A transfer racing the first reads opens nothing twice either.
  const n = await s.member();
  const mixed = await Promise.all([n.self('GET', 'bank-balance'), n.self('POST', 'bank-transfers', { from: 'checking', to: 'savings', amount: '100', currency: 'USD' }, { 'idempotency-key': 'first' }), n.self('GET', 'checking-balance')]);
  t.same(mixed.map((r) => r.statusCode), [200, 201, 200]);
  t.equal((await bankEntries(s, n.id)).filter((e) => e.source.endsWith('/account-opening')).length, 1);
});

t.test('a transfer: one two-sided ledger entry, audited; insufficient balance; Idempotency-Key replays or refuses', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const body = { from: 'checking', to: 'savings', amount: '25000', currency: 'USD' };
  const r = await m.self('POST', 'bank-transfers', body, { 'idempotency-key': 'k1' });
  t.equal(r.statusCode, 201, r.body);
  const tr = r.json();
  t.match(tr, { id: /^btr_[0-9a-f]{26}$/, from: 'checking', to: 'savings', amount: '25000', currency: 'USD', status: 'completed', created_at: new Date(s.clock.now()).toISOString() });
  t.same((await m.self('GET', 'bank-balance')).json(), { savings: { balance: '25000', currency: 'USD' }, checking: { balance: '75000', currency: 'USD' } });
  const entries = await bankEntries(s, m.id);
  t.equal(entries.length, 2);
  t.same(entries[1]!.postings, [{ debit: checking(m.id), credit: savings(m.id), asset: 'fiat:USD', amount: '25000' }], 'one posting: debit checking, credit savings');
  t.equal(entries[1]!.resource_id, tr.id);
  const audit = (await s.platform.audit.list(s.acme.sandbox.id)).filter((e: { action: string }) => e.action === 'account_holder.bank_transfer');
  t.equal(audit.length, 1, 'audited');
  t.match(audit[0], { resource_id: tr.id, before: null, after: { account_holder_id: m.id, ...tr } });

  const before = await snapshot(s);
  t.same((await m.self('POST', 'bank-transfers', body, { 'idempotency-key': 'k1' })).json(), tr, 'the same key and body replay');
  const reused = await m.self('POST', 'bank-transfers', { ...body, amount: '1' }, { 'idempotency-key': 'k1' });
  t.equal(reused.statusCode, 409);
  t.equal(reused.json().code, 'idempotency_key_reused');
  const noKey = await m.self('POST', 'bank-transfers', body);
  t.equal(noKey.statusCode, 400);
  t.equal(noKey.json().code, 'invalid_request', 'Idempotency-Key is required');
  const short = await m.self('POST', 'bank-transfers', { from: 'savings', to: 'checking', amount: '25001', currency: 'USD' }, { 'idempotency-key': 'k2' });
  t.equal(short.statusCode, 409, short.body);
  t.equal(short.json().code, 'insufficient_balance');
  t.equal(await snapshot(s), before, 'replays and refusals wrote nothing');
  // The refused key was not spent: the affordable amount goes through under it.
  const fits = await m.self('POST', 'bank-transfers', { from: 'savings', to: 'checking', amount: '25000', currency: 'USD' }, { 'idempotency-key': 'k2' });
  t.equal(fits.statusCode, 201, fits.body);
  t.same((await m.self('GET', 'bank-balance')).json().savings, { balance: '0', currency: 'USD' }, 'down to zero exactly');

  // Keys are the holder's own: another member's k1 is its own transfer.
  const o = await s.member();
  const theirs = await o.self('POST', 'bank-transfers', { ...body, amount: '7' }, { 'idempotency-key': 'k1' });
  t.equal(theirs.statusCode, 201, theirs.body);
  t.not(theirs.json().id, tr.id);
});

t.test('concurrent transfers that would together overdraw: exactly the affordable ones succeed', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const rs = await Promise.all(Array.from({ length: 7 }, (_, i) => m.self('POST', 'bank-transfers', { from: 'checking', to: 'savings', amount: '30000', currency: 'USD' }, { 'idempotency-key': `c${i}` })));
  t.same(rs.map((r) => r.statusCode).sort(), [201, 201, 201, 409, 409, 409, 409], '3 × 300.00 of 1,000.00');
  for (const r of rs.filter((x) => x.statusCode === 409)) t.equal(r.json().code, 'insufficient_balance');
  t.same((await m.self('GET', 'bank-balance')).json(), { savings: { balance: '90000', currency: 'USD' }, checking: { balance: '10000', currency: 'USD' } });
  t.equal((await bankEntries(s, m.id)).length, 4, 'the opening and three transfers');
  // The same key sent concurrently is one transfer.
  const same = await Promise.all(Array.from({ length: 4 }, () => m.self('POST', 'bank-transfers', { from: 'savings', to: 'checking', amount: '500', currency: 'USD' }, { 'idempotency-key': 'dup' })));
  t.same(same.map((r) => r.statusCode), [201, 201, 201, 201]);
  t.equal(new Set(same.map((r) => r.json().id)).size, 1, 'one transfer, answered four times');
  t.equal((await bankEntries(s, m.id)).length, 5);
});

t.test('bad input is 422 validation_failed (or 400 for a schema violation) and changes nothing', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  await m.self('GET', 'bank-balance');
  const before = await snapshot(s);
  const ok = { from: 'checking', to: 'savings', amount: '100', currency: 'USD' };
  const rows: [string, unknown, number, string, string?][] = [
    ['from == to', { ...ok, to: 'checking' }, 422, 'validation_failed', 'to'],
    ['amount 0', { ...ok, amount: '0' }, 422, 'validation_failed', 'amount'],
    ['a leading zero', { ...ok, amount: '0100' }, 422, 'validation_failed', 'amount'],
    ['a negative amount', { ...ok, amount: '-100' }, 422, 'validation_failed', 'amount'],
    ['a decimal amount', { ...ok, amount: '1.50' }, 422, 'validation_failed', 'amount'],
    ['not digits', { ...ok, amount: 'abc' }, 422, 'validation_failed', 'amount'],
    ['empty', { ...ok, amount: '' }, 422, 'validation_failed', 'amount'],
    ['a space', { ...ok, amount: ' 100' }, 422, 'validation_failed', 'amount'],
    ['16 digits', { ...ok, amount: '1000000000000000' }, 422, 'validation_failed', 'amount'],
    ['another currency', { ...ok, currency: 'EUR' }, 422, 'validation_failed', 'currency'],
    ['lower case', { ...ok, currency: 'usd' }, 422, 'validation_failed', 'currency'],
    ['a number amount', { ...ok, amount: 100 }, 400, 'invalid_request'],
    ['an unknown account', { ...ok, to: 'brokerage' }, 400, 'invalid_request'],
    ['an unknown field', { ...ok, memo: 'x' }, 400, 'invalid_request'],
    ['a missing field', { from: 'checking', to: 'savings', amount: '100' }, 400, 'invalid_request'],
  ];
  for (const [why, body, status, code, field] of rows) {
    const r = await m.self('POST', 'bank-transfers', body, { 'idempotency-key': `bad-${why.replace(/[^a-z0-9]/g, '-')}` });
    t.equal(r.statusCode, status, `${why}: ${r.body}`);
    t.equal(r.json().code, code, why);
    if (field) t.match(r.json().error, new RegExp(`^${field}:`), `${why}: names ${field}`);
  }
  const limit = await m.self('GET', 'bank-transactions?limit=0');
  t.equal(limit.statusCode, 400, 'limit out of range');
  t.equal(await snapshot(s), before, 'nothing changed');
});

t.test('credentials: as the other self calls refuse them, on all five banking operations', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const other = await s.member();
  const brand = await s.acme.key('brand_manager');
  await m.self('GET', 'bank-balance');
  const before = await snapshot(s);
  const calls: ['GET' | 'POST', string, unknown][] = [...OPS.map((p) => ['GET', p, undefined] as ['GET', string, undefined]), ['POST', 'bank-transfers', { from: 'checking', to: 'savings', amount: '1', currency: 'USD' }]];
  for (const [method, path, body] of calls) {
    const call = (extra: Record<string, string> = {}, token?: string, b = body, p = path) => m.self(method, p, b, { 'idempotency-key': 'cred', ...extra }, token);
    const expect = async (r: Awaited<ReturnType<typeof call>>, status: number, code: string, why: string) => {
      t.equal(r.statusCode, status, `${method} ${path}: ${why}: ${r.body}`);
      t.equal(r.json().code, code, `${path}: ${why}`);
    };
    await expect(await call({}, brand), 403, 'role_denied', 'a key without member_auth.session');
    await expect(await call({ 'x-account-holder-id': m.id }), 400, 'caller_identity_refused', 'a named holder header');
    await expect(await call({ 'x-end-user-id': 'u1' }), 400, 'caller_identity_refused', 'a named end user');
    await expect(await call({}, undefined, body, `${path}?account_holder_id=${m.id}`), 400, 'caller_identity_refused', 'a holder id in the query');
    if (body) await expect(await call({}, undefined, { ...(body as object), account_holder_id: m.id }), 400, 'caller_identity_refused', 'a holder id in the body');
    await expect(await call({ 'x-member-session-id': `mss_${'A'.repeat(43)}` }), 401, 'member_session_invalid', 'an unknown session');
    await expect(await call({ 'x-member-session-id': other.headers['x-member-session-id'] }), 401, 'member_session_invalid', 'another application\'s session');
    await expect(await call({}, s.acme.owner), 401, 'member_session_invalid', 'another principal\'s session');
    const noSession = await s.bearer(method, `/v1/account-holders/self/${path}`, body, m.bff, { 'x-svc-publishable-key': m.headers['x-svc-publishable-key'], 'idempotency-key': 'cred' });
    await expect(noSession, 400, 'invalid_request', 'no session header');
    await expect(await s.bearer(method, `/v1/account-holders/self/${path}`, body, s.globex.owner, { ...m.headers, 'idempotency-key': 'cred' }), 404, 'not_found', 'another tenant\'s key: the publishable key is not its workspace\'s');
  }
  t.equal(await snapshot(s), before, 'no refusal wrote anything');
});

t.test('no linked holder is 404 account_holder_not_linked; a holder that is not active is 409 account_holder_not_active', async (t) => {
  const s = await moneyApp(t);
  const lone = await s.session(s.acme);
  const m = await s.member();
  const calls: ['GET' | 'POST', string, unknown][] = [...[...OPS, 'balance'].map((p) => ['GET', p, undefined] as ['GET', string, undefined]), ['POST', 'bank-transfers', { from: 'checking', to: 'savings', amount: '1', currency: 'USD' }]];
  const suspend = await s.bearer('PATCH', `/v1/account-holders/${m.id}`, { status: 'suspended' }, s.acme.owner, { 'if-match': '"5"' });
  t.equal(suspend.statusCode, 200, suspend.body);
  for (const [method, path, body] of calls) {
    const r = await s.bearer(method, `/v1/account-holders/self/${path}`, body, lone.bff, { ...lone.headers, 'idempotency-key': 'x' });
    t.equal(r.statusCode, 404, `${path}: ${r.body}`);
    t.equal(r.json().code, 'account_holder_not_linked');
    const q = await m.self(method, path, body, { 'idempotency-key': 'x' });
    t.equal(q.statusCode, 409, `${path}: ${q.body}`);
    t.equal(q.json().code, 'account_holder_not_active');
  }
  t.same(await bankEntries(s, m.id), [], 'a suspended holder\'s accounts were not opened');
});

t.test('production workspaces: the sandbox bank is 403 sandbox_only, before the session is read', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const sk = ed25519.utils.randomSecretKey();
  const bff = await s.platform.tenancy.createKey(s.acme.production.id, 'member_auth', { label: 'bff', signingPublicKey: bytesToHex(ed25519.getPublicKey(sk)) });
  const prod = bff.token;
  for (const path of OPS) {
    const r = await s.bearer('GET', `/v1/account-holders/self/${path}`, undefined, prod, m.headers);
    t.equal(r.statusCode, 403, `${path}: ${r.body}`);
    t.equal(r.json().code, 'sandbox_only');
  }
  // A production POST: unsigned, 401; signed with the key's signing key, 403 sandbox_only, nothing written.
  const url = '/v1/account-holders/self/bank-transfers';
  const raw = JSON.stringify({ from: 'checking', to: 'savings', amount: '1', currency: 'USD' });
  const headers = { host: 'localhost:80', authorization: `Bearer ${prod}`, 'content-type': 'application/json', 'idempotency-key': 'p', ...m.headers };
  const unsigned = await s.app.inject({ method: 'POST', url, headers, payload: raw });
  t.same([unsigned.statusCode, unsigned.json().code], [401, 'signature_required'], 'a production change is signed first');
  const signed = await s.app.inject({ method: 'POST', url, headers: { ...headers, ...signedHeaders({ keyId: bff.key.id, secretKey: sk }, 'POST', `http://localhost:80${url}`, raw, Math.floor(s.clock.now() / 1000)) }, payload: raw });
  t.same([signed.statusCode, signed.json().code], [403, 'sandbox_only'], 'signed: the sandbox bank refuses it');
  const balance = await s.bearer('GET', '/v1/account-holders/self/balance', undefined, prod, m.headers);
  // self/balance is not a sandbox operation: it goes on to the session, here a sandbox application's.
  t.same([balance.statusCode, balance.json().code], [403, 'publishable_key_mismatch'], 'the balance is not refused as sandbox_only');
  t.same(await bankEntries(s, m.id), []);
});

t.test('bank transactions: the envelope, oldest first, walked page by page without repeats; cursors bound to the holder', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const ids: string[] = [];
  for (const [i, [from, to, amount]] of ([['checking', 'savings', '1000'], ['savings', 'checking', '400'], ['checking', 'savings', '250'], ['checking', 'savings', '5']] as const).entries()) {
    const r = await m.self('POST', 'bank-transfers', { from, to, amount, currency: 'USD' }, { 'idempotency-key': `p${i}` });
    t.equal(r.statusCode, 201, r.body);
    ids.push(r.json().id);
  }
  const all = (await m.self('GET', 'bank-transactions?limit=100')).json();
  t.equal(all.data.length, 9, 'the opening line and two lines per transfer');
  t.same(all.data.slice(1, 3), [
    { id: `${ids[0]}:checking`, account: 'checking', direction: 'debit', amount: '1000', currency: 'USD', kind: 'transfer', counterparty_account: 'savings', created_at: all.data[1].created_at },
    { id: `${ids[0]}:savings`, account: 'savings', direction: 'credit', amount: '1000', currency: 'USD', kind: 'transfer', counterparty_account: 'checking', created_at: all.data[1].created_at },
  ], 'a transfer: the debited account first');
  t.same(all.data.filter((_: unknown, i: number) => i % 2 === 1).map((l: { id: string }) => l.id.split(':')[0]), ids, 'transfers in the order made');
  for (const limit of [1, 2, 4]) {
    const walked: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null; has_more: boolean } = (await m.self('GET', `bank-transactions?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).json();
      walked.push(...page.data.map((l) => l.id));
      t.equal(page.has_more, page.next_cursor !== null);
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 20);
    t.same(walked, all.data.map((l: { id: string }) => l.id), `limit ${limit}: every line once, in order`);
  }
  const first = (await m.self('GET', 'bank-transactions?limit=2')).json();
  // A line added during a walk appears at its end.
  t.equal((await m.self('POST', 'bank-transfers', { from: 'checking', to: 'savings', amount: '1', currency: 'USD' }, { 'idempotency-key': 'late' })).statusCode, 201);
  const rest = (await m.self('GET', `bank-transactions?limit=100&cursor=${encodeURIComponent(first.next_cursor)}`)).json();
  t.equal(rest.data.length, 9, 'seven left and the two new lines');
  const forged = await m.self('GET', `bank-transactions?cursor=${encodeURIComponent(`${first.next_cursor}x`)}`);
  t.equal(forged.statusCode, 400);
  t.equal(forged.json().code, 'invalid_cursor');
  const o = await s.member();
  const foreign = await o.self('GET', `bank-transactions?cursor=${encodeURIComponent(first.next_cursor)}`);
  t.equal(foreign.statusCode, 400, 'another holder\'s cursor');
  t.equal(foreign.json().code, 'cursor_filter_mismatch');
  const g = await s.member(s.globex);
  t.equal((await g.self('GET', `bank-transactions?cursor=${encodeURIComponent(first.next_cursor)}`)).json().code, 'invalid_cursor', 'another workspace\'s cursor');
  t.same((await g.self('GET', 'bank-balance')).json().checking, { balance: '100000', currency: 'USD' }, 'another tenant\'s holder has its own accounts');
});
