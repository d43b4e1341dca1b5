// GET /member-auth/session, POST /member-auth/refresh and POST /member-auth/sign-out (platform-api.md
// "Member-session artifacts", "Confidential exchange rules" 2, 5, 7 and 10; docs/platform/member-auth.md
// "Member sessions"), on sessions made from real ID tokens of an OpenID provider on loopback.
import t, { type Test } from 'tap';
import { setupMemberAuth, PATHS, type MemberAuthHarness } from './member-auth-harness.ts';
import { MemberBindings } from '../../../api/member-auth/member-bindings.ts';
import { SESSION_COLLECTIONS as S, LIFETIMES, type SessionFamilyRecord } from '../../../api/member-auth/member-session-records.ts';

async function unchanged(t: Test, h: MemberAuthHarness, what: string, fn: () => Promise<{ statusCode: number; json(): { code: string } }>, code: string, status: number) {
  const before = await h.snapshot();
  const r = await fn();
  t.equal(r.statusCode, status, `${what}: status`);
  t.equal(r.json().code, code, `${what}: code`);
  t.equal(await h.snapshot(), before, `${what}: nothing changed`);
}

const families = async (h: MemberAuthHarness) => {
  const out: SessionFamilyRecord[] = [];
  for await (const f of h.store.all<SessionFamilyRecord>(S.families.name)) out.push(f);
  return out;
};

t.test('rule 2: the bearer and X-SVC-Publishable-Key on every operation; X-Member-Session-Id on session and sign-out', async (t) => {
  const h = await setupMemberAuth(t);
  const g = await h.signIn();
  for (const [m, url, body] of [['POST', PATHS.challenges, {}], ['POST', PATHS.exchange, { exchange_id: 'x'.repeat(20), id_token: 'a.b.c' }], ['GET', PATHS.session, undefined], ['POST', PATHS.refresh, { refresh_credential: g.refresh_credential }], ['POST', PATHS.signOut, {}]] as const) {
    const noBearer = await h.server.inject({ method: m, url, headers: { 'x-svc-publishable-key': h.app.publishable_key, 'x-member-session-id': g.session_id, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { payload: JSON.stringify(body) } : {}) });
    t.equal(noBearer.statusCode, 401, `${m} ${url} without the bearer key`);
    const noPk = await h.bff(m, url, body, { pk: null, session: g.session_id });
    t.equal(noPk.json().code, 'invalid_request', `${m} ${url} without the publishable key`);
  }
  for (const [m, url] of [['GET', PATHS.session], ['POST', PATHS.signOut]] as const) {
    const r = await h.bff(m, url, m === 'POST' ? {} : undefined);
    t.equal(r.statusCode, 400, `${url} without X-Member-Session-Id`);
    t.match(r.json().error, /X-Member-Session-Id is required/);
  }
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: g.session_id })).statusCode, 200, 'the session survived all of that');
});

t.test('member sessions need member_auth.session: a viewer or brand manager key is refused, a member_auth (BFF) key can do only this', async (t) => {
  const h = await setupMemberAuth(t);
  const g = await h.signIn();
  for (const role of ['viewer', 'brand_manager'] as const) {
    const { token } = await h.platform.tenancy.createKey(h.sandbox.id, role);
    for (const [m, url, body] of [['POST', PATHS.challenges, {}], ['GET', PATHS.session, undefined], ['POST', PATHS.refresh, { refresh_credential: g.refresh_credential }], ['POST', PATHS.signOut, {}]] as const) {
      await unchanged(t, h, `${role}: ${m} ${url}`, () => h.bff(m, url, body, { token, session: g.session_id }), 'role_denied', 403);
    }
  }
  const bffKey = await h.platform.tenancy.createKey(h.sandbox.id, 'member_auth');
  t.equal((await h.bff('POST', PATHS.challenges, {}, { token: bffKey.token })).statusCode, 201, 'the BFF key asks for a challenge');
  t.equal((await h.call('GET', '/v1/webhook-endpoints', undefined, bffKey.token)).json().code, 'role_denied', 'and reads no webhook endpoint');
  t.equal((await h.call('GET', PATHS.apps, undefined, bffKey.token)).json().code, 'role_denied', 'nor the member-auth configuration');
});

