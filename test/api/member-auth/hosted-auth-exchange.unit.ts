// The BFF's side of Hosted Auth (platform-api.md "Confidential exchange rules" 6, 7, 11, 12;
// docs/platform/hosted-auth.md "Exchange"): the one-time result, its PKCE and callback binding, its
// binding to the application, publishable key and BFF principal, a replay, the configuration recheck,
// disabled members, the tenant's member routes and the sandbox demo persona. Each refusal is shown to
// change nothing (a replay revokes the session the result made, and only that).
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { setupHosted, HOSTED, pageError } from './hosted-auth-harness.ts';

t.test('exchange: PKCE S256 and the exact redirect_uri; one-time, and a replay revokes the session it made', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const c = await h.ceremony('alice@acme.test');
  const before = await h.snapshot();
  const wrongVerifier = await h.bff('POST', HOSTED.exchange, { code: c.code, code_verifier: 'x'.repeat(43), redirect_uri: h.callback });
  t.equal(wrongVerifier.statusCode, 400);
  t.equal(wrongVerifier.json().code, 'hosted_result_invalid', 'a wrong verifier');
  const wrongRedirect = await h.bff('POST', HOSTED.exchange, { code: c.code, code_verifier: c.a.pkce.verifier, redirect_uri: `${h.callback}?x=1` });
  t.equal(wrongRedirect.statusCode, 400);
  t.equal(wrongRedirect.json().code, 'hosted_redirect_mismatch', 'another redirect_uri');
  const unknown = await h.bff('POST', HOSTED.exchange, { code: `hrc_${'A'.repeat(43)}`, code_verifier: c.a.pkce.verifier, redirect_uri: h.callback });
  t.equal(unknown.json().code, 'hosted_result_invalid', 'an unknown result');
  t.equal(await h.snapshot(), before, 'the refusals changed nothing: the result still works');

  const ok = await h.exchange(c);
  t.equal(ok.statusCode, 201);
  const session = ok.json().session_id as string;
  t.equal((await h.bff('GET', HOSTED.session, undefined, { session })).statusCode, 200);
  const replay = await h.exchange(c);
  t.equal(replay.statusCode, 409);
  t.equal(replay.json().code, 'hosted_result_replayed', 'a replay');
  const after = await h.bff('GET', HOSTED.session, undefined, { session });
  t.equal(after.statusCode, 401);
  t.equal(after.json().code, 'member_session_invalid', 'the session the result made is revoked');
  const revoked = JSON.parse(await h.snapshot()) as Record<string, { revoked_reason?: string; action?: string }[]>;
  t.match(revoked.member_auth_session_families, [{ status: 'revoked', revoked_reason: 'result_replay' }]);
  t.ok(revoked.audit_log!.some((e) => e.action === 'member_auth.session_family.revoke'), 'audit-logged');
  const settled = await h.snapshot();
  const again = await h.exchange(c);
  t.equal(again.json().code, 'hosted_result_replayed');
  t.equal(await h.snapshot(), settled, 'a further replay changes nothing');
});

t.test('a result is bound to its application, publishable key and BFF principal', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const app2 = await h.createApp('open');
  const c = await h.ceremony('alice@acme.test');
  const before = await h.snapshot();
  const otherApp = await h.exchange(c, { pk: app2.publishable_key });
  t.equal(otherApp.statusCode, 400);
  t.equal(otherApp.json().code, 'hosted_result_invalid', 'through another application\'s publishable key: unknown');
  const notBff = await h.exchange(c, { token: h.owner.token });
  t.equal(notBff.statusCode, 403);
  t.equal(notBff.json().code, 'forbidden', 'another bearer key of the workspace');
  const otherTenant = await h.exchange(c, { token: h.otherOwner.token });
  t.equal(otherTenant.statusCode, 404);
  t.equal(otherTenant.json().code, 'not_found', 'another tenant\'s key');
  // A second BFF principal of the workspace, registered for app2: its own application, still not this result.
  const bff2 = await h.platform.tenancy.createKey(h.sandbox.id, 'member_auth');
  t.equal((await h.call('PATCH', `/v1/tenant/member-auth/applications/${app2.id}`, { bff_key_id: bff2.key.id })).statusCode, 200);
  const otherBff = await h.exchange(c, { token: bff2.token, pk: app2.publishable_key });
  t.equal(otherBff.json().code, 'hosted_result_invalid', 'another BFF principal with its own application');
  const patched = JSON.parse(await h.snapshot()) as Record<string, unknown>;
  const was = JSON.parse(before) as Record<string, unknown>;
  for (const k of ['member_auth_hosted_authorizations', 'member_auth_hosted_results', 'member_auth_sessions', 'member_auth_session_families']) t.same(patched[k], was[k], `${k} unchanged`);
  t.equal((await h.exchange(c)).statusCode, 201, 'its own BFF still exchanges it');
});

