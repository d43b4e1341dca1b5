// The member's data exports (docs/platform/account-holders.md "Data exports") through the app on a real
// store, the embedded object store and the real job runner over the store's job records, both driven by
// the tests' manual clock: pending → ready (the downloaded bytes hash to the recorded SHA-256 and hold
// the member's data and no other holder's) → expired (the object deleted); one pending export per holder;
// the daily limit with Retry-After; Idempotency-Key replay; an object store that refuses writes, retried
// by the queue, then failed; another holder's, another workspace's and malformed ids answered 404.
import t from 'tap';
import { createHash } from 'node:crypto';
import { moneyApp, type MoneyApp } from './holder-money-app.ts';
import { RecordJobQueue } from '../../../api/jobs/record-job-queue.ts';
import { holderExportJobs } from '../../../api/account-holders/holder-export-jobs.ts';
import { DATA_EXPORTS } from '../../../api/account-holders/holder-data-exports.ts';
import { ObjectStoreError } from '../../../api/adapters/object-store.ts';

type Member = Awaited<ReturnType<MoneyApp['member']>>;
const DAY = 86_400_000;

/** The app with its export jobs taken over before it is ready: no polling, the queue on the manual clock. */
async function exportApp(t: Parameters<typeof moneyApp>[0]) {
  const s = await moneyApp(t);
  const jobs = holderExportJobs(s.platform, { queue: new RecordJobQueue(s.store, { clock: () => s.clock.now() }), manual: true, backoffMs: 1000 });
  const ask = (m: Member, key: string | undefined, body: unknown = {}) => m.self('POST', 'data-exports', body, key === undefined ? {} : { 'idempotency-key': key });
  const read = (m: Member, id: string) => m.self('GET', `data-exports/${id}`);
  /**
   * The holder linked to a freshly signed-in member (member sessions expire long before an export does):
   * the same holder, a new session. `version` is the holder's version before the link.
   */
  const signInAgain = async (m: Member, version: number): Promise<Member> => {
    const n = await s.session(s.acme);
    const linked = await s.bearer('PATCH', `/v1/account-holders/${m.id}`, { member_id: n.memberId }, s.acme.owner, { 'if-match': `"${version}"` });
    if (linked.statusCode !== 200) throw new Error(linked.body);
    const self: Member['self'] = (method, path, body, extra = {}, token = n.bff) => s.bearer(method, `/v1/account-holders/self/${path}`, body, token, { ...n.headers, ...extra });
    return { ...m, ...n, self };
  };
  return { ...s, jobs, ask, read, signInAgain };
}

async function count(s: MoneyApp, collection: string): Promise<number> {
  let n = 0;
  for await (const _ of s.store.all(collection)) n++;
  return n;
}

