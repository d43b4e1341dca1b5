// The tenant area's member-auth configuration through the platform API (docs/platform/member-auth.md):
// allowed origins, redirect URLs, the BYO OIDC application checked against a real OpenID provider on
// loopback, Hosted applications; permissions, cross-tenant 404s, audit entries and Idempotency-Key.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { closedPort, startProvider } from './oidc-provider-fixture.ts';
import { resolvePublishableKey } from '../../../api/member-auth/publishable-keys.ts';

const O = '/v1/tenant/member-auth/allowed-origins';
const R = '/v1/tenant/member-auth/redirect-urls';
const A = '/v1/tenant/member-auth/applications';
const PUT = '/v1/tenant/member-auth/application';

async function setup(t: Parameters<typeof setupPlatform>[0]) {
  // Discovery goes out under the webhooks' destination policy: loopback is allowed only by its allow-list.
  const s = await setupPlatform(t, { webhookAllowedDestinations: ['127.0.0.1'] });
  const other = await s.platform.tenancy.createTenant('Other');
  const otherOwner = await s.platform.tenancy.createKey(other.sandbox.id, 'owner');
  return { ...s, other, otherOwner };
}

async function audit(s: Awaited<ReturnType<typeof setup>>, action: string) {
  return (await s.platform.audit.list(s.sandbox.id)).filter((e) => e.action === action);
}

t.test('allowed origins: normalized, unique, paginated, deleted; bad input changes nothing', async (t) => {
  const s = await setup(t);
  const made = await s.call('POST', O, { origin: 'HTTPS://App.Example.COM:443' });
  t.equal(made.statusCode, 201);
  t.equal(made.json().origin, 'https://app.example.com', 'lower-case host, default port dropped');
  t.match(made.json().id, /^mao_[0-9a-f]{26}$/);
  t.equal((await s.call('POST', O, { origin: 'https://app.example.com' })).json().code, 'conflict', 'a duplicate is 409 conflict');
  t.equal((await s.call('POST', O, { origin: 'http://localhost:3000' })).statusCode, 201, 'http to loopback in sandbox');
  for (const bad of ['https://app.example.com/', 'https://app.example.com/path', 'https://*.example.com', 'http://app.example.com', 'https://u:p@app.example.com', 'app.example.com', 'https://app.example.com?x=1', 'ftp://x.example.com']) {
    const r = await s.call('POST', O, { origin: bad });
    t.equal(r.statusCode, 422, bad);
    t.equal(r.json().code, 'validation_failed', bad);
  }
  t.equal((await s.call('POST', O, { origin: 5 })).json().code, 'invalid_request', 'a number is not coerced');
  t.equal((await s.call('POST', O, { origin: 'https://b.example.com', extra: 1 })).statusCode, 400, 'unknown field');
  const p1 = await s.call('GET', `${O}?limit=1`);
  t.equal(p1.statusCode, 200);
  t.equal(p1.json().data.length, 1);
  t.equal(p1.json().has_more, true);
  const p2 = await s.call('GET', `${O}?limit=1&cursor=${p1.json().next_cursor}`);
  t.same(p2.json().data.map((o: { origin: string }) => o.origin), ['http://localhost:3000']);
  t.equal(p2.json().has_more, false);
  t.equal((await audit(s, 'member_auth.allowed_origin.create')).length, 2, 'only the two that were made are audited');

  t.equal((await s.call('DELETE', `${O}/${made.json().id}`, undefined, s.otherOwner.token)).statusCode, 404, 'another tenant: 404');
  t.equal((await s.call('DELETE', `${O}/${made.json().id}`)).statusCode, 204);
  t.equal((await s.call('DELETE', `${O}/${made.json().id}`)).statusCode, 404);
  const del = await audit(s, 'member_auth.allowed_origin.delete');
  t.equal(del.length, 1);
  t.same(del[0]!.before, { id: made.json().id, origin: 'https://app.example.com', created_at: made.json().created_at });
  t.same(del[0]!.actor, { type: 'api_key', id: s.owner.key.id });
  t.equal((await s.call('GET', O, undefined, s.otherOwner.token)).json().data.length, 0, 'another tenant sees none');
});

