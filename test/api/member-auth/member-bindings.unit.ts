// The tenant's BYO OIDC members (docs/platform/member-auth.md "BYO OIDC members"): list the bindings of
// the workspace's BYO application, and disable one, which revokes its sign-ins at once and refuses its
// next proof. Mirrors the Hosted members' routes: member_auth.read / member_auth.manage, 404 for anything
// of another tenant, workspace or application kind, an audit entry per change.
import t from 'tap';
import { setupMemberAuth, PATHS, type MemberAuthHarness } from './member-auth-harness.ts';
import { SESSION_COLLECTIONS as S, type SessionFamilyRecord } from '../../../api/member-auth/member-session-records.ts';

const bindingsOf = (h: MemberAuthHarness, app = h.app.id) => `${PATHS.apps}/${app}/bindings`;

async function audit(h: MemberAuthHarness) {
  const out: { action: string; resource_id?: string; after?: unknown; actor?: unknown }[] = [];
  for await (const r of h.store.all<{ action: string }>('audit_log')) out.push(r);
  return out;
}

t.test('list the BYO application\'s members, a page at a time; disable one: its sign-ins end at once and its next proof is refused', async (t) => {
  const h = await setupMemberAuth(t);
  const alice = await h.signIn('alice');
  const alice2 = await h.signIn('alice');
  const bob = await h.signIn('bob');

  const all = await h.call('GET', bindingsOf(h));
  t.equal(all.statusCode, 200, all.body);
  t.same(all.json().data.map((b: { id: string }) => b.id), [alice.member.id, bob.member.id], 'one per provider identity, oldest first');
  t.same(Object.keys(all.json().data[0]).sort(), ['created_at', 'id', 'issuer', 'provider_namespace', 'status', 'subject', 'updated_at']);
  t.same(all.json().data[0], { ...all.json().data[0], status: 'active', subject: 'alice', provider_namespace: 'acme-idp', issuer: h.op.issuer });
  t.notMatch(all.body, /mss_|mrc_|eyJ/, 'nothing of sessions or tokens');
  const first = await h.call('GET', `${bindingsOf(h)}?limit=1`);
  t.same([first.json().data.length, first.json().has_more], [1, true]);
  const second = await h.call('GET', `${bindingsOf(h)}?limit=1&cursor=${encodeURIComponent(first.json().next_cursor)}`);
  t.same(second.json().data.map((b: { id: string }) => b.id), [bob.member.id], 'the cursor resumes after alice');
  t.same([second.json().has_more, second.json().next_cursor], [false, null]);
  t.equal((await h.call('GET', `${bindingsOf(h)}?cursor=forged.cursor`)).json().code, 'invalid_cursor');
  t.equal((await h.call('GET', bindingsOf(h), undefined, h.viewer.token)).statusCode, 200, 'a viewer reads them (member_auth.read)');

  const del = await h.call('DELETE', `${bindingsOf(h)}/${alice.member.id}`);
  t.equal(del.statusCode, 204, del.body);
  for (const g of [alice, alice2]) {
    t.equal((await h.bff('GET', PATHS.session, undefined, { session: g.session_id })).json().code, 'member_session_invalid', 'each of her sign-ins is revoked at once');
    t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential })).json().code, 'refresh_invalid', 'and cannot be refreshed');
  }
  const nonce = await h.challenge();
  const proof = await h.op.signIn({ sub: 'alice', nonce });
  const again = await h.bff('POST', PATHS.exchange, { exchange_id: 'disabled-member-0001', id_token: proof });
  t.same([again.statusCode, again.json().code], [403, 'member_binding_inactive'], 'a fresh proof of the same identity is refused with a clear code');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: bob.session_id })).statusCode, 200, 'another member is not touched');

  const fams: SessionFamilyRecord[] = [];
  for await (const f of h.store.all<SessionFamilyRecord>(S.families.name)) fams.push(f);
  t.same(fams.filter((f) => f.member_id === alice.member.id).map((f) => [f.status, f.revoked_reason]), [['revoked', 'member_disabled'], ['revoked', 'member_disabled']]);

  const entries = await audit(h);
  const disabled = entries.filter((e) => e.action === 'member_auth.binding.disable');
  t.equal(disabled.length, 1, 'the change is audit-logged');
  t.equal(disabled[0]!.resource_id, alice.member.id);
  t.match(disabled[0]!.after, { id: alice.member.id, status: 'disabled', application: h.app.id });
  t.equal(entries.filter((e) => e.action === 'member_auth.session_family.revoke').length, 2, 'with one revocation entry per sign-in');
  t.notMatch(JSON.stringify(entries), new RegExp(`${alice.session_id}|${alice.refresh_credential}|${nonce}`), 'no session id, refresh credential or nonce in the audit log');

  const listed = await h.call('GET', bindingsOf(h));
  t.equal(listed.json().data[0].status, 'disabled', 'the binding is kept, disabled');
  const count = (await audit(h)).length;
  t.equal((await h.call('DELETE', `${bindingsOf(h)}/${alice.member.id}`)).statusCode, 204, 'disabling again is idempotent');
  t.equal((await audit(h)).length, count, 'and writes nothing');
});