t.test('an expired result, and a configuration change since the ceremony began, are refused', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const c = await h.ceremony('alice@acme.test');
  h.advance(121);
  const before = await h.snapshot();
  const late = await h.exchange(c);
  t.equal(late.statusCode, 400);
  t.equal(late.json().code, 'hosted_result_invalid');
  t.match(late.json().error, /expired/);
  t.equal(await h.snapshot(), before, 'nothing changed');

  const c2 = await h.ceremony('alice@acme.test');
  t.equal((await h.call('PATCH', `/v1/tenant/member-auth/applications/${h.app.id}`, { enrollment: 'open' })).statusCode, 200);
  const mid = await h.snapshot();
  const changed = await h.exchange(c2);
  t.equal(changed.statusCode, 409);
  t.equal(changed.json().code, 'member_auth_changed', 'rule 6: the application changed');
  t.equal(await h.snapshot(), mid, 'nothing changed');
  const a = await h.begin();
  t.equal((await h.call('PATCH', `/v1/tenant/member-auth/applications/${h.app.id}`, { enrollment: 'invite_only' })).statusCode, 200);
  const page = await h.browser(a.path).get();
  t.equal(pageError(page.body), 'member_auth_changed', 'the page refuses a ceremony begun under the old version');
});

t.test('a disabled member: no email, no sign-in, and its sessions stop', async (t) => {
  const h = await setupHosted(t);
  const alice = await h.invite('alice@acme.test');
  await h.invite('bob@acme.test');
  const c = await h.ceremony('alice@acme.test');
  const session = (await h.exchange(c)).json().session_id as string;
  const del = await h.call('DELETE', `/v1/tenant/member-auth/applications/${h.app.id}/members/${alice.id}`);
  t.equal(del.statusCode, 204);
  const ctx = await h.bff('GET', HOSTED.session, undefined, { session });
  t.equal(ctx.statusCode, 403);
  t.equal(ctx.json().code, 'member_binding_inactive', 'the session stops at its next use');
  const a = h.browser((await h.begin()).path);
  await a.get();
  await a.submit('email', { email: 'alice@acme.test' });
  const b = h.browser((await h.begin()).path);
  await b.get();
  await b.submit('email', { email: 'bob@acme.test' });
  await h.sink.nextCode('bob@acme.test');
  t.equal(h.sink.sentTo('alice@acme.test').length, 1, 'no new email to the disabled member');
  const before = await h.snapshot();
  t.match((await a.submit('code', { code: '123456' })).body, /That code is not right/);
  const after = JSON.parse(await h.snapshot()) as Record<string, unknown>;
  t.same(after.member_auth_hosted_results, (JSON.parse(before) as Record<string, unknown>).member_auth_hosted_results, 'no result');
  const list = await h.call('GET', `/v1/tenant/member-auth/applications/${h.app.id}/members`);
  t.match(list.json().data, [{ id: alice.id, status: 'disabled' }, { email: 'bob@acme.test', status: 'active' }]);
});

