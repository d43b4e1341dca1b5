// Sending domains with the local provider and a configurable resolver: statuses, every email-domain
// error code of the spec, provider_configured, permissions and audit.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { LocalDnsProvider, type TxtResolver } from '../../../api/adapters/local-dns-provider.ts';

function zone() {
  const records = new Map<string, string[]>();
  let mode: 'ok' | 'servfail' = 'ok';
  const resolve: TxtResolver = async (name) => {
    if (mode === 'servfail') throw Object.assign(new Error('server failure'), { code: 'ESERVFAIL' });
    const r = records.get(name);
    if (!r) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return r.map((v) => [v]);
  };
  return { records, resolve, setMode: (m: 'ok' | 'servfail') => { mode = m; } };
}

t.test('unconfigured provider: provider_configured false and 503 on add', async (t) => {
  const s = await setupPlatform(t);
  const list = (await s.call('GET', '/v1/branding/email-domains')).json();
  t.same(list, { data: [], provider_configured: false });
  const r = await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' });
  t.equal(r.statusCode, 503);
  t.equal(r.json().code, 'email_domain_provider_unconfigured');
});

t.test('local provider: not_started, pending, failed, temporary_failure, verified; error codes', async (t) => {
  const z = zone();
  const s = await setupPlatform(t, { emailProvider: new LocalDnsProvider(z.resolve) });
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().provider_configured, true);
  const add = await s.call('POST', '/v1/branding/email-domains', { domain: 'Mail.Acme.Example.' });
  t.equal(add.statusCode, 201);
  const d = add.json();
  t.match(d, { domain: 'mail.acme.example', status: 'not_started', verified_at: null });
  t.equal(d.dns_records.length, 2);
  const verify = async () => (await s.call('POST', `/v1/branding/email-domains/${d.id}/verify`)).json();
  t.equal((await verify()).status, 'pending', 'nothing published yet');
  z.records.set(d.dns_records[0].name, ['svc-verify=wrong']);
  t.equal((await verify()).status, 'failed', 'a different verification value');
  z.setMode('servfail');
  t.equal((await verify()).status, 'temporary_failure');
  z.setMode('ok');
  z.records.set(d.dns_records[0].name, [d.dns_records[0].value]);
  z.records.set(d.dns_records[1].name, [d.dns_records[1].value]);
  const ok = await verify();
  t.equal(ok.status, 'verified');
  t.ok(ok.verified_at);
  t.ok(ok.last_synced_at);

  const cases: [unknown, number, string][] = [
    [{ domain: 'mail.acme.example' }, 409, 'email_domain_conflict'],
    [{ domain: 'not a domain' }, 422, 'email_domain_invalid'],
    [{ domain: 'localhost' }, 422, 'email_domain_invalid'],
    [{ domain: 'mail.acme.invalid' }, 422, 'email_domain_invalid'],
  ];
  for (const [body, status, code] of cases) {
    const r = await s.call('POST', '/v1/branding/email-domains', body);
    t.equal(r.statusCode, status, JSON.stringify(body));
    t.equal(r.json().code, code);
  }
  t.equal((await s.call('POST', '/v1/branding/email-domains/edm_nope/verify')).json().code, 'email_domain_not_found');
  const other = await s.platform.tenancy.createKey((await s.platform.tenancy.createTenant('Other')).sandbox.id, 'owner');
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${d.id}`, undefined, other.token)).json().code, 'email_domain_not_found');
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${d.id}`, undefined, s.viewer.token)).json().code, 'role_denied');
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${d.id}`)).statusCode, 204);
  t.equal((await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' })).statusCode, 201, 'the name is free again');
  const actions = (await s.platform.audit.list(s.sandbox.id)).map((a) => a.action).filter((a) => a.includes('email_domain'));
  t.same(actions.slice(0, 2), ['branding.email_domain.create', 'branding.email_domain.verify']);
  t.ok(actions.includes('branding.email_domain.delete'));
});

t.test('provider failure is 502 email_domain_provider_error', async (t) => {
  const s = await setupPlatform(t, { emailProvider: { region: 'x', register: async () => { throw new Error('boom'); }, verify: async () => 'pending' } });
  const r = await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' });
  t.equal(r.statusCode, 502);
  t.equal(r.json().code, 'email_domain_provider_error');
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().data.length, 0);
});