t.test('the lifecycle: pending, built by the job, downloaded and checked, expired and deleted', async (t) => {
  const s = await exportApp(t);
  const m = await s.member();
  const other = await s.member();
  for (const [x, email] of [[m, 'ada.friend@example.com'], [other, 'secret.other@example.com']] as const) {
    const c = await s.bearer('POST', '/v1/contacts', { account_holder_id: x.id, name: 'Charles Babbage', email }, s.acme.owner);
    t.equal(c.statusCode, 201, c.body);
    await x.self('GET', 'bank-balance');
    const b = await x.self('POST', 'bank-transfers', { from: 'checking', to: 'savings', amount: '2500', currency: 'USD' }, { 'idempotency-key': 'k' });
    t.equal(b.statusCode, 201, b.body);
  }
  const events = await count(s, 'webhook_events');

  const made = await s.ask(m, 'e1');
  t.equal(made.statusCode, 202, made.body);
  const e = made.json();
  t.match(e, { id: /^dex_[0-9a-f]{26}$/, status: 'pending', format: 'json', expires_at: null, download: null, size_bytes: null, sha256: null, failure_reason: null });
  t.same((await s.read(m, e.id)).json(), e, 'read back as made');

  t.same(await s.jobs.runDue(), ['done'], 'the build job ran once');
  const ready = await s.read(m, e.id);
  t.equal(ready.statusCode, 200, ready.body);
  t.equal(ready.headers['cache-control'], 'no-store');
  const r = ready.json();
  t.equal(r.status, 'ready');
  t.equal(r.expires_at, new Date(s.clock.now() + 7 * DAY).toISOString(), '7 days after it is ready');
  t.match(r.sha256, /^[0-9a-f]{64}$/);
  t.equal(r.download.expires_at, new Date(s.clock.now() + 5 * 60_000).toISOString(), 'the URL lives 5 minutes');
  const url = new URL(r.download.url);
  const [, , , prefix, name] = url.pathname.split('/');
  t.equal(prefix, 'data_exports');
  t.match(name, /^[0-9a-f]{32}$/);
  t.notOk(name!.includes(e.id.slice(4, 16)), 'the object key is random, not derived from the export id');

  const got = await s.app.inject({ method: 'GET', url: url.pathname + url.search });
  t.equal(got.statusCode, 200, 'the presigned GET needs no key');
  t.match(got.headers['content-type'], /^application\/json/);
  t.equal(got.headers['cache-control'], 'private, no-store');
  t.equal(got.rawPayload.length, r.size_bytes, 'size_bytes');
  t.equal(createHash('sha256').update(got.rawPayload).digest('hex'), r.sha256, 'the bytes hash to the recorded SHA-256');
  const doc = JSON.parse(got.body);
  t.equal(doc.format_version, 1);
  t.equal(doc.export_id, e.id);
  t.equal(doc.account_holder.id, m.id);
  t.equal(doc.account_holder.given_name, 'Ada');
  t.same(doc.contacts.map((c: { email: string }) => c.email), ['ada.friend@example.com'], 'the member\'s contacts');
  t.same(doc.wallets, [{ wallet_id: m.wallet.id, chain: 'evm-local', address: m.wallet.address }]);
  t.same(doc.transactions.map((x: { kind: string }) => x.kind), ['bank_transfer', 'bank_transfer'], 'the self/transactions list, all of it');
  t.same(doc.bank.balances, { savings: { balance: '2500', currency: 'USD' }, checking: { balance: '97500', currency: 'USD' } });
  t.equal(doc.bank.transactions.length, 3, 'the opening line and the transfer\'s two lines');
  t.same(doc.consents, []);
  t.notOk(got.body.includes(other.id), 'no other holder\'s id');
  t.notOk(got.body.includes('secret.other@example.com'), 'no other holder\'s contact');
  t.equal(await count(s, 'webhook_events'), events, 'no webhook event carries anything of it');
  const audits: { action: string; after: unknown }[] = [];
  for await (const a of s.store.all<{ action: string; after: unknown }>('audit_log')) if (a.action === 'account_holder.data_export') audits.push(a);
  t.same(audits.map((a) => a.after), [{ account_holder_id: m.id, export_id: e.id }], 'audited with ids only');

  s.clock.advance(5 * 60_000 + 1);
  t.equal((await s.app.inject({ method: 'GET', url: url.pathname + url.search })).statusCode, 403, 'the URL expired');
  const fresh = (await s.read(m, e.id)).json();
  t.not(fresh.download.url, r.download.url, 'each read signs a new URL');

  const key = `${prefix}/${name}`;
  t.ok(await s.platform.objects.read(key), 'the object is there until the export expires');
  t.same(await s.jobs.runDue(), [], 'the expiry job is not due yet');
  s.clock.advance(7 * DAY);
  const again = await s.signInAgain(m, 5);
  const lapsed = (await s.read(again, e.id)).json();
  t.match(lapsed, { status: 'expired', download: null }, 'past expires_at it reads expired at once');
  t.same(await s.jobs.runDue(), ['done'], 'the delayed expiry job ran');
  t.equal(await s.platform.objects.read(key), undefined, 'the object is deleted');
  t.match((await DATA_EXPORTS.in(s.store).get(e.id))!, { status: 'expired', object_key: null });
  t.match((await s.read(again, e.id)).json(), { status: 'expired', download: null, sha256: r.sha256 });
});