t.test('tenant routes: invite, list, disable; permissions; another tenant\'s ids are 404', async (t) => {
  const h = await setupHosted(t);
  const path = `/v1/tenant/member-auth/applications/${h.app.id}/members`;
  const made = await h.call('POST', path, { email: 'Dora@Acme.test' }, h.owner.token, { 'idempotency-key': 'inv-1' });
  t.equal(made.statusCode, 201);
  t.match(made.json(), { id: /^hsub_/, email: 'dora@acme.test', status: 'active', source: 'invited', demo: false, totp: false });
  t.same((await h.call('POST', path, { email: 'Dora@Acme.test' }, h.owner.token, { 'idempotency-key': 'inv-1' })).json(), made.json(), 'Idempotency-Key replays');
  const before = await h.snapshot();
  const refusals: [string, Awaited<ReturnType<typeof h.call>>, number, string][] = [
    ['a duplicate', await h.call('POST', path, { email: 'dora@acme.test' }), 409, 'conflict'],
    ['not an address', await h.call('POST', path, { email: 'dora at acme' }), 422, 'validation_failed'],
    ['a viewer', await h.call('POST', path, { email: 'eve@acme.test' }, h.viewer.token), 403, 'role_denied'],
    ['another tenant lists', await h.call('GET', path, undefined, h.otherOwner.token), 404, 'not_found'],
    ['another tenant invites', await h.call('POST', path, { email: 'eve@acme.test' }, h.otherOwner.token), 404, 'not_found'],
    ['another tenant disables', await h.call('DELETE', `${path}/${made.json().id}`, undefined, h.otherOwner.token), 404, 'not_found'],
    ['an unknown member', await h.call('DELETE', `${path}/hsub_${'0'.repeat(26)}`), 404, 'not_found'],
    ['a malformed application id', await h.call('GET', '/v1/tenant/member-auth/applications/nope/members'), 404, 'not_found'],
  ];
  for (const [what, r, status, code] of refusals) {
    t.equal(r.statusCode, status, `${what}: ${status}`);
    t.equal(r.json().code, code, `${what}: ${code}`);
  }
  t.equal(await h.snapshot(), before, 'nothing changed');
  const app2 = await h.createApp('invite_only');
  const cross = await h.call('DELETE', `/v1/tenant/member-auth/applications/${app2.id}/members/${made.json().id}`);
  t.equal(cross.statusCode, 404, 'a member of another application of the workspace');
  const viewerList = await h.call('GET', path, undefined, h.viewer.token);
  t.equal(viewerList.statusCode, 200);
  t.match(viewerList.json(), { data: [{ email: 'dora@acme.test' }], has_more: false, next_cursor: null });
  t.equal((await h.call('DELETE', `${path}/${made.json().id}`)).statusCode, 204);
  const audit: { action: string }[] = [];
  for await (const r of h.store.all<{ action: string }>('audit_log')) audit.push(r);
  t.same(audit.map((e) => e.action).filter((a) => a.startsWith('member_auth.hosted_member')), ['member_auth.hosted_member.invite', 'member_auth.hosted_member.disable'], 'audit-logged');
});

t.test('sandbox demo: a session for the application\'s demo persona; production refuses', async (t) => {
  const h = await setupHosted(t);
  const first = await h.bff('POST', HOSTED.demo, {});
  t.equal(first.statusCode, 201, first.body);
  t.match(first.json(), { session_id: /^mss_/, member: { id: /^hsub_/, created: true } });
  const ctx = await h.bff('GET', HOSTED.session, undefined, { session: first.json().session_id });
  t.match(ctx.json(), { member: { id: first.json().member.id }, application: { kind: 'hosted' }, amr: ['demo'] });
  const second = await h.bff('POST', HOSTED.demo, {});
  t.match(second.json(), { member: { id: first.json().member.id, created: false } }, 'one demo persona per application');
  const list = await h.call('GET', `/v1/tenant/member-auth/applications/${h.app.id}/members`);
  t.match(list.json().data, [{ id: first.json().member.id, demo: true, source: 'demo' }]);
  const notBff = await h.bff('POST', HOSTED.demo, {}, { token: h.owner.token });
  t.equal(notBff.json().code, 'forbidden', 'the BFF principal only');

  // Production: a signed owner key sets up a Hosted application; its BFF principal asks for the demo.
  const sk = ed25519.utils.randomSecretKey();
  const live = await h.platform.tenancy.createKey(h.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(sk)) });
  const signed = (url: string, body: unknown) => {
    const raw = JSON.stringify(body);
    return h.server.inject({ method: 'POST', url, headers: { host: 'localhost:80', authorization: `Bearer ${live.token}`, 'content-type': 'application/json', ...signedHeaders({ keyId: live.key.id, secretKey: sk }, 'POST', `http://localhost:80${url}`, raw) }, payload: raw });
  };
  t.equal((await signed('/v1/tenant/member-auth/allowed-origins', { origin: 'https://app.acme.example' })).statusCode, 201);
  t.equal((await signed('/v1/tenant/member-auth/redirect-urls', { url: 'https://app.acme.example/cb' })).statusCode, 201);
  const prod = await signed('/v1/tenant/member-auth/applications/hosted', { enrollment: 'open', origin: 'https://app.acme.example', result_callback_url: 'https://app.acme.example/cb', bff_key_id: live.key.id });
  t.equal(prod.statusCode, 201, prod.body);
  const before = await h.snapshot();
  const raw = '{}';
  const refused = await h.server.inject({
    method: 'POST', url: HOSTED.demo, payload: raw,
    headers: { host: 'localhost:80', authorization: `Bearer ${live.token}`, 'content-type': 'application/json', 'x-svc-publishable-key': prod.json().publishable_key, ...signedHeaders({ keyId: live.key.id, secretKey: sk }, 'POST', `http://localhost:80${HOSTED.demo}`, raw) },
  });
  t.equal(refused.statusCode, 403);
  t.equal(refused.json().code, 'sandbox_only');
  t.equal(await h.snapshot(), before, 'nothing changed');
});