t.test('bad ids, another tenant\'s ids and a key without the permission are refused and change nothing', async (t) => {
  const h = await setupMemberAuth(t);
  const g = await h.signIn('alice');
  await h.call('POST', '/v1/tenant/member-auth/allowed-origins', { origin: 'https://app.example.com' });
  await h.call('POST', '/v1/tenant/member-auth/redirect-urls', { url: 'https://app.example.com/cb' });
  const hosted = (await h.call('POST', `${PATHS.apps}/hosted`, { enrollment: 'open', origin: 'https://app.example.com', result_callback_url: 'https://app.example.com/cb', bff_key_id: h.owner.key.id })).json();
  const otherApp = (await h.call('PUT', PATHS.byo, { issuer: h.op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' }, h.otherOwner.token)).json();
  const before = await h.snapshot();
  const refusals: [string, string, 'GET' | 'DELETE', string, number, string][] = [
    ['an unknown member', `${bindingsOf(h)}/mem_${'0'.repeat(26)}`, 'DELETE', h.owner.token, 404, 'not_found'],
    ['a malformed member id', `${bindingsOf(h)}/alice`, 'DELETE', h.owner.token, 404, 'not_found'],
    ['a malformed application id', `${bindingsOf(h, 'maa_nope')}/${g.member.id}`, 'DELETE', h.owner.token, 404, 'not_found'],
    ['a Hosted application', `${bindingsOf(h, hosted.id)}/${g.member.id}`, 'DELETE', h.owner.token, 404, 'not_found'],
    ['a Hosted application\'s list', bindingsOf(h, hosted.id), 'GET', h.owner.token, 404, 'not_found'],
    ['another tenant, our application', `${bindingsOf(h)}/${g.member.id}`, 'DELETE', h.otherOwner.token, 404, 'not_found'],
    ['another tenant, our list', bindingsOf(h), 'GET', h.otherOwner.token, 404, 'not_found'],
    ['another tenant\'s application, our member', `${bindingsOf(h, otherApp.id)}/${g.member.id}`, 'DELETE', h.otherOwner.token, 404, 'not_found'],
    ['a viewer disabling', `${bindingsOf(h)}/${g.member.id}`, 'DELETE', h.viewer.token, 403, 'role_denied'],
  ];
  const bffKey = await h.platform.tenancy.createKey(h.sandbox.id, 'member_auth');
  refusals.push(['a BFF key listing', bindingsOf(h), 'GET', bffKey.token, 403, 'role_denied'], ['a BFF key disabling', `${bindingsOf(h)}/${g.member.id}`, 'DELETE', bffKey.token, 403, 'role_denied']);
  const snapshotBefore = before;
  for (const [what, url, method, token, status, code] of refusals) {
    const r = await h.call(method, url, undefined, token);
    t.same([r.statusCode, r.json().code], [status, code], what);
  }
  // The BFF key's creation is the only change since the snapshot; the member-auth records are untouched.
  const after = JSON.parse(await h.snapshot()) as Record<string, unknown[]>;
  const was = JSON.parse(snapshotBefore) as Record<string, unknown[]>;
  for (const c of Object.keys(was)) if (c !== 'audit_log') t.same(after[c], was[c], `${c}: unchanged`);
  t.equal(after.audit_log!.length, was.audit_log!.length, 'no audit entry');
  t.equal((await h.bff('GET', PATHS.session, undefined, { session: g.session_id })).statusCode, 200, 'the member still signs in');
});

t.test('bindings of an earlier provider namespace are not the application\'s members', async (t) => {
  const h = await setupMemberAuth(t);
  const old = await h.signIn('alice');
  t.equal((await h.call('PATCH', `${PATHS.apps}/${h.app.id}`, { provider_namespace: 'acme-idp-2' })).statusCode, 200);
  const app = (await h.call('GET', PATHS.apps)).json().data.find((a: { id: string }) => a.id === h.app.id) as { version: number };
  t.ok(app.version > 1);
  const fresh = await h.signIn('alice');
  t.not(fresh.member.id, old.member.id, 'a new identity space');
  const listed = await h.call('GET', bindingsOf(h));
  t.same(listed.json().data.map((b: { id: string }) => b.id), [fresh.member.id], 'only the pinned namespace\'s members');
  t.equal((await h.call('DELETE', `${bindingsOf(h)}/${old.member.id}`)).statusCode, 404, 'an earlier namespace\'s member is not found');
});