t.test('one pending export per holder, the daily limit with Retry-After, idempotent replay', async (t) => {
  const s = await exportApp(t);
  let m = await s.member();
  const other = await s.member();
  const none = await s.ask(m, undefined);
  t.equal(none.statusCode, 400);
  t.equal(none.json().code, 'invalid_request', 'Idempotency-Key is required');
  const first = await s.ask(m, 'e1');
  t.equal(first.statusCode, 202, first.body);
  const again = await s.ask(m, 'e1');
  t.equal(again.statusCode, 202);
  t.same(again.json(), first.json(), 'the same key and body replay the export');
  const reused = await s.ask(m, 'e1', { format: 'json' });
  t.equal(reused.statusCode, 409);
  t.equal(reused.json().code, 'idempotency_key_reused');
  const pending = await s.ask(m, 'e2');
  t.equal(pending.statusCode, 409);
  t.equal(pending.json().code, 'data_export_pending', 'one pending export at a time');
  const third = await s.member();
  const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => s.ask(third, `race-${i}`)));
  t.same(racing.map((r) => r.statusCode).sort(), [202, 409, 409, 409, 409, 409], 'six at once with six keys: exactly one export (the holder\'s lock)');
  t.equal((await DATA_EXPORTS.in(s.store).byIndex(`holder/${third.id}/`)).length, 1, 'one record');
  t.equal((await s.ask(other, 'e1')).statusCode, 202, 'another holder: its own pending export, and the same key is its own');
  t.same(await s.jobs.runDue(), ['done', 'done', 'done']);
  s.clock.advance(60_000);
  t.equal((await s.ask(m, 'e2')).statusCode, 202, 'once built, another');
  await s.jobs.runDue();
  t.equal((await s.ask(m, 'e3')).statusCode, 202, 'a third');
  await s.jobs.runDue();
  const limited = await s.ask(m, 'e4');
  t.equal(limited.statusCode, 429);
  t.equal(limited.json().code, 'rate_limited');
  t.equal(limited.headers['retry-after'], String(24 * 3600 - 60), 'until the first leaves the 24-hour window');
  s.clock.advance((24 * 3600 - 61) * 1000);
  const later = await s.signInAgain(m, 5);
  t.equal((await s.ask(later, 'e4')).statusCode, 429, 'a second before, still limited');
  s.clock.advance(1000);
  t.equal((await s.ask(later, 'e4')).statusCode, 202, 'then one more');
  m = later;
  const bad = await s.ask(m, 'e5', { format: 'csv' });
  t.equal(bad.statusCode, 400, 'json is the only format');
  const named = await s.ask(m, 'e6', { account_holder_id: other.id });
  t.equal(named.json().code, 'caller_identity_refused');
});

t.test('an object store that refuses writes: retried by the queue, then failed with its reason', async (t) => {
  const s = await exportApp(t);
  const m = await s.member();
  const objects = s.platform.objects as { put: (k: string, b: string, c: string) => Promise<void> };
  const put = objects.put.bind(objects);
  let tries = 0;
  objects.put = async () => {
    tries++;
    throw new ObjectStoreError('object store answered 503', 503);
  };
  const e = (await s.ask(m, 'e1')).json();
  t.same(await s.jobs.runDue(), ['retry']);
  t.equal((await s.read(m, e.id)).json().status, 'pending', 'still pending between attempts');
  t.same(await s.jobs.runDue(), [], 'the retry waits for its backoff');
  s.clock.advance(1000);
  t.same(await s.jobs.runDue(), ['retry']);
  s.clock.advance(2000);
  t.same(await s.jobs.runDue(), ['done'], 'the last attempt records the failure');
  t.equal(tries, 3, 'three attempts');
  t.match((await s.read(m, e.id)).json(), { status: 'failed', failure_reason: 'storage_unavailable', download: null, sha256: null });
  objects.put = put;
  const next = await s.ask(m, 'e2');
  t.equal(next.statusCode, 202, 'a failed export is not pending');
  await s.jobs.runDue();
  t.equal((await s.read(m, next.json().id)).json().status, 'ready', 'and the next one succeeds');
});

t.test('only the member\'s own exports: another holder\'s, another workspace\'s and malformed ids are 404', async (t) => {
  const s = await exportApp(t);
  const m = await s.member();
  const other = await s.member();
  const far = await s.member(s.globex);
  const e = (await s.ask(m, 'e1')).json();
  await s.jobs.runDue();
  for (const [who, id, why] of [[other, e.id, 'another holder'], [far, e.id, 'another workspace'], [m, 'dex_nope', 'malformed'], [m, `dex_${'0'.repeat(26)}`, 'unknown'], [m, '..%2F..%2Fetc', 'a path']] as const) {
    const r = await s.read(who, id);
    t.equal(r.statusCode, 404, `${why}: ${r.body}`);
    t.equal(r.json().code, 'not_found', why);
    t.notOk(r.body.includes('data_exports/'), 'nothing of the object is told');
  }
  const brand = await s.acme.key('brand_manager');
  t.equal((await m.self('GET', `data-exports/${e.id}`, undefined, {}, brand)).json().code, 'role_denied');
  t.equal((await m.self('GET', `data-exports/${e.id}`, undefined, { 'x-account-holder-id': m.id })).json().code, 'caller_identity_refused');
  t.equal((await m.self('GET', `data-exports/${e.id}`, undefined, { 'x-member-session-id': other.headers['x-member-session-id'] })).json().code, 'member_session_invalid');
});