t.test('rule 5: member calls take the member only from the server-held session, and recheck everything each time', async (t) => {
  const h = await setupMemberAuth(t);
  const g = await h.signIn();
  const ctx = await h.bff('GET', PATHS.session, undefined, { session: g.session_id });
  t.equal(ctx.statusCode, 200);
  t.same(Object.keys(ctx.json()).sort(), ['acr', 'amr', 'application', 'environment', 'member', 'session', 'workspace']);
  t.notMatch(ctx.body, /mss_|mrc_|eyJ|alice/, 'no session id, refresh credential, token or provider subject in the context');

  for (const [name, value] of [['x-oidc-id-token', g.idToken], ['x-end-user-id', 'alice'], ['x-account-holder-id', 'ah_1'], ['x-member-id', g.member.id]] as const) {
    await unchanged(t, h, name, () => h.bff('GET', PATHS.session, undefined, { session: g.session_id, headers: { [name]: value } }), 'caller_identity_refused', 400);
  }
  await unchanged(t, h, 'a caller-chosen holder id in the body', () => h.bff('POST', PATHS.signOut, { account_holder_id: 'ah_1' }, { session: g.session_id }), 'caller_identity_refused', 400);
  await unchanged(t, h, 'a provider token in the refresh body', () => h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential, provider_token: g.idToken }), 'caller_identity_refused', 400);
  await unchanged(t, h, 'a provider token as the session id', () => h.bff('GET', PATHS.session, undefined, { session: g.idToken }), 'member_session_invalid', 401);

  // Another principal of the same workspace, another tenant, another application's key: unknown.
  const dev = await h.platform.tenancy.createKey(h.sandbox.id, 'developer');
  await unchanged(t, h, 'another bearer principal', () => h.bff('GET', PATHS.session, undefined, { session: g.session_id, token: dev.token }), 'member_session_invalid', 401);
  await h.call('POST', '/v1/tenant/member-auth/allowed-origins', { origin: 'https://app.example.com' });
  await h.call('POST', '/v1/tenant/member-auth/redirect-urls', { url: 'https://app.example.com/cb' });
  const hosted = (await h.call('POST', `${PATHS.apps}/hosted`, { enrollment: 'open', origin: 'https://app.example.com', result_callback_url: 'https://app.example.com/cb', bff_key_id: h.owner.key.id })).json();
  await unchanged(t, h, 'another application\'s key', () => h.bff('GET', PATHS.session, undefined, { session: g.session_id, pk: hosted.publishable_key }), 'member_session_invalid', 401);
  await unchanged(t, h, 'another tenant', () => h.bff('GET', PATHS.session, undefined, { session: g.session_id, token: h.otherOwner.token }), 'not_found', 404);

  // The member's binding disabled: every call with its sessions stops, and so do its exchanges.
  const bindings = new MemberBindings(h.store, h.platform.clock);
  const keys: string[] = [];
  for await (const b of h.store.all<{ key: string }>(S.bindings.name)) keys.push(b.key);
  await bindings.disable(keys[0]!);
  await unchanged(t, h, 'a disabled binding', () => h.bff('GET', PATHS.session, undefined, { session: g.session_id }), 'member_binding_inactive', 403);
  await unchanged(t, h, 'a disabled binding refreshing', () => h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential }), 'member_binding_inactive', 403);
  const nonce = await h.challenge();
  const proof = await h.op.signIn({ sub: 'alice', nonce });
  await unchanged(t, h, 'a disabled binding exchanging', () => h.bff('POST', PATHS.exchange, { exchange_id: 'bound-member-0001', id_token: proof }), 'member_binding_inactive', 403);

  // A change of the application's configuration ends its sessions (their trust was the old version's).
  const b = await h.signIn('bob');
  t.equal((await h.call('PATCH', `${PATHS.apps}/${h.app.id}`, { required_acr: ['urn:acr:high'] })).statusCode, 200);
  const stale = await h.bff('GET', PATHS.session, undefined, { session: b.session_id });
  t.equal(stale.json().code, 'member_session_invalid');
  t.match(stale.json().error, /configuration changed/);
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: b.refresh_credential })).json().code, 'member_session_invalid', 'nor can it be refreshed into the new version');

  // Expiry of the session id itself.
  h.advance(LIFETIMES.session + 1);
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: g.session_id })).json().code, 'member_session_invalid');
});

