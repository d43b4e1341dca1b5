// Account holders (docs/platform/account-holders.md) through the app on a real store: create with
// Idempotency-Key, search with filters and cursors, read, PATCH with If-Match and the state machines, the
// append-only history, the member link, the audit log and the events written with each change; and the
// member self calls with a real Hosted sandbox-demo session, with the refusals of rule 5.
import t from 'tap';
import { createHash } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { setupPlatform } from '../setup-platform.ts';
import { WEBHOOK_EVENTS } from '../../../api/webhooks/collections.ts';
import type { Envelope } from '../../../api/webhooks/delivery-engine.ts';
import { MemberBindings } from '../../../api/member-auth/member-bindings.ts';

const sha = (v: string) => createHash('sha256').update(v, 'utf8').digest('hex');
type S = Awaited<ReturnType<typeof setupPlatform>>;

async function setup(t: Parameters<typeof setupPlatform>[0]) {
  const s = await setupPlatform(t);
  const brand = await s.platform.tenancy.createKey(s.sandbox.id, 'brand_manager');
  const developer = await s.platform.tenancy.createKey(s.sandbox.id, 'developer');
  const prodOwner = await s.platform.tenancy.createKey(s.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) });
  const other = await s.platform.tenancy.createTenant('Globex');
  const otherOwner = await s.platform.tenancy.createKey(other.sandbox.id, 'owner');
  return { ...s, brand, developer, prodOwner, otherOwner };
}

const individual = { type: 'individual', given_name: 'Ada', family_name: 'Lovelace', email: '  Ada@Example.COM ', phone: '+447700900123', reference: 'cust-1' };

