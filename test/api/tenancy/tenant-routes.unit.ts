// The tenant area's reads (docs/platform/tenancy.md "The tenant, its workspaces, its chains"): the key's
// tenant and its two workspaces, one workspace (another tenant's is not found), and the chains the key's
// workspace can use: of its environment, with a backend on this service, with their stablecoin.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { walletApp } from '../wallets/wallet-app.ts';

const TOKEN = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

t.test('GET /v1/tenant, /v1/workspaces, /v1/workspaces/{id} and /v1/chains/available', async (t) => {
  const keyFile = join(mkdtempSync(join(tmpdir(), 'tenant-')), 'issuer.key');
  writeFileSync(keyFile, `0x${'11'.repeat(32)}\n`);
  const s = await walletApp(t, {
    env: {
      API_CHAIN_BACKENDS: 'evm-local=http://127.0.0.1:9,bitcoin-regtest=http://127.0.0.1:9,ethereum=http://127.0.0.1:9,bitcoin=http://127.0.0.1:9',
      API_FUNDING_RAIL: 'sandbox', API_FUNDING_STABLECOINS: `evm-local=${TOKEN}`, API_FUNDING_ISSUER_KEY_FILE: keyFile,
    },
  });
  const get = async (url: string, token = s.acme.owner) => {
    const r = await s.bearer('GET', url, undefined, token);
    return { status: r.statusCode, body: r.json() as Record<string, unknown> & { data?: Record<string, unknown>[] } };
  };

  const tenant = await get('/v1/tenant');
  t.equal(tenant.status, 200, JSON.stringify(tenant.body));
  t.match(tenant.body, { id: s.acme.tenant.id, name: 'Acme' });
  t.same((tenant.body.workspaces as { id: string; environment: string; current: boolean }[]).map((w) => [w.id, w.environment, w.current]).sort(),
    [[s.acme.sandbox.id, 'sandbox', true], [s.acme.production.id, 'production', false]].sort(), 'both workspaces, the key\'s marked current');

  const list = await get('/v1/workspaces');
  t.same(list.body.data!.map((w) => w.environment), ['sandbox', 'production'], 'sandbox first');
  t.match(list.body, { next_cursor: null, has_more: false });
  t.match((await get(`/v1/workspaces/${s.acme.production.id}`)).body, { id: s.acme.production.id, environment: 'production', current: false });
  for (const id of [s.globex.sandbox.id, 'wsp_unknown']) t.equal((await get(`/v1/workspaces/${id}`)).status, 404, `${id}: not found`);

  for (const role of ['viewer', 'brand_manager', 'developer']) t.equal((await get('/v1/tenant', await s.acme.key(role))).status, 200, `${role} reads the tenant`);
  const bff = await get('/v1/tenant', await s.acme.key('member_auth'));
  t.match(bff, { status: 403, body: { code: 'role_denied' } }, 'a BFF key holds member sessions only');
  t.equal((await s.app.inject({ method: 'GET', url: '/v1/tenant' })).statusCode, 401, 'no key');

  const sandbox = await get('/v1/chains/available');
  t.equal(sandbox.status, 200, JSON.stringify(sandbox.body));
  t.same(sandbox.body.data, [
    { chain: 'evm-local', family: 'evm', chain_id: '31337', network: null, native_symbol: 'ETH', finality_depth: 2, stablecoin: { asset: `evm-local:${TOKEN.toLowerCase()}`, decimals: 18 } },
    { chain: 'bitcoin-regtest', family: 'bitcoin', chain_id: null, network: 'regtest', native_symbol: 'BTC', finality_depth: 1, stablecoin: null },
  ], 'a sandbox key: the test networks with a backend, and the sandbox stablecoin');
  const production = await get('/v1/chains/available', await s.acme.key('owner', s.acme.production.id));
  t.same(production.body.data!.map((c) => c.chain), ['ethereum', 'bitcoin'], 'a production key: the main networks with a backend');
});
