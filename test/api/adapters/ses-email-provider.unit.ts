// The Amazon SES sending-domain adapter against a local double of the SES v2 identity API: selection by
// configuration, DKIM records, every status mapping, SES's error types mapped to the spec's codes, and
// removal at the provider. The double checks the SigV4 signature of every request.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { sesDouble } from './ses-double.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { emailProviderFromConfig } from '../../../api/adapters/adapters-from-config.ts';
import { SesEmailProvider } from '../../../api/adapters/ses-email-provider.ts';

const creds = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const keys = { [creds.accessKeyId]: creds.secretAccessKey };
const sesEnv = (endpoint: string, extra: Record<string, string> = {}) => ({
  API_EMAIL_PROVIDER: 'ses', API_SES_REGION: 'eu-west-1', API_SES_ENDPOINT: endpoint, API_SES_ACCESS_KEY_ID: creds.accessKeyId, API_SES_SECRET_ACCESS_KEY: creds.secretAccessKey, ...extra,
});

t.test('configuration: API_EMAIL_PROVIDER=ses needs region and keys; the secret is never printed', async (t) => {
  try {
    loadApiConfig({ API_EMAIL_PROVIDER: 'ses', API_SES_SECRET_ACCESS_KEY: 'very-secret-value' });
    t.fail('should refuse');
  } catch (err) {
    t.match((err as Error).message, /API_EMAIL_PROVIDER=ses needs API_SES_REGION$/);
    t.notMatch((err as Error).message, /very-secret-value/);
  }
  t.throws(() => loadApiConfig(sesEnv('http://email.example.com')), /plain http is allowed on loopback only/);
  t.throws(() => loadApiConfig(sesEnv('https://email.eu-west-1.amazonaws.com', { API_SES_REGION: 'Europe' })), /API_SES_REGION/);
  const p = emailProviderFromConfig(loadApiConfig({ API_EMAIL_PROVIDER: 'ses', API_SES_REGION: 'eu-west-1', API_SES_ACCESS_KEY_ID: creds.accessKeyId, API_SES_SECRET_ACCESS_KEY: 'x' }));
  t.ok(p instanceof SesEmailProvider);
  t.equal(p?.region, 'eu-west-1');
  t.equal(emailProviderFromConfig(loadApiConfig({})), undefined, 'none by default');
});

