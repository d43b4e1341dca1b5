// The funding settings (docs/platform/funding.md "Configuration"): the sandbox rail refused in
// production, the stablecoins' requirements, the service built from the configuration (the issuer's
// address as the default burn address), and a service without a rail answering 503 funding_unavailable.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { loadApiConfig } from '../../../api/config.ts';
import { createFunding, readIssuerKey } from '../../../api/funding/funding-setup.ts';
import { setupPlatform } from '../setup-platform.ts';
import { ManualScheduler } from './funding-app.ts';
import { buildApp } from '../../../api/app.ts';
import { createLogger } from '../../../common/logger.ts';

const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3';

t.test('settings: refusals at boot', async (t) => {
  t.throws(() => loadApiConfig({ API_ENVIRONMENT: 'production', API_FUNDING_RAIL: 'sandbox' }), /API_FUNDING_RAIL .*refused with API_ENVIRONMENT=production/);
  t.throws(() => loadApiConfig({ API_FUNDING_STABLECOINS: `evm-local=${TOKEN}` }), /needs API_FUNDING_ISSUER_KEY_FILE/);
  t.throws(() => loadApiConfig({ API_FUNDING_STABLECOINS: `evm-local=${TOKEN}`, API_FUNDING_ISSUER_KEY_FILE: '/k' }), /evm-local has no backend/);
  t.throws(() => loadApiConfig({ API_FUNDING_STABLECOINS: 'evm-local=0x12' }));
  t.throws(() => loadApiConfig({ API_FUNDING_RAIL: 'sandbox', API_CHAIN_BACKENDS: 'ethereum=https://rpc.example', API_FUNDING_STABLECOINS: `ethereum=${TOKEN}`, API_FUNDING_ISSUER_KEY_FILE: '/k' }), /not a test chain/);
  const c = loadApiConfig({});
  t.same([c.fundingRail, c.sandboxRailSettleMs, c.offRampWindowSec], ['none', 5000, 3600], 'defaults: no rail');
  const dir = mkdtempSync(join(tmpdir(), 'funding-key-'));
  writeFileSync(join(dir, 'bad'), 'not a key');
  t.throws(() => readIssuerKey(join(dir, 'bad')), /0x and 64 hex digits/);
});

t.test('the service from the configuration: the sandbox rail, an issuer per chain, the issuer\'s address as burn address', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'funding-key-'));
  writeFileSync(join(dir, 'issuer.key'), `${KEY}\n`);
  const s = await setupPlatform(t);
  const config = loadApiConfig({
    API_FUNDING_RAIL: 'sandbox', API_CHAIN_BACKENDS: 'evm-local=http://127.0.0.1:1', API_FUNDING_STABLECOINS: `evm-local=${TOKEN}`, API_FUNDING_ISSUER_KEY_FILE: join(dir, 'issuer.key'),
  });
  const f = createFunding(config, s.platform, { scheduler: new ManualScheduler() });
  t.equal(f.rail?.name, 'sandbox');
  t.same(await f.service.burnAddresses({ tenant: s.tenant.id, workspace: s.sandbox.id, environment: 'sandbox' }), [{ chain: 'evm-local', asset: `evm-local:${TOKEN}`, address: privateKeyToAccount(KEY).address.toLowerCase() }]);
  await t.rejects(f.service.burnAddresses({ tenant: s.tenant.id, workspace: s.production.id, environment: 'production' }), { code: 'sandbox_only' });
  f.start();
  f.stop();
});

t.test('without a rail: reads answer, creation is 503 funding_unavailable', async (t) => {
  const s = await setupPlatform(t);
  t.same((await s.call('GET', '/v1/funding-requests')).json(), { data: [], next_cursor: null, has_more: false });
  const r = await s.call('POST', '/v1/funding-requests', { account_holder_id: 'ah_00000000000000000000000000', wallet_id: 'wal_x', fiat_amount: '100', currency: 'USD' }, s.owner.token, { 'idempotency-key': 'k' });
  t.same([r.statusCode, r.json().code], [503, 'funding_unavailable']);
  t.equal((await s.call('GET', '/v1/off-ramp-requests/burn-address')).json().code, 'funding_unavailable');
});

t.test('the app builds the service from its configuration and runs its sweep while it serves', async (t) => {
  const s = await setupPlatform(t);
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: s.dir, API_FUNDING_RAIL: 'sandbox', API_SANDBOX_RAIL_SETTLE_MS: '0' }), logger: createLogger('api', 'silent'), platform: s.platform });
  await app.ready();
  const burn = await app.inject({ method: 'GET', url: '/v1/off-ramp-requests/burn-address', headers: { authorization: `Bearer ${s.owner.token}` } });
  t.same([burn.statusCode, burn.json()], [200, { data: [] }], 'a rail, and no stablecoin configured');
  await app.close();
});
