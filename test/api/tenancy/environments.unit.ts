// Sandbox and production are separate (docs/security.md#sandbox-and-production): everything a bearer key
// can write (branding theme, surfaces and logo, sending domains, webhook endpoints and deliveries) belongs
// to the key's environment; the other environment reads what it had, and cannot reach it by id (404).
// Records written before the split belong to production.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { setupPlatform, tinyPng } from '../setup-platform.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { PLATFORM_DEFAULT } from '../../../api/branding/branding-service.ts';
import type { DnsRecord, EmailDomainProvider } from '../../../api/branding/email-domains.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { TenancyService } from '../../../api/tenancy/tenancy-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';

type Setup = Awaited<ReturnType<typeof setupPlatform>>;
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';

/** An owner key of the production workspace, and a caller that signs its mutations (RFC 9421). */
async function productionCaller(s: Setup) {
  const sk = ed25519.utils.randomSecretKey();
  const live = await s.platform.tenancy.createKey(s.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(sk)) });
  return (method: Method, url: string, body?: unknown) => {
    const raw = body === undefined ? undefined : JSON.stringify(body);
    const sig = method === 'GET' ? {} : signedHeaders({ keyId: live.key.id, secretKey: sk }, method, `http://localhost:80${url}`, raw);
    return s.app.inject({
      method, url, headers: { host: 'localhost:80', authorization: `Bearer ${live.token}`, ...(raw ? { 'content-type': 'application/json' } : {}), ...sig }, ...(raw ? { payload: raw } : {}),
    });
  };
}

/** A sending-domain provider that records what it was asked. */
function fakeProvider() {
  const calls: string[] = [];
  const provider: EmailDomainProvider = {
    region: 'test',
    register: async (d) => {
      calls.push(`register ${d}`);
      return [{ record: 'verification', name: `_v.${d}`, value: 'v', type: 'TXT', ttl: 60, priority: null } satisfies DnsRecord];
    },
    verify: async (d) => {
      calls.push(`verify ${d}`);
      return 'verified';
    },
    remove: async (d) => {
      calls.push(`remove ${d}`);
    },
  };
  return { provider, calls };
}

const publicBundle = (s: Setup, token: string) => s.app.inject({ method: 'GET', url: `/v1/public/branding?claim_token=${encodeURIComponent(token)}`, remoteAddress: '127.0.0.30' });

t.test('branding: a sandbox key never changes what production reads or serves; each environment reads its own', async (t) => {
  const s = await setupPlatform(t);
  const prod = await productionCaller(s);
  const prodBefore = (await prod('GET', '/v1/branding')).json();

  const sb = await s.call('PUT', '/v1/branding', { brand_name: 'Sandbox Co', primary_color: '#00FF00', surfaces: { hosted_auth: { app_title: 'Sandbox sign-in' } } });
  t.equal(sb.statusCode, 200);
  t.same((await prod('GET', '/v1/branding')).json(), prodBefore, 'production branding unchanged by the sandbox write');
  t.equal((await publicBundle(s, prodBefore.public_claim_token)).json().brand_name, PLATFORM_DEFAULT.brand_name, 'production public bundle unchanged');
  t.not(sb.json().public_claim_token, prodBefore.public_claim_token, 'each environment has its own claim token');
  t.equal((await publicBundle(s, sb.json().public_claim_token)).json().brand_name, 'Sandbox Co', 'the sandbox token serves sandbox branding');

  const pr = await prod('PUT', '/v1/branding', { brand_name: 'Prod Co' });
  t.equal(pr.statusCode, 200);
  t.equal((await s.call('GET', '/v1/branding')).json().resolved.brand_name, 'Sandbox Co', 'sandbox keeps its own');
  t.equal((await s.call('GET', '/v1/branding')).json().surfaces.hosted_auth.resolved.app_title, 'Sandbox sign-in');
  t.equal((await prod('GET', '/v1/branding')).json().surfaces.hosted_auth.resolved.app_title, PLATFORM_DEFAULT.app_title);
  t.equal((await publicBundle(s, pr.json().public_claim_token)).json().brand_name, 'Prod Co');
  t.equal((await publicBundle(s, sb.json().public_claim_token)).json().brand_name, 'Sandbox Co');
  const legacy = s.platform.branding.claimToken(s.tenant.id);
  t.equal((await publicBundle(s, legacy)).json().brand_name, 'Prod Co', 'a claim token issued before the split (naming the tenant) serves production');

  // The logo: a sandbox removal leaves production's; a production upload cannot be confirmed by a sandbox key.
  const actor = { type: 'operator' as const, id: 'test' };
  await s.platform.branding.setLogo({ tenant: s.tenant.id, workspace: s.production.id }, actor, 'logos/prod', '/v1/objects/logos/prod');
  t.equal((await s.call('DELETE', '/v1/branding/logo')).statusCode, 200);
  t.equal((await prod('GET', '/v1/branding')).json().resolved.logo_url, '/v1/objects/logos/prod', 'sandbox logo removal leaves production');
  const png = tinyPng();
  const target = (await prod('POST', '/v1/branding/logo/upload-url', { content_type: 'image/png', content_length: png.length })).json();
  const url = new URL(target.upload_url);
  t.equal((await s.app.inject({ method: 'PUT', url: url.pathname + url.search, payload: png, headers: { 'content-type': 'image/png' } })).statusCode, 204);
  const stolen = await s.call('POST', '/v1/branding/logo', { object_key: target.object_key });
  t.equal(stolen.statusCode, 422, "a sandbox key cannot confirm production's upload");
  t.equal((await s.call('GET', '/v1/branding')).json().resolved.logo_url, null);
  t.equal((await prod('POST', '/v1/branding/logo', { object_key: target.object_key })).json().resolved.logo_url, `/v1/objects/${target.object_key}`);

  const sbAudit = (await s.platform.audit.list(s.sandbox.id)).map((e) => e.resource_id);
  t.ok(sbAudit.every((id) => id === s.sandbox.id), 'sandbox changes are audited against the sandbox workspace');
});