t.test('SES through the API: DKIM CNAMEs, the five statuses, transient errors, conflicts, removal', async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  const ses = await sesDouble(t, { region: 'eu-west-1', keys, clock: () => now });
  const provider = emailProviderFromConfig(loadApiConfig(sesEnv(ses.endpoint)), () => now)!;
  const s = await setupPlatform(t, { clock: () => now, emailProvider: provider });
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().provider_configured, true);

  const add = await s.call('POST', '/v1/branding/email-domains', { domain: 'Mail.Acme.Example' });
  t.equal(add.statusCode, 201);
  const d = add.json();
  t.match(d, { domain: 'mail.acme.example', status: 'not_started', region: 'eu-west-1', verified_at: null });
  const tokens = ses.identities.get('mail.acme.example')!.tokens;
  t.same(d.dns_records, tokens.map((tok) => ({ record: 'dkim', name: `${tok}._domainkey.mail.acme.example`, value: `${tok}.dkim.amazonses.com`, type: 'CNAME', ttl: 1800, priority: null })), 'three Easy DKIM CNAMEs');

  const verify = async () => s.call('POST', `/v1/branding/email-domains/${d.id}/verify`);
  const table: [Parameters<typeof ses.setStatus>[1], string][] = [['PENDING', 'pending'], ['NOT_STARTED', 'not_started'], ['FAILED', 'failed'], ['TEMPORARY_FAILURE', 'temporary_failure'], ['SUCCESS', 'verified']];
  for (const [sesStatus, status] of table) {
    ses.setStatus('mail.acme.example', sesStatus);
    const r = await verify();
    t.equal(r.statusCode, 200);
    t.equal(r.json().status, status, `${sesStatus} → ${status}`);
    t.equal(r.json().last_synced_at, new Date(now).toISOString());
  }
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().data[0].verified_at, new Date(now).toISOString(), 'verified_at set on success');

  ses.failNext(429, 'TooManyRequestsException');
  t.equal((await verify()).json().status, 'temporary_failure', 'throttling is a temporary failure');
  ses.failNext(500, 'InternalFailure');
  t.equal((await verify()).json().status, 'temporary_failure', 'an SES 5xx is a temporary failure');
  ses.failNext(403, 'AccessDeniedException');
  const denied = await verify();
  t.equal(denied.statusCode, 502);
  t.equal(denied.json().code, 'email_domain_provider_error', 'a permission problem is a provider error');

  ses.refused.add('bad.acme.example');
  const inval = await s.call('POST', '/v1/branding/email-domains', { domain: 'bad.acme.example' });
  t.equal(inval.statusCode, 422);
  t.equal(inval.json().code, 'email_domain_invalid', 'BadRequestException from SES');
  t.equal((await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' })).json().code, 'email_domain_conflict');
  ses.failNext(429, 'LimitExceededException');
  const limited = await s.call('POST', '/v1/branding/email-domains', { domain: 'other.acme.example' });
  t.equal(limited.statusCode, 502);
  t.equal(limited.json().code, 'email_domain_provider_error');
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().data.length, 1, 'failed additions stored nothing');

  ses.identities.set('again.acme.example', { tokens: ['a1', 'b2', 'c3'], status: 'PENDING' });
  const again = await s.call('POST', '/v1/branding/email-domains', { domain: 'again.acme.example' });
  t.equal(again.statusCode, 201, 'an identity already in the SES account is adopted (AlreadyExistsException)');
  t.same(again.json().dns_records.map((r: { value: string }) => r.value), ['a1.dkim.amazonses.com', 'b2.dkim.amazonses.com', 'c3.dkim.amazonses.com']);

  ses.failNext(500, 'ConcurrentModificationException');
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${d.id}`)).json().code, 'email_domain_provider_error');
  t.ok(ses.identities.has('mail.acme.example'), 'a failed provider delete keeps both sides');
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().data.length, 2);
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${d.id}`)).statusCode, 204);
  t.notOk(ses.identities.has('mail.acme.example'), 'deleted at SES too');
  ses.identities.delete('again.acme.example');
  t.equal((await s.call('POST', `/v1/branding/email-domains/${again.json().id}/verify`)).json().status, 'failed', 'an identity removed at SES can no longer verify');
  t.equal((await s.call('DELETE', `/v1/branding/email-domains/${again.json().id}`)).statusCode, 204, 'deleting one SES no longer has is fine');
  t.ok(ses.calls.every((c) => c.type !== 'SignatureDoesNotMatch' && c.type !== 'UnrecognizedClientException'), 'every request was correctly signed');
  t.ok(ses.calls.some((c) => c.method === 'DELETE' && c.status === 200));
});

t.test('wrong credentials: SES refuses the signature and the API answers 502, storing nothing', async (t) => {
  const ses = await sesDouble(t, { region: 'eu-west-1', keys, clock: Date.now });
  const provider = emailProviderFromConfig(loadApiConfig(sesEnv(ses.endpoint, { API_SES_SECRET_ACCESS_KEY: 'wrong-secret' })))!;
  const s = await setupPlatform(t, { emailProvider: provider });
  const r = await s.call('POST', '/v1/branding/email-domains', { domain: 'mail.acme.example' });
  t.equal(r.statusCode, 502);
  t.same(r.json(), { error: 'the email provider failed; try again', code: 'email_domain_provider_error', request_id: r.headers['x-request-id'] });
  t.notOk(JSON.stringify(r.json()).includes('wrong-secret'));
  t.equal(ses.calls[0]?.type, 'SignatureDoesNotMatch');
  t.equal((await s.call('GET', '/v1/branding/email-domains')).json().data.length, 0);
});
