// resolvePublishableKey (platform-api.md "Confidential exchange rules" 3): a publishable key selects its
// application only with a bearer principal of the same tenant, workspace and environment; and the URL
// rules of origins, redirect URLs and issuers per environment (api/member-auth/exact-urls.ts).
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { resolvePublishableKey, environmentOfKey } from '../../../api/member-auth/publishable-keys.ts';
import { MemberAuthConfig } from '../../../api/member-auth/member-auth-config.ts';
import { OutboundHttp } from '../../../api/webhooks/outbound-http.ts';
import { DestinationPolicy } from '../../../api/webhooks/destination-policy.ts';
import { checkIssuer, normalizeOrigin, normalizeRedirectUrl } from '../../../api/member-auth/exact-urls.ts';

t.test('a publishable key resolves only for its own tenant, workspace and environment', async (t) => {
  const s = await setupPlatform(t);
  const cfg = new MemberAuthConfig({ store: s.store, audit: s.platform.audit, cursors: s.platform.cursors, http: new OutboundHttp({ policy: DestinationPolicy.STRICT }) });
  const actor = { type: 'api_key' as const, id: s.owner.key.id };
  const sandbox = { tenant: s.tenant.id, workspace: s.sandbox.id, environment: 'sandbox' as const };
  const production = { tenant: s.tenant.id, workspace: s.production.id, environment: 'production' as const };
  await cfg.addOrigin(sandbox, actor, 'https://app.example.com');
  await cfg.addRedirectUrl(sandbox, actor, 'https://app.example.com/cb');
  const app = await cfg.createHostedApplication(sandbox, actor, { enrollment: 'open', origin: 'https://app.example.com', result_callback_url: 'https://app.example.com/cb', bff_key_id: s.owner.key.id });
  t.match(app.publishable_key, /^pk_test_/);
  t.equal(environmentOfKey(app.publishable_key), 'sandbox');

  const resolved = await resolvePublishableKey(s.store, sandbox, app.publishable_key);
  t.same({ id: resolved.id, tenant: resolved.tenant, workspace: resolved.workspace, environment: resolved.environment }, { id: app.id, ...sandbox });

  await t.rejects(resolvePublishableKey(s.store, production, app.publishable_key), { code: 'publishable_key_mismatch' }, 'the production workspace of the same tenant: 403');
  const other = await s.platform.tenancy.createTenant('Other');
  await t.rejects(resolvePublishableKey(s.store, { tenant: other.tenant.id, workspace: other.sandbox.id, environment: 'sandbox' }, app.publishable_key), { code: 'not_found' }, 'another tenant: 404, as for an unknown key');
  await t.rejects(resolvePublishableKey(s.store, { ...sandbox, tenant: other.tenant.id }, app.publishable_key), { code: 'not_found' }, 'the right workspace named with another tenant');
  await t.rejects(resolvePublishableKey(s.store, { ...sandbox, workspace: other.sandbox.id }, app.publishable_key), { code: 'not_found' }, 'another workspace of the same environment');
  await t.rejects(resolvePublishableKey(s.store, sandbox, `pk_test_${'A'.repeat(32)}`), { code: 'not_found' }, 'unknown');
  await t.rejects(resolvePublishableKey(s.store, sandbox, app.publishable_key.replace('pk_test_', 'pk_live_')), { code: 'publishable_key_mismatch' }, 'a live prefix with a sandbox bearer');
  for (const bad of [undefined, '', 'pk_test_short', `sk_test_${'A'.repeat(32)}`, `${app.publishable_key} `]) {
    await t.rejects(resolvePublishableKey(s.store, sandbox, bad), { code: 'invalid_request' }, JSON.stringify(bad));
  }
});

t.test('URL rules by environment: https in production, http only to loopback in sandbox', async (t) => {
  t.equal(normalizeOrigin('http://127.0.0.1:8080', 'sandbox'), 'http://127.0.0.1:8080');
  t.equal(normalizeOrigin('http://[::1]:80', 'sandbox'), 'http://[::1]');
  t.equal(normalizeOrigin('https://App.Example.com:8443', 'production'), 'https://app.example.com:8443');
  t.throws(() => normalizeOrigin('http://localhost:3000', 'production'), { code: 'validation_failed' });
  t.throws(() => normalizeOrigin('https://localhost:3000', 'production'), { code: 'validation_failed' }, 'no loopback in production');
  t.throws(() => normalizeOrigin('http://10.0.0.1', 'sandbox'), { code: 'validation_failed' }, 'http only to loopback');
  t.throws(() => normalizeOrigin('https://@app.example.com', 'sandbox'), { code: 'validation_failed' });
  t.same(normalizeRedirectUrl('https://app.example.com/A/b?c=D', 'production'), { url: 'https://app.example.com/A/b?c=D', origin: 'https://app.example.com' });
  t.throws(() => normalizeRedirectUrl('http://127.0.0.1/cb', 'production'), { code: 'validation_failed' });
  t.equal(checkIssuer('https://id.example.com', 'production'), 'https://id.example.com');
  t.equal(checkIssuer('https://id.example.com/tenant/', 'production'), 'https://id.example.com/tenant/', 'kept exactly');
  t.throws(() => checkIssuer('https://id.example.com:443', 'production'), { code: 'validation_failed' }, 'not in normal form');
  t.throws(() => checkIssuer('http://127.0.0.1:9000', 'production'), { code: 'validation_failed' });
});