async function events(s: S, holderId: string) {
  const out: Envelope[] = [];
  for await (const e of WEBHOOK_EVENTS.in(s.store).all()) if ((e as Envelope).resource.id === holderId) out.push(e as Envelope);
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

async function count(s: S) {
  return (await s.call('GET', '/v1/account-holders?limit=100')).json().data.length as number;
}

t.test('create: 201 with an ETag, normalized email and its hash; Idempotency-Key replays or refuses; bad input changes nothing', async (t) => {
  const s = await setup(t);
  const r = await s.call('POST', '/v1/account-holders', individual, s.owner.token, { 'idempotency-key': 'k1' });
  t.equal(r.statusCode, 201, r.body);
  const h = r.json();
  t.match(h.id, /^ah_[0-9a-f]{26}$/);
  t.equal(r.headers.etag, '"1"');
  t.match(h, { type: 'individual', status: 'pending_verification', verification_status: 'unverified', email: 'ada@example.com', email_hash: sha('ada@example.com'), phone_hash: sha('+447700900123'), version: 1, legal_name: null, member_id: null });
  const again = await s.call('POST', '/v1/account-holders', individual, s.owner.token, { 'idempotency-key': 'k1' });
  t.equal(again.json().id, h.id, 'the same key and body replay the holder');
  const reused = await s.call('POST', '/v1/account-holders', { ...individual, reference: 'x' }, s.owner.token, { 'idempotency-key': 'k1' });
  t.equal(reused.statusCode, 409);
  t.equal(reused.json().code, 'idempotency_key_reused');

  const bad: [unknown, number, string][] = [
    [{ type: 'individual', given_name: 'A' }, 422, 'validation_failed'],
    [{ type: 'business', given_name: 'A', legal_name: 'Acme Ltd' }, 422, 'validation_failed'],
    [{ ...individual, email: 'not-an-email' }, 422, 'validation_failed'],
    [{ ...individual, phone: '07700 900123' }, 422, 'validation_failed'],
    [{ ...individual, given_name: 'A\nB' }, 422, 'validation_failed'],
    [{ ...individual, member_id: `mem_${'0'.repeat(26)}` }, 422, 'validation_failed'],
    [{ ...individual, status: 'active' }, 400, 'invalid_request'],
    [{ type: 'robot' }, 400, 'invalid_request'],
  ];
  for (const [body, status, code] of bad) {
    const b = await s.call('POST', '/v1/account-holders', body);
    t.equal(b.statusCode, status, JSON.stringify(body));
    t.equal(b.json().code, code);
  }
  t.equal(await count(s), 1, 'nothing was created by the refused requests');

  // The permission is checked before the body is read: a body that does not even parse gets 403.
  for (const token of [s.viewer.token, s.brand.token]) {
    const denied = await s.app.inject({ method: 'POST', url: '/v1/account-holders', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: '{not json' });
    t.equal(denied.statusCode, 403);
    t.equal(denied.json().code, 'role_denied');
  }
  t.equal((await s.call('GET', '/v1/account-holders', undefined, s.brand.token)).statusCode, 403, 'brand_manager cannot read holders');
  t.equal((await s.call('GET', `/v1/account-holders/${h.id}`, undefined, s.viewer.token)).statusCode, 200, 'a viewer reads them');
  t.equal((await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Acme Ltd' }, s.developer.token)).statusCode, 201, 'a developer manages them');

  const audit = await s.platform.audit.list(s.sandbox.id);
  const created = audit.find((a) => a.action === 'account_holder.create' && a.resource_id === h.id);
  t.ok(created, 'the creation is in the audit log');
  t.notOk(JSON.stringify(created).includes('ada@example.com'), 'the audit log carries the hash, not the address');
  const ev = await events(s, h.id);
  t.same(ev.map((e) => e.type), ['account_holder.created']);
  t.same(ev[0]!.data, { account_holder_id: h.id, status: 'pending_verification', verification_status: 'unverified', version: 1 });
});

t.test('another tenant\'s or environment\'s holder is 404 on every operation', async (t) => {
  const s = await setup(t);
  const h = (await s.call('POST', '/v1/account-holders', individual)).json();
  for (const token of [s.otherOwner.token, s.prodOwner.token]) {
    t.equal((await s.call('GET', `/v1/account-holders/${h.id}`, undefined, token)).statusCode, 404);
    t.equal((await s.call('GET', `/v1/account-holders/${h.id}/history`, undefined, token)).statusCode, 404);
    t.same((await s.call('GET', '/v1/account-holders', undefined, token)).json().data, [], 'not listed either');
  }
  const p = await s.call('PATCH', `/v1/account-holders/${h.id}`, { reference: 'x' }, s.otherOwner.token, { 'if-match': '"1"' });
  t.equal(p.statusCode, 404);
  t.equal((await s.call('GET', '/v1/account-holders/ah_nope')).statusCode, 404, 'a malformed id is 404 too');
  t.equal((await s.call('GET', `/v1/account-holders/${h.id}`)).json().version, 1, 'unchanged');
});

t.test('search: filters, hashes, creation range, cursors bound to the filters', async (t) => {
  const s = await setup(t);
  const a = (await s.call('POST', '/v1/account-holders', individual)).json();
  const b = (await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Acme Ltd', email: 'ops@acme.test' })).json();
  const c = (await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Alan', family_name: 'Turing', phone: '+15555550100' })).json();
  const ids = async (q: string) => (await s.call('GET', `/v1/account-holders${q}`)).json().data.map((h: { id: string }) => h.id);
  t.same(await ids(''), [a.id, b.id, c.id], 'oldest first');
  t.same(await ids(`?email_hash=${sha('ada@example.com')}`), [a.id]);
  t.same(await ids(`?phone_hash=${sha('+15555550100')}`), [c.id]);
  t.same(await ids('?type=business'), [b.id]);
  t.same(await ids(`?created_gte=${encodeURIComponent(b.created_at)}`), [b.id, c.id], 'created_gte bounds from below');
  t.same(await ids(`?created_lt=${encodeURIComponent('2000-01-01T00:00:00Z')}`), []);
  t.same(await ids('?status=active'), []);
  const p1 = (await s.call('GET', '/v1/account-holders?type=individual&limit=1')).json();
  t.same(p1.data.map((h: { id: string }) => h.id), [a.id]);
  t.equal(p1.has_more, true);
  const p2 = (await s.call('GET', `/v1/account-holders?type=individual&limit=1&cursor=${p1.next_cursor}`)).json();
  t.same(p2.data.map((h: { id: string }) => h.id), [c.id]);
  t.equal(p2.has_more, false);
  t.equal(p2.next_cursor, null);
  const mismatch = await s.call('GET', `/v1/account-holders?type=business&limit=1&cursor=${p1.next_cursor}`);
  t.equal(mismatch.json().code, 'cursor_filter_mismatch');
  for (const q of ['?email_hash=ABC', '?status=open', '?created_gte=yesterday', '?limit=0', '?email=ada@example.com']) {
    const r = await s.call('GET', `/v1/account-holders${q}`);
    t.equal(r.statusCode, 400, q);
    t.equal(r.json().code, 'invalid_request');
  }
});

t.test('PATCH: If-Match, the state machines, closed is final, and the events and history of each change', async (t) => {
  const s = await setup(t);
  const h = (await s.call('POST', '/v1/account-holders', individual)).json();
  const patch = (body: unknown, version: number | null, token = s.owner.token) => s.call('PATCH', `/v1/account-holders/${h.id}`, body, token, version === null ? {} : { 'if-match': `"${version}"` });
  const code = async (r: ReturnType<typeof patch>) => (await r).json().code;

  t.equal((await patch({ reference: 'x' }, null)).statusCode, 428);
  t.equal(await code(patch({ reference: 'x' }, null)), 'precondition_required');
  t.equal((await patch({ reference: 'x' }, 7)).statusCode, 412);
  t.equal(await code(patch({ reference: 'x' }, 7)), 'precondition_failed');
  t.equal((await s.call('PATCH', `/v1/account-holders/${h.id}`, { reference: 'x' }, s.owner.token, { 'if-match': 'W/"1"' })).statusCode, 400);
  t.equal((await patch({ reference: 'x' }, 1, s.viewer.token)).statusCode, 403);
  t.equal((await patch({ email: 'nope' }, 1)).statusCode, 422);
  t.equal((await patch({ legal_name: 'Acme' }, 1)).statusCode, 422, 'an individual has no legal name');
  t.equal((await patch({ type: 'business' }, 1)).statusCode, 400, 'the type is fixed');

  t.equal(await code(patch({ status: 'active' }, 1)), 'invalid_transition', 'only a verified holder is active');
  t.equal(await code(patch({ verification_status: 'verified' }, 1)), 'invalid_transition', 'unverified -> verified skips pending');
  t.equal(await code(patch({ status: 'suspended' }, 1)), 'invalid_transition');
  t.equal((await s.call('GET', `/v1/account-holders/${h.id}`)).json().version, 1, 'no refused change changed anything');

  let r = await patch({ verification_status: 'pending', email: 'ada@lovelace.test' }, 1);
  t.equal(r.statusCode, 200, r.body);
  t.equal(r.headers.etag, '"2"');
  t.equal(r.json().email_hash, sha('ada@lovelace.test'));
  r = await patch({ verification_status: 'verified', status: 'active' }, 2);
  t.equal(r.statusCode, 200, r.body);
  t.match(r.json(), { status: 'active', verification_status: 'verified', version: 3 });
  t.same((await patch({ status: 'active' }, 3)).json().version, 3, 'a no-op patch makes no version');
  t.equal((await patch({ status: 'suspended' }, 3)).json().status, 'suspended');
  t.equal(await code(patch({ status: 'pending_verification' }, 4)), 'invalid_transition');
  t.equal((await patch({ status: 'active' }, 4)).json().status, 'active');
  t.equal((await patch({ verification_status: 'expired' }, 5)).json().verification_status, 'expired');
  r = await patch({ status: 'closed' }, 6);
  t.equal(r.json().status, 'closed');
  t.ok(r.json().closed_at);
  t.equal(await code(patch({ status: 'active' }, 7)), 'account_holder_closed');
  t.equal(await code(patch({ reference: 'after' }, 7)), 'account_holder_closed');

  const ev = (await events(s, h.id)).map((e) => e.type);
  t.same(ev.filter((e) => e.startsWith('verification.')), ['verification.holder.verified', 'verification.holder.expired'], 'a verification decision is its own event');
  t.equal(ev.filter((e) => e === 'account_holder.updated').length, 6, 'one update event per change');

  const hist = (await s.call('GET', `/v1/account-holders/${h.id}/history?limit=100`)).json();
  t.same(hist.data.map((e: { version: number }) => e.version), [1, 2, 3, 4, 5, 6, 7], 'one entry per version, oldest first');
  t.equal(hist.data[0].action, 'created');
  t.same(hist.data[1].changes.email_hash, { from: sha('ada@example.com'), to: sha('ada@lovelace.test') });
  t.notOk(JSON.stringify(hist).includes('lovelace.test'), 'history carries hashes, never an address');
  t.same(hist.data[2].changes.status, { from: 'pending_verification', to: 'active' });
  t.same(hist.data[0].actor, { type: 'api_key', id: s.owner.key.id });
  const h1 = (await s.call('GET', `/v1/account-holders/${h.id}/history?limit=3`)).json();
  const h2 = (await s.call('GET', `/v1/account-holders/${h.id}/history?limit=3&cursor=${h1.next_cursor}`)).json();
  t.same(h2.data.map((e: { version: number }) => e.version), [4, 5, 6]);
  t.equal((await s.platform.audit.list(s.sandbox.id)).filter((a) => a.action === 'account_holder.update' && a.resource_id === h.id).length, 6, 'each change is audited');
});

t.test('concurrent PATCHes with the same If-Match: exactly one wins, the other is 412', async (t) => {
  const s = await setup(t);
  const h = (await s.call('POST', '/v1/account-holders', individual)).json();
  const rs = await Promise.all(['one', 'two', 'three'].map((reference) => s.call('PATCH', `/v1/account-holders/${h.id}`, { reference }, s.owner.token, { 'if-match': '"1"' })));
  t.same(rs.map((r) => r.statusCode).sort(), [200, 412, 412]);
  const won = rs.find((r) => r.statusCode === 200)!.json();
  const now = (await s.call('GET', `/v1/account-holders/${h.id}`)).json();
  t.equal(now.version, 2);
  t.equal(now.reference, won.reference, 'the stored holder is the winner\'s');
  t.equal((await s.call('GET', `/v1/account-holders/${h.id}/history`)).json().data.length, 2);
});

async function hostedSession(s: S) {
  const origin = 'http://127.0.0.1:9';
  const bffKey = await s.platform.tenancy.createKey(s.sandbox.id, 'member_auth', { label: 'bff' });
  const ok = async (r: Awaited<ReturnType<S['call']>>) => {
    if (r.statusCode !== 201) throw new Error(r.body);
    return r.json();
  };
  await ok(await s.call('POST', '/v1/tenant/member-auth/allowed-origins', { origin }));
  await ok(await s.call('POST', '/v1/tenant/member-auth/redirect-urls', { url: `${origin}/callback` }));
  const app = await ok(await s.call('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'invite_only', origin, result_callback_url: `${origin}/callback`, bff_key_id: bffKey.key.id }));
  const grant = await ok(await s.call('POST', '/v1/member-auth/hosted/authorizations/sandbox-demo', {}, bffKey.token, { 'x-svc-publishable-key': app.publishable_key }));
  const headers = { 'x-svc-publishable-key': app.publishable_key, 'x-member-session-id': grant.session_id };
  const self = (method: 'GET' | 'POST', path: string, body?: unknown, extra: Record<string, string> = {}, token = bffKey.token) => s.call(method, `/v1/account-holders/self/${path}`, body, token, { ...headers, ...extra });
  return { bffKey, app, member: grant.member.id as string, self, headers };
}

t.test('member link: one holder per member, 422 for a member of another workspace; self calls with a real session', async (t) => {
  const s = await setup(t);
  const m = await hostedSession(s);
  t.match(m.member, /^hsub_/);

  const before = await m.self('GET', 'verification');
  t.equal(before.statusCode, 404);
  t.equal(before.json().code, 'account_holder_not_linked');

  const h = (await s.call('POST', '/v1/account-holders', { ...individual, member_id: m.member })).json();
  t.equal(h.member_kind, 'hosted');
  const taken = await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Second', member_id: m.member });
  t.equal(taken.statusCode, 409);
  t.equal(taken.json().code, 'member_binding_taken');
  const foreign = await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Foreign', member_id: m.member }, s.otherOwner.token);
  t.equal(foreign.json().code, 'validation_failed', 'another tenant cannot link this member');
  t.same((await s.call('GET', `/v1/account-holders?member_id=${m.member}`)).json().data.map((x: { id: string }) => x.id), [h.id]);

  const v = await m.self('GET', 'verification');
  t.equal(v.statusCode, 200, v.body);
  t.same(v.json(), { account_holder_id: h.id, status: 'pending_verification', verification_status: 'unverified', updated_at: h.updated_at });
  const w = await m.self('GET', 'wallets');
  t.same(w.json(), { data: [], next_cursor: null, has_more: false });

  // Rule 5: the member is never named by the caller.
  for (const [hdr, val] of [['x-end-user-id', 'u1'], ['x-oidc-id-token', 'eyJ.x.y'], ['x-account-holder-id', h.id]] as const) {
    const r = await m.self('GET', 'verification', undefined, { [hdr]: val });
    t.equal(r.statusCode, 400, hdr);
    t.equal(r.json().code, 'caller_identity_refused');
  }
  t.equal((await s.call('GET', `/v1/account-holders/self/verification?account_holder_id=${h.id}`, undefined, m.bffKey.token, m.headers)).json().code, 'caller_identity_refused');
  t.equal((await m.self('POST', 'consents', { accepted: [{ policy: 'terms', version: 'x' }], account_holder_id: h.id })).json().code, 'caller_identity_refused');
  t.equal((await s.call('GET', '/v1/account-holders/self/verification', undefined, m.bffKey.token, { 'x-svc-publishable-key': m.headers['x-svc-publishable-key'] })).json().code, 'invalid_request', 'no session header');
  t.equal((await m.self('GET', 'verification', undefined, { 'x-member-session-id': `mss_${'A'.repeat(43)}` })).json().code, 'member_session_invalid');
  t.equal((await m.self('GET', 'verification', undefined, {}, s.owner.token)).json().code, 'member_session_invalid', 'another principal\'s session is unknown');
  t.equal((await m.self('GET', 'verification', undefined, {}, s.brand.token)).statusCode, 403, 'the permission first');

  // Unlinking (or closing) frees the member: the session sees no holder.
  t.equal((await s.call('PATCH', `/v1/account-holders/${h.id}`, { member_id: null }, s.owner.token, { 'if-match': '"1"' })).statusCode, 200);
  t.equal((await m.self('GET', 'verification')).json().code, 'account_holder_not_linked');
  const second = await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Second', member_id: m.member });
  t.equal(second.statusCode, 201, 'the member can be linked again');
  t.equal((await s.call('PATCH', `/v1/account-holders/${second.json().id}`, { status: 'closed' }, s.owner.token, { 'if-match': '"1"' })).statusCode, 200);
  t.equal((await m.self('GET', 'verification')).json().code, 'account_holder_not_linked', 'a closed holder is nobody\'s');
});

t.test('consents: the workspace\'s policies from its branding, versioned; acceptance of the current versions only', async (t) => {
  const s = await setup(t);
  const m = await hostedSession(s);
  const h = (await s.call('POST', '/v1/account-holders', { ...individual, member_id: m.member })).json();
  t.same((await m.self('GET', 'consents')).json(), { account_holder_id: h.id, policies: [], all_current: false });
  t.equal((await m.self('POST', 'consents', { accepted: [{ policy: 'terms', version: 'x' }] })).json().code, 'consent_version_mismatch', 'no policies to accept');

  t.equal((await s.call('PUT', '/v1/branding', { terms_url: 'https://acme.test/terms/v1', privacy_url: 'https://acme.test/privacy/v1' })).statusCode, 200);
  const got = (await m.self('GET', 'consents')).json();
  const terms = got.policies.find((p: { policy: string }) => p.policy === 'terms');
  t.equal(terms.version, sha('https://acme.test/terms/v1').slice(0, 16));
  t.equal(terms.current, false);
  const privacy = got.policies.find((p: { policy: string }) => p.policy === 'privacy');
  // The tenant's read of the same list (GET /tenant/policies): what a member is asked to accept.
  const listed = await s.call('GET', '/v1/tenant/policies');
  t.equal(listed.statusCode, 200);
  t.same(listed.json(), { data: [{ policy: 'terms', url: 'https://acme.test/terms/v1', version: terms.version }, { policy: 'privacy', url: 'https://acme.test/privacy/v1', version: privacy.version }] }, 'GET /tenant/policies lists the current versions');
  const good = [{ policy: 'terms', version: terms.version }, { policy: 'privacy', version: privacy.version }];
  for (const accepted of [[good[0]], [good[0], { ...good[1]!, version: 'stale' }], [...good, { policy: 'marketing', version: 'x' }]]) {
    const r = await m.self('POST', 'consents', { accepted });
    t.equal(r.statusCode, 409);
    t.equal(r.json().code, 'consent_version_mismatch');
  }
  t.equal((await m.self('POST', 'consents', { accepted: 'all' })).statusCode, 400);
  const ok = await m.self('POST', 'consents', { accepted: good });
  t.equal(ok.statusCode, 201, ok.body);
  t.match(ok.json(), { id: /^cns_/, account_holder_id: h.id, member_id: m.member });
  t.equal((await m.self('GET', 'consents')).json().all_current, true);
  const ev = (await events(s, h.id)).filter((e) => e.type === 'account_holder.consent.accepted');
  t.same(ev.map((e) => e.data), [{ account_holder_id: h.id, consent_id: ok.json().id }]);

  // A new document at a new URL is a new version: the acceptance is no longer current.
  await s.call('PUT', '/v1/branding', { terms_url: 'https://acme.test/terms/v2' });
  const after = (await m.self('GET', 'consents')).json();
  t.equal(after.all_current, false);
  t.equal(after.policies.find((p: { policy: string }) => p.policy === 'terms').accepted_version, terms.version);
});

t.test('member link: a BYO OIDC member of the workspace; racing links of one member: one wins', async (t) => {
  const s = await setup(t);
  const bindings = new MemberBindings(s.store, s.platform.clock);
  const bind = async (workspace: string, subject: string) => {
    const r = await bindings.resolve({ tenant: s.tenant.id, workspace }, 'ns-1', 'https://idp.example', subject);
    await s.store.batch([r.create!]);
    return r.binding;
  };
  const mine = await bind(s.sandbox.id, 'alice');
  const prod = await bind(s.production.id, 'bob');
  const h = await s.call('POST', '/v1/account-holders', { ...individual, member_id: mine.member_id });
  t.equal(h.statusCode, 201, h.body);
  t.match(h.json(), { member_id: mine.member_id, member_kind: 'byo_oidc' });
  t.equal((await s.call('POST', '/v1/account-holders', { ...individual, member_id: prod.member_id })).json().code, 'validation_failed', 'a member of the other environment');
  const carol = await bind(s.sandbox.id, 'carol');
  await bindings.disable(carol.key);
  t.equal((await s.call('POST', '/v1/account-holders', { ...individual, member_id: carol.member_id })).json().code, 'validation_failed', 'a disabled binding');

  const dave = await bind(s.sandbox.id, 'dave');
  const race = await Promise.all(['One', 'Two', 'Three'].map((legal_name) => s.call('POST', '/v1/account-holders', { type: 'business', legal_name, member_id: dave.member_id })));
  t.same(race.map((r) => r.statusCode).sort(), [201, 409, 409], 'one holder per member, also under concurrency');
  t.equal((await s.call('GET', `/v1/account-holders?member_id=${dave.member_id}`)).json().data.length, 1);
});
