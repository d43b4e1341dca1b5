// The API's request budgets in one instance (api/rate-limits/rate-limits.ts; counted in memory on
// LevelDB, in the database under test/store/api-on-postgres.test.ts): per client address before
// authentication, per API key from any address, a route's own; a refused request is 429 rate_limited in
// the error model with Retry-After, RateLimit and RateLimit-Policy; X-Forwarded-For names the client only
// behind a trusted proxy. Several instances on one database: rate-limits-postgres.test.ts.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { vaultApp } from '../vault/vault-app.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';

const ERROR_KEYS = ['code', 'error', 'request_id'];

t.test('an address past its budget: 429 rate_limited with Retry-After, RateLimit and RateLimit-Policy, before authentication', async (t) => {
  const s = await setupPlatform(t, {}, { API_RATE_LIMIT_PER_ADDRESS: '3' });
  const get = (remoteAddress: string, token?: string) =>
    s.app.inject({ method: 'GET', url: '/v1/tenant', remoteAddress, headers: token ? { authorization: `Bearer ${token}` } : {} });
  for (let left = 2; left >= 0; left--) {
    const r = await get('203.0.113.7');
    t.equal(r.statusCode, 401, 'counted, then answered as usual');
    t.equal(r.headers['ratelimit-policy'], '"address";q=3;w=60', 'the budget');
    t.match(r.headers.ratelimit, new RegExp(`^"address";r=${left};t=(59|60)$`), `${left} left`);
  }
  const limited = await get('203.0.113.7', s.owner.token);
  t.equal(limited.statusCode, 429, 'a valid key does not help: the address is counted first');
  t.same(Object.keys(limited.json()).sort(), ERROR_KEYS, 'the error model');
  t.match(limited.json(), { code: 'rate_limited', error: /too many requests from this address; retry after \d+ s/ });
  const retry = Number(limited.headers['retry-after']);
  t.ok(retry >= 1 && retry <= 60, `Retry-After ${retry} s`);
  t.equal(limited.headers['ratelimit-policy'], '"address";q=3;w=60');
  t.equal(limited.headers.ratelimit, `"address";r=0;t=${retry}`, 'none left until Retry-After');
  t.ok(limited.headers['x-request-id'], 'the usual headers');

  t.equal((await get('198.51.100.9', s.owner.token)).statusCode, 200, 'another address is not affected');
  const probe = await s.app.inject({ method: 'GET', url: '/healthz', remoteAddress: '203.0.113.7' });
  t.equal(probe.statusCode, 200, 'probes are never counted');
  t.notOk(probe.headers.ratelimit, 'nor carry the headers');
});

t.test('a key\'s budget is one from every address; another key has its own; unauthenticated requests have none', async (t) => {
  const s = await setupPlatform(t, {}, { API_RATE_LIMIT_PER_KEY: '3' });
  const get = (remoteAddress: string, token: string) => s.app.inject({ method: 'GET', url: '/v1/tenant', remoteAddress, headers: { authorization: `Bearer ${token}` } });
  for (const [i, ip] of ['192.0.2.1', '192.0.2.2', '2001:db8:5::1'].entries()) {
    const r = await get(ip, s.owner.token);
    t.equal(r.statusCode, 200, `request ${i + 1}, from ${ip}`);
    t.equal(r.headers['ratelimit-policy'], '"address";q=2400;w=60, "key";q=3;w=60', 'both budgets');
    t.match(r.headers.ratelimit, new RegExp(`^"address";r=2399;t=\\d+, "key";r=${2 - i};t=\\d+$`));
  }
  const limited = await get('198.51.100.200', s.owner.token);
  t.equal(limited.statusCode, 429, 'a fourth address does not help');
  t.match(limited.json(), { code: 'rate_limited', error: /too many requests with this API key/ });
  t.ok(Number(limited.headers['retry-after']) >= 1);
  t.match(limited.headers.ratelimit, /"key";r=0;t=\d+$/);
  t.equal((await get('198.51.100.200', s.viewer.token)).statusCode, 200, 'another key from the same address');
  const anonymous = await s.app.inject({ method: 'GET', url: '/v1/tenant', remoteAddress: '198.51.100.201', headers: { authorization: 'Bearer svc_test_nosuchkey' } });
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.headers['ratelimit-policy'], '"address";q=2400;w=60', 'a key that does not authenticate has no key budget');
});