t.test('email domains: per environment; a sandbox key cannot see, verify or delete a production domain', async (t) => {
  const { provider, calls } = fakeProvider();
  const s = await setupPlatform(t, { emailProvider: provider });
  const prod = await productionCaller(s);
  const pd = await prod('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' });
  t.equal(pd.statusCode, 201);
  const prodId = pd.json().id as string;

  t.same((await s.call('GET', '/v1/branding/email-domains')).json().data, [], 'sandbox lists none of production');
  for (const [m, u] of [['POST', `/v1/branding/email-domains/${prodId}/verify`], ['DELETE', `/v1/branding/email-domains/${prodId}`]] as const) {
    const r = await s.call(m, u);
    t.equal(r.statusCode, 404, `${m} ${u} from sandbox`);
    t.equal(r.json().code, 'email_domain_not_found');
  }
  t.notOk(calls.includes('verify mail.acme.example'), 'the provider was not asked');
  t.same((await prod('GET', '/v1/branding/email-domains')).json().data.map((d: { id: string }) => d.id), [prodId], 'production still has it');

  const sd = await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' });
  t.equal(sd.statusCode, 201, 'the same tenant may register the name in sandbox too');
  t.equal((await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' })).json().code, 'email_domain_conflict', 'but only once per environment');
  const other = await s.platform.tenancy.createKey((await s.platform.tenancy.createTenant('Other')).sandbox.id, 'owner');
  t.equal((await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' }, other.token)).json().code, 'email_domain_conflict', 'another tenant cannot');
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${sd.json().id}`)).statusCode, 204);
  t.notOk(calls.includes('remove mail.acme.example'), 'deleting the sandbox copy does not remove the identity production still uses');
  t.same((await prod('GET', '/v1/branding/email-domains')).json().data.map((d: { id: string }) => d.id), [prodId], 'production still has it');
  t.equal((await prod('DELETE', `/v1/branding/email-domains/${prodId}`)).statusCode, 204);
  t.ok(calls.includes('remove mail.acme.example'), 'the last holder removes it at the provider');
});

t.test('webhook endpoints and deliveries: per environment; a sandbox key cannot modify or delete a production endpoint', async (t) => {
  const s = await setupPlatform(t);
  const prod = await productionCaller(s);
  const pe = (await prod('POST', '/v1/webhook-endpoints', { url: 'https://example.com/prod', events: ['payment.confirmed'] })).json();
  const se = (await s.call('POST', '/v1/webhook-endpoints', { url: 'https://example.com/sandbox', events: ['payment.confirmed'] })).json();
  t.same((await prod('GET', '/v1/webhook-endpoints')).json().data.map((e: { id: string }) => e.id), [pe.id], 'production lists only its own');
  t.same((await s.call('GET', '/v1/webhook-endpoints')).json().data.map((e: { id: string }) => e.id), [se.id], 'sandbox lists only its own');
  const attempts: [Method, string, unknown][] = [
    ['GET', `/v1/webhook-endpoints/${pe.id}`, undefined],
    ['PATCH', `/v1/webhook-endpoints/${pe.id}`, { url: 'https://attacker.example/x', enabled: false }],
    ['POST', `/v1/webhook-endpoints/${pe.id}/test`, undefined],
    ['DELETE', `/v1/webhook-endpoints/${pe.id}`, undefined],
  ];
  for (const [m, u, body] of attempts) {
    const r = await s.call(m, u, body);
    t.equal(r.statusCode, 404, `${m} ${u} from sandbox`);
    t.equal(r.json().code, 'not_found');
  }
  const after = (await prod('GET', `/v1/webhook-endpoints/${pe.id}`)).json();
  t.match(after, { url: 'https://example.com/prod', enabled: true, hmac_secret_fingerprint: pe.hmac_secret_fingerprint }, 'production endpoint unchanged');

  // An event of one environment reaches only that environment's endpoints; a sandbox key cannot replay production deliveries.
  const { deliveries } = await s.platform.deliveries.emit({ tenant: s.tenant.id, workspace: s.production.id }, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 't' }, { payment_id: 'pay_1' });
  t.same(deliveries.map((d) => d.endpoint_id), [pe.id]);
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).statusCode, 404);
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${deliveries[0]!.id}/replay`)).statusCode, 404);
  t.same((await s.call('GET', '/v1/webhook-deliveries')).json().data, []);
});