t.test('permissions: a viewer reads but changes nothing; a brand manager does neither', async (t) => {
  const s = await setup(t);
  const brand = await s.platform.tenancy.createKey(s.sandbox.id, 'brand_manager');
  t.equal((await s.call('GET', O, undefined, s.viewer.token)).statusCode, 200);
  for (const [m, url, body] of [['POST', O, { origin: 'https://a.example.com' }], ['POST', R, { url: 'https://a.example.com/cb' }], ['PUT', PUT, { issuer: 'https://id.example.com', audience: 'x', provider_namespace: 'x' }],
    ['POST', `${A}/hosted`, {}], ['PATCH', `${A}/maa_x`, {}], ['DELETE', `${A}/maa_x`, undefined], ['DELETE', `${O}/mao_x`, undefined], ['DELETE', `${R}/mar_x`, undefined]] as const) {
    const r = await s.call(m, url, body, s.viewer.token);
    t.equal(r.statusCode, 403, `${m} ${url}`);
    t.equal(r.json().code, 'role_denied');
  }
  t.equal((await s.call('GET', A, undefined, brand.token)).json().code, 'role_denied');
  t.equal((await s.platform.audit.list(s.sandbox.id)).length, 0, 'nothing changed');
});

t.test('redirect URLs: exact, their origin allowed, unique, deleted', async (t) => {
  const s = await setup(t);
  const refused = await s.call('POST', R, { url: 'https://app.example.com/callback' });
  t.equal(refused.statusCode, 422, 'origin not allowed yet');
  t.match(refused.json().error, /not an allowed origin/);
  await s.call('POST', O, { origin: 'https://app.example.com' });
  const made = await s.call('POST', R, { url: 'https://APP.example.com:443/callback?x=1' });
  t.equal(made.statusCode, 201);
  t.same({ url: made.json().url, origin: made.json().origin }, { url: 'https://app.example.com/callback?x=1', origin: 'https://app.example.com' });
  t.equal((await s.call('POST', R, { url: 'https://app.example.com/callback?x=1' })).statusCode, 409);
  for (const bad of ['https://app.example.com/cb#frag', 'https://app.example.com/*', 'http://app.example.com/cb', '/relative', 'https://app.example.com/a b']) {
    t.equal((await s.call('POST', R, { url: bad })).statusCode, 422, bad);
  }
  t.equal((await s.call('GET', R)).json().data.length, 1);
  const origins = (await s.call('GET', O)).json().data as { id: string }[];
  t.equal((await s.call('DELETE', `${O}/${origins[0]!.id}`)).statusCode, 409, 'an origin in use is kept');
  t.equal((await s.call('DELETE', `${R}/${made.json().id}`, undefined, s.otherOwner.token)).statusCode, 404, 'another tenant: 404');
  t.equal((await s.call('DELETE', `${R}/${made.json().id}`)).statusCode, 204);
  t.equal((await audit(s, 'member_auth.redirect_url.delete')).length, 1);
  t.equal((await s.call('DELETE', `${O}/${origins[0]!.id}`)).statusCode, 204, 'then it can go');
});

t.test('Idempotency-Key on the POSTs: same body replays, another body is 409, nothing is made twice', async (t) => {
  const s = await setup(t);
  const h = { 'idempotency-key': 'origin-1' };
  const a = await s.call('POST', O, { origin: 'https://app.example.com' }, s.owner.token, h);
  const b = await s.call('POST', O, { origin: 'https://app.example.com' }, s.owner.token, h);
  t.equal(b.statusCode, 201);
  t.same(b.json(), a.json(), 'the same answer');
  t.equal((await s.call('POST', O, { origin: 'https://other.example.com' }, s.owner.token, h)).json().code, 'idempotency_key_reused');
  t.equal((await s.call('GET', O)).json().data.length, 1);
  t.equal((await audit(s, 'member_auth.allowed_origin.create')).length, 1);
  const r1 = await s.call('POST', R, { url: 'https://app.example.com/cb' }, s.owner.token, { 'idempotency-key': 'r' });
  const r2 = await s.call('POST', R, { url: 'https://app.example.com/cb' }, s.owner.token, { 'idempotency-key': 'r' });
  t.same(r2.json(), r1.json());
  const hostedBody = { enrollment: 'open', origin: 'https://app.example.com', result_callback_url: 'https://app.example.com/cb', bff_key_id: s.owner.key.id };
  const h1 = await s.call('POST', `${A}/hosted`, hostedBody, s.owner.token, { 'idempotency-key': 'h' });
  const h2 = await s.call('POST', `${A}/hosted`, hostedBody, s.owner.token, { 'idempotency-key': 'h' });
  t.equal(h1.statusCode, 201);
  t.same(h2.json(), h1.json());
  t.equal((await s.call('GET', A)).json().data.length, 1, 'one application');
});