t.test('rule 7: refresh rotates a single-use credential; a replay by its own caller revokes the family', async (t) => {
  const h = await setupMemberAuth(t);
  const g = await h.signIn();
  const r = await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential });
  t.equal(r.statusCode, 200, r.body);
  const n = r.json();
  t.not(n.session_id, g.session_id);
  t.not(n.refresh_credential, g.refresh_credential);
  t.same(n.member, { id: g.member.id, created: false });
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: g.session_id })).json().code, 'member_session_invalid', 'the old session id is replaced');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: n.session_id })).statusCode, 200);

  // A mismatched caller presenting the used credential is told it is unknown, and nothing is revoked.
  const dev = await h.platform.tenancy.createKey(h.sandbox.id, 'developer');
  await unchanged(t, h, 'another principal replays', () => h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential }, { token: dev.token }), 'refresh_invalid', 401);
  const otherPk = (await h.call('PUT', PATHS.byo, { issuer: h.op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' }, h.otherOwner.token)).json().publishable_key;
  await unchanged(t, h, 'another tenant replays', () => h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential }, { token: h.otherOwner.token, pk: otherPk }), 'refresh_invalid', 401);
  await unchanged(t, h, 'a malformed credential', () => h.bff('POST', PATHS.refresh, { refresh_credential: 'mrc_nope' }), 'refresh_invalid', 401);
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: n.session_id })).statusCode, 200, 'the family is intact');

  const other = await h.signIn('alice');
  const replay = await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential });
  t.equal(replay.statusCode, 401);
  t.equal(replay.json().code, 'refresh_replayed');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: n.session_id })).json().code, 'member_session_invalid', 'the current session of the family is revoked');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: n.refresh_credential })).json().code, 'refresh_invalid', 'and its current refresh credential');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: other.session_id })).statusCode, 200, 'another sign-in of the same member is not touched');
  const revoked = (await h.platform.audit.list(h.sandbox.id)).filter((e) => e.action === 'member_auth.session_family.revoke');
  t.equal(revoked.length, 1, 'the revocation is audited');
  t.match(revoked[0]!.after, { member_id: g.member.id, reason: 'refresh_replay' });
  t.notMatch(JSON.stringify(revoked), /mss_|mrc_/);

  // Concurrent refreshes of one credential: one wins, the other is a replay.
  const c = await h.signIn('carol');
  const [x, y] = await Promise.all([h.bff('POST', PATHS.refresh, { refresh_credential: c.refresh_credential }), h.bff('POST', PATHS.refresh, { refresh_credential: c.refresh_credential })]);
  t.same([x.statusCode, y.statusCode].sort(), [200, 401], 'exactly one refresh succeeds');

  // Expiry of the refresh credential.
  const d = await h.signIn('dave');
  h.advance(LIFETIMES.refresh + 1);
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: d.refresh_credential })).json().code, 'refresh_invalid');
});