t.test('migration: branding and sending domains written before the split belong to production', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-legacy-'));
  const store = await RecordStore.open(dir);
  const { tenant, sandbox, production } = await new TenancyService(store).createTenant('Legacy');
  // Records as the tenant-keyed code wrote them (a domain registered by a sandbox key, as happened).
  await store.put('branding', tenant.id, { tenant: tenant.id, theme: { brand_name: 'Legacy Co' }, surfaces: { email: { from_name: 'Legacy Mail' } }, logo_url: null, updated_at: '2026-01-01T00:00:00.000Z' });
  const edm = 'edm_0000000000000000000000000a';
  await store.batch([
    { type: 'put', collection: 'email_domains', id: edm, index: [`${tenant.id}\x00${edm}`], value: { id: edm, tenant: tenant.id, workspace: sandbox.id, domain: 'mail.legacy.example', status: 'verified', region: 'test', dns_records: [], verified_at: null, last_synced_at: null, created_at: '2026-01-01T00:00:00.000Z' } },
    { type: 'put', collection: 'email_domain_names', id: 'mail.legacy.example', value: { id: edm } },
  ]);
  const { provider } = fakeProvider();
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), emailProvider: provider });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), platform });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const s = { app, platform, tenant, sandbox, production } as unknown as Setup;
  const sbKey = await platform.tenancy.createKey(sandbox.id, 'owner');
  const sb = (m: Method, u: string, body?: unknown) => app.inject({ method: m, url: u, headers: { authorization: `Bearer ${sbKey.token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { payload: JSON.stringify(body) } : {}) });
  const prod = await productionCaller(s);

  t.equal((await prod('GET', '/v1/branding')).json().resolved.brand_name, 'Legacy Co', 'production has the old branding');
  t.equal((await prod('GET', '/v1/branding')).json().surfaces.email.resolved.from_name, 'Legacy Mail');
  t.equal((await sb('GET', '/v1/branding')).json().resolved.brand_name, PLATFORM_DEFAULT.brand_name, 'sandbox starts from the default');
  t.equal((await publicBundle(s, platform.branding.claimToken(tenant.id))).json().brand_name, 'Legacy Co', 'an old claim token still serves it');
  t.same((await prod('GET', '/v1/branding/email-domains')).json().data.map((d: { id: string }) => d.id), [edm], 'production has the old domain');
  t.same((await sb('GET', '/v1/branding/email-domains')).json().data, []);
  t.equal((await sb('DELETE', `/v1/branding/email-domains/${edm}`)).statusCode, 404, 'sandbox cannot delete it');
  t.equal((await sb('POST', '/v1/branding/email-domains', { domain: 'mail.legacy.example' })).statusCode, 201, 'the name registry moved with it');
  t.equal(await store.get('branding', tenant.id), undefined, 'the tenant-keyed record is gone');

  // Runs once: a second start changes nothing.
  await createPlatform(store, { objectDir: join(dir, 'objects') });
  t.equal((await prod('GET', '/v1/branding')).json().resolved.brand_name, 'Legacy Co');
});