t.test('a vault API key: counted once its signature verified; a refused request spends no nonce; a new window restores the budget', async (t) => {
  const v = await vaultApp(t, { env: { API_RATE_LIMIT_PER_KEY: '2', API_RATE_LIMIT_WINDOW_S: '1' } });
  t.equal((await v.call('GET', '/v1/api-keys')).statusCode, 200);
  t.equal((await v.call('GET', '/v1/api-keys')).statusCode, 200);
  // One signed request, sent as is several times.
  const headers = { host: 'api.test', ...signedHeaders(v.creds, 'GET', 'http://api.test/v1/api-keys') };
  const send = () => v.app.inject({ method: 'GET', url: '/v1/api-keys', headers });
  const limited = await send();
  t.equal(limited.statusCode, 429);
  t.match(limited.json(), { code: 'rate_limited', error: /with this API key/ });
  t.equal(limited.headers['ratelimit-policy'], '"address";q=2400;w=1, "key";q=2;w=1');
  const retry = Number(limited.headers['retry-after']);
  t.equal(retry, 1, 'the rest of the one-second window');
  await new Promise((r) => setTimeout(r, retry * 1000 + 50));
  const again = await send();
  t.equal(again.statusCode, 200, 'after Retry-After the same signed request is served: the refusal did not spend its nonce');
  t.match(again.headers.ratelimit, /"key";r=1;t=1$/, 'a fresh window');
  t.equal((await send()).statusCode, 401, 'served once, its nonce is spent');
});

t.test('behind a trusted proxy each forwarded client has its own budget; without one they share the peer\'s', async (t) => {
  const forwarded = async (env: Record<string, string>) => {
    const s = await setupPlatform(t, {}, { API_RATE_LIMIT_PER_ADDRESS: '2', ...env });
    // inject's peer is 127.0.0.1: the proxy.
    return async (client: string) => (await s.app.inject({ method: 'GET', url: '/v1/tenant', headers: { 'x-forwarded-for': client } })).statusCode;
  };
  const trusted = await forwarded({ API_TRUST_PROXY: '127.0.0.1' });
  t.same([await trusted('203.0.113.1'), await trusted('203.0.113.1'), await trusted('203.0.113.1')], [401, 401, 429], 'one client past its budget');
  t.equal(await trusted('203.0.113.2'), 401, 'another client named by the proxy is not affected');
  t.equal(await trusted('203.0.113.9, 203.0.113.1'), 429, 'the limited client cannot escape by prepending an address');

  const untrusted = await forwarded({});
  t.same([await untrusted('203.0.113.1'), await untrusted('203.0.113.2'), await untrusted('203.0.113.3')], [401, 401, 429], 'without API_TRUST_PROXY the header is ignored: one budget for the peer');
});

t.test('a route\'s own budget (the public branding bundle) on top of the address\'s', async (t) => {
  const s = await setupPlatform(t, {}, { API_PUBLIC_BRANDING_RATE_PER_MINUTE: '2' });
  const get = (ip: string) => s.app.inject({ method: 'GET', url: '/v1/public/branding', remoteAddress: ip });
  t.same([(await get('192.0.2.50')).statusCode, (await get('192.0.2.50')).statusCode], [200, 200]);
  const limited = await get('192.0.2.50');
  t.equal(limited.statusCode, 429);
  t.match(limited.json(), { code: 'rate_limited', error: /from this address to this operation/ });
  t.equal(limited.headers['ratelimit-policy'], '"address";q=2400;w=60, "public_branding";q=2;w=60', 'both budgets named');
  t.match(limited.headers.ratelimit, /^"address";r=2397;t=\d+, "public_branding";r=0;t=\d+$/);
  t.ok(Number(limited.headers['retry-after']) >= 1);
  t.equal((await get('192.0.2.51')).statusCode, 200, 'another address');
  t.equal((await s.call('GET', '/v1/tenant')).statusCode, 200, 'other operations are not limited by it');
});