t.test('BYO OIDC: discovery against a real OpenID provider, versioned upsert, patch, delete', async (t) => {
  const s = await setup(t);
  const op = await startProvider(t);
  const body = { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp', required_amr: ['mfa'] };
  const made = await s.call('PUT', PUT, body);
  t.equal(made.statusCode, 201, made.body);
  const app = made.json();
  t.equal(app.kind, 'byo_oidc');
  t.equal(app.version, 1);
  t.match(app.publishable_key, /^pk_test_[A-Za-z0-9_-]{32}$/);
  t.equal(app.byo_oidc.issuer, op.issuer);
  t.equal(app.byo_oidc.jwks_uri, `${op.issuer}/jwks`, 'jwks_uri from the discovery document');
  t.equal(app.byo_oidc.jwks_thumbprints.length, 1, 'the one signing key, read by jose');
  t.equal(app.byo_oidc.max_proof_age_sec, 300, 'default');
  t.same(app.byo_oidc.required_amr, ['mfa']);

  const again = await s.call('PUT', PUT, body);
  t.equal(again.statusCode, 200);
  t.equal(again.json().version, 1, 'an identical PUT changes nothing');
  const changed = await s.call('PUT', PUT, { ...body, audience: 'bff-client-2' });
  t.equal(changed.statusCode, 200);
  t.equal(changed.json().id, app.id, 'one BYO application per workspace');
  t.equal(changed.json().version, 2);
  t.equal(changed.json().publishable_key, app.publishable_key, 'the key does not change');

  const patched = await s.call('PATCH', `${A}/${app.id}`, { max_proof_age_sec: 120, required_acr: ['urn:acr:high'] });
  t.equal(patched.statusCode, 200);
  t.equal(patched.json().version, 3);
  t.equal(patched.json().byo_oidc.max_proof_age_sec, 120);
  t.equal((await s.call('PATCH', `${A}/${app.id}`, {})).json().version, 3, '{} is a no-op');
  t.equal((await s.call('PATCH', `${A}/${app.id}`, { enrollment: 'open' })).statusCode, 422, 'a Hosted field on a BYO application');
  t.equal((await s.call('PATCH', `${A}/${app.id}`, { issuer: 'https://x.example.com' })).statusCode, 400, 'the issuer changes through PUT');
  t.equal((await s.call('PATCH', `${A}/${app.id}`, { provider_namespace: 'Bad Namespace' })).statusCode, 422);
  t.equal((await s.call('PATCH', `${A}/${app.id}`, { max_proof_age_sec: 5 })).statusCode, 400);
  t.equal((await s.call('PATCH', `${A}/${app.id}`, { audience: 'x' }, s.otherOwner.token)).statusCode, 404, 'another tenant: 404');
  t.equal((await s.call('GET', A)).json().data[0].version, 3);

  const updates = await audit(s, 'member_auth.application.update');
  t.equal(updates.length, 2, 'one entry per change, none for no-ops');
  t.match(updates[0]!.before, { version: 1, byo_oidc: { audience: 'bff-client' } });
  t.match(updates[0]!.after, { version: 2, byo_oidc: { audience: 'bff-client-2' } });
  t.equal((await audit(s, 'member_auth.application.create')).length, 1);

  const principal = { tenant: s.tenant.id, workspace: s.sandbox.id, environment: 'sandbox' as const };
  t.equal((await resolvePublishableKey(s.store, principal, app.publishable_key)).id, app.id, 'the key resolves for its workspace');
  t.equal((await s.call('DELETE', `${A}/${app.id}`, undefined, s.otherOwner.token)).statusCode, 404);
  t.equal((await s.call('DELETE', `${A}/${app.id}`)).statusCode, 204);
  await t.rejects(resolvePublishableKey(s.store, principal, app.publishable_key), { code: 'not_found' }, 'a deleted application\'s key resolves nothing');
  t.equal((await audit(s, 'member_auth.application.delete')).length, 1);
  t.equal((await s.call('PUT', PUT, body)).statusCode, 201, 'a new BYO application after the delete');
});

t.test('BYO OIDC refusals: another issuer, a trailing slash, unreachable, not allow-listed, bad fields', async (t) => {
  const s = await setup(t);
  const liar = await startProvider(t, 'localhost');
  const base = { audience: 'bff-client', provider_namespace: 'acme-idp' };
  const mismatch = await s.call('PUT', PUT, { ...base, issuer: `http://127.0.0.1:${liar.port}` });
  t.equal(mismatch.statusCode, 400);
  t.equal(mismatch.json().code, 'oidc_discovery_invalid');
  t.match(mismatch.json().error, /names issuer "http:\/\/localhost:\d+", not exactly/);

  const op = await startProvider(t);
  const slash = await s.call('PUT', PUT, { ...base, issuer: `${op.issuer}/` });
  t.equal(slash.json().code, 'oidc_discovery_invalid', 'a trailing slash is another issuer');

  const port = await closedPort();
  const down = await s.call('PUT', PUT, { ...base, issuer: `http://127.0.0.1:${port}` });
  t.equal(down.statusCode, 502);
  t.equal(down.json().code, 'oidc_discovery_failed');
  t.match(down.json().error, /could not be fetched \(connection_failed\)/);

  const strict = await setupPlatform(t);
  const refused = await strict.call('PUT', PUT, { ...base, issuer: op.issuer });
  t.equal(refused.json().code, 'oidc_discovery_failed', 'loopback without the allow-list');
  t.match(refused.json().error, /destination_not_allowed/);

  for (const issuer of ['http://id.example.com', 'https://id.example.com?x=1', 'https://id.example.com#f', 'https://ID.example.com', 'not a url']) {
    t.equal((await s.call('PUT', PUT, { ...base, issuer })).statusCode, 422, issuer);
  }
  t.equal((await s.call('PUT', PUT, { ...base, issuer: op.issuer, audience: '' })).statusCode, 400);
  t.equal((await s.call('PUT', PUT, { ...base, issuer: op.issuer, provider_namespace: '-x' })).statusCode, 422);
  t.equal((await s.call('PUT', PUT, { ...base, issuer: op.issuer, required_amr: ['a', 'a'] })).statusCode, 422);
  t.equal((await s.call('GET', A)).json().data.length, 0, 'nothing was registered');
  t.equal((await s.platform.audit.list(s.sandbox.id)).length, 0);
});

t.test('Hosted applications: allowed origin, registered callback, same-workspace BFF key', async (t) => {
  const s = await setup(t);
  await s.call('POST', O, { origin: 'https://app.example.com' });
  await s.call('POST', R, { url: 'https://app.example.com/auth/result' });
  await s.call('POST', R, { url: 'https://app.example.com/auth/other' });
  const bff = await s.platform.tenancy.createKey(s.sandbox.id, 'developer', { label: 'bff' });
  const body = { enrollment: 'invite_only', origin: 'https://APP.example.com', result_callback_url: 'https://app.example.com/auth/result', bff_key_id: bff.key.id, require_totp: true };
  const made = await s.call('POST', `${A}/hosted`, body);
  t.equal(made.statusCode, 201, made.body);
  t.match(made.json(), { kind: 'hosted', version: 1, byo_oidc: null, hosted: { enrollment: 'invite_only', origin: 'https://app.example.com', bff_key_id: bff.key.id, require_totp: true } });
  const id = made.json().id;

  const otherKey = await s.platform.tenancy.createKey(s.production.id, 'owner', { signingPublicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c' });
  for (const [bad, why] of [
    [{ origin: 'https://elsewhere.example.com' }, /not an allowed origin/],
    [{ result_callback_url: 'https://app.example.com/unregistered' }, /not a registered redirect URL/],
    [{ bff_key_id: otherKey.key.id }, /not an active bearer key of this workspace/],
    [{ bff_key_id: s.otherOwner.key.id }, /not an active bearer key/],
  ] as const) {
    const r = await s.call('POST', `${A}/hosted`, { ...body, ...bad });
    t.equal(r.statusCode, 422, JSON.stringify(bad));
    t.match(r.json().error, why);
  }
  t.equal((await s.call('POST', `${A}/hosted`, { ...body, enrollment: 'anyone' })).statusCode, 400);

  const patched = await s.call('PATCH', `${A}/${id}`, { enrollment: 'open', result_callback_url: 'https://app.example.com/auth/other' });
  t.equal(patched.statusCode, 200);
  t.equal(patched.json().version, 2);
  t.equal((await s.call('PATCH', `${A}/${id}`, { audience: 'x' })).statusCode, 422, 'a BYO field on a Hosted application');
  const redirects = (await s.call('GET', R)).json().data as { id: string; url: string }[];
  t.equal((await s.call('DELETE', `${R}/${redirects.find((r) => r.url.endsWith('/other'))!.id}`)).statusCode, 409, 'a callback in use is kept');
  t.equal((await s.call('GET', A, undefined, s.viewer.token)).json().data.length, 1, 'a viewer lists applications');
  t.equal((await s.call('GET', A, undefined, s.otherOwner.token)).json().data.length, 0);
  t.equal((await s.call('DELETE', `${A}/${id}`)).statusCode, 204);
});