t.test('rule 10: sign-out revokes the exact session by default; {"scope":"all"} every session of the member', async (t) => {
  const h = await setupMemberAuth(t);
  const laptop = await h.signIn('alice');
  const phone = await h.signIn('alice');
  const bob = await h.signIn('bob');
  const out = await h.bff('POST', PATHS.signOut, undefined, { session: laptop.session_id });
  t.equal(out.statusCode, 200, out.body);
  t.same(out.json(), { revoked_sessions: 1 });
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: laptop.session_id })).json().code, 'member_session_invalid');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: laptop.refresh_credential })).json().code, 'refresh_invalid', 'its refresh credential ends with it');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: phone.session_id })).statusCode, 200, 'the member\'s other session stays');
  await unchanged(t, h, 'signing out twice', () => h.bff('POST', PATHS.signOut, {}, { session: laptop.session_id }), 'member_session_invalid', 401);

  const tablet = await h.signIn('alice');
  const all = await h.bff('POST', PATHS.signOut, { scope: 'all' }, { session: phone.session_id });
  t.same(all.json(), { revoked_sessions: 2 });
  for (const s of [phone, tablet]) t.equal((await h.bff('GET', PATHS.session, undefined, { session: s.session_id })).json().code, 'member_session_invalid');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: bob.session_id })).statusCode, 200, 'another member is not touched');
  t.equal((await h.bff('POST', PATHS.signOut, { scope: 'everything' }, { session: bob.session_id })).statusCode, 400);
  const audit = (await h.platform.audit.list(h.sandbox.id)).map((e) => e.action);
  t.equal(audit.filter((a) => a === 'member_auth.session.sign_out').length, 1);
  t.equal(audit.filter((a) => a === 'member_auth.session.sign_out_all').length, 2);
  t.same((await families(h)).filter((f) => f.status === 'active').map((f) => f.member_id), [bob.member.id]);

  // An expired session id still signs out, so its refresh credential does not outlive it.
  const late = await h.signIn('bob');
  h.advance(LIFETIMES.session + 1);
  t.same((await h.bff('POST', PATHS.signOut, {}, { session: late.session_id })).json(), { revoked_sessions: 1 });
});

t.test('a refresh repeated with its refresh_id after a lost answer gets the same session; any other repeat is a replay', async (t) => {
  const h = await setupMemberAuth(t);
  const g = await h.signIn();
  const id = 'refresh-0123456789abcdef';
  const first = await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential, refresh_id: id });
  t.equal(first.statusCode, 200, first.body);
  // The answer was lost: the BFF sends the same refresh again.
  const again = await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential, refresh_id: id });
  t.equal(again.statusCode, 200, again.body);
  t.same(again.json(), first.json(), 'the same session and refresh credential');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: first.json().session_id })).statusCode, 200, 'the session works');
  t.equal((await families(h)).filter((f) => f.status === 'active').length, 1, 'the sign-in is intact');
  t.equal((await h.platform.audit.list(h.sandbox.id)).filter((e) => e.action === 'member_auth.session_family.revoke').length, 0, 'nothing revoked');
  const sealed = JSON.stringify(await h.store.get('member_auth_refresh_credentials', (await import('../../../api/member-auth/member-session-records.ts')).sha256hex(g.refresh_credential)));
  t.notMatch(sealed, /mss_|mrc_/, 'the kept grant is sealed');

  // Another refresh_id with the spent credential is a replay, as is the same one past the window.
  const other = await h.signIn('bob');
  const o1 = await h.bff('POST', PATHS.refresh, { refresh_credential: other.refresh_credential, refresh_id: id });
  t.equal(o1.statusCode, 200);
  h.advance(61);
  const late = await h.bff('POST', PATHS.refresh, { refresh_credential: other.refresh_credential, refresh_id: id });
  t.equal(late.json().code, 'refresh_replayed', 'past 60 s: a replay');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: o1.json().session_id })).json().code, 'member_session_invalid', 'and the sign-in is revoked');

  const stolen = await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential, refresh_id: 'someone-else-0123456789' });
  t.equal(stolen.json().code, 'refresh_replayed', 'another refresh_id: a replay');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: first.json().session_id })).json().code, 'member_session_invalid', 'the sign-in is revoked');

  // Once the new session was refreshed in turn, the old repeat gets nothing back.
  const c = await h.signIn('carol');
  const c1 = (await h.bff('POST', PATHS.refresh, { refresh_credential: c.refresh_credential, refresh_id: id })).json();
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: c1.refresh_credential })).statusCode, 200);
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: c.refresh_credential, refresh_id: id })).json().code, 'refresh_replayed', 'a repeat after the next refresh is a replay');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: 'mrc_x', refresh_id: 'short' })).statusCode, 400, 'a malformed refresh_id is 400');
});
