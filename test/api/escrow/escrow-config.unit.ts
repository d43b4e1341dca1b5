// The escrow settings (docs/platform/escrows.md "Configuration"): API_ESCROW_CONTRACTS needs a backend and
// a stablecoin on each chain; the service built from the configuration reads the named contract; without
// one, reads answer and creation is 503 unavailable; the app runs the sweep while it serves.
import t from 'tap';
import { loadApiConfig } from '../../../api/config.ts';
import { createEscrows } from '../../../api/escrow/escrow-setup.ts';
import { setupPlatform } from '../setup-platform.ts';
import { buildApp } from '../../../api/app.ts';
import { createLogger } from '../../../common/logger.ts';

const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const ESCROW = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';
const BACKEND = 'evm-local=http://127.0.0.1:1';

t.test('settings: refusals at boot, defaults', async (t) => {
  t.throws(() => loadApiConfig({ API_ESCROW_CONTRACTS: `evm-local=${ESCROW}` }), /API_ESCROW_CONTRACTS .*evm-local has no backend/);
  t.throws(() => loadApiConfig({ API_ESCROW_CONTRACTS: `evm-local=${ESCROW}`, API_CHAIN_BACKENDS: BACKEND }), /evm-local has no stablecoin in API_FUNDING_STABLECOINS/);
  t.throws(() => loadApiConfig({ API_ESCROW_CONTRACTS: 'evm-local=0x12' }), /API_ESCROW_CONTRACTS/);
  t.throws(() => loadApiConfig({ API_ESCROW_FUNDING_WINDOW_SEC: '10' }), /API_ESCROW_FUNDING_WINDOW_SEC/);
  t.equal(loadApiConfig({}).escrowFundingWindowSec, 86_400, 'default: a day to fund');
  const c = loadApiConfig({ API_ESCROW_CONTRACTS: `evm-local=${ESCROW}`, API_CHAIN_BACKENDS: BACKEND, API_FUNDING_STABLECOINS: `evm-local=${TOKEN}`, API_FUNDING_ISSUER_KEY_FILE: '/k' });
  t.equal(c.escrowContracts, `evm-local=${ESCROW}`);
});

t.test('without a contract: reads answer, creation is 503 unavailable', async (t) => {
  const s = await setupPlatform(t);
  t.same((await s.call('GET', '/v1/escrows')).json(), { data: [], next_cursor: null, has_more: false });
  const r = await s.call('POST', '/v1/escrows', { payer_account_holder_id: 'ah_00000000000000000000000000', payer_wallet_id: 'wal_x', payee_account_holder_id: 'ah_00000000000000000000000001', amount: '1', refundable_after: '2030-01-01T00:00:00Z' }, s.owner.token, { 'idempotency-key': 'k' });
  t.same([r.statusCode, r.json().code], [503, 'unavailable']);
});

t.test('the service from the configuration, and the app\'s sweep', async (t) => {
  const s = await setupPlatform(t);
  const config = loadApiConfig({ API_DATA_DIR: s.dir, API_ESCROW_CONTRACTS: `evm-local=${ESCROW}`, API_CHAIN_BACKENDS: BACKEND, API_FUNDING_STABLECOINS: `evm-local=${TOKEN}`, API_FUNDING_ISSUER_KEY_FILE: '/k' });
  const e = createEscrows(config, s.platform, () => TOKEN, { sweepMs: 10 });
  t.equal(await e.service.runDue(), 0, 'nothing open');
  e.start();
  e.start();
  e.stop();
  const none = createEscrows(loadApiConfig({ API_DATA_DIR: s.dir }), s.platform, () => undefined);
  none.start();
  none.stop();
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: s.dir }), logger: createLogger('api', 'silent'), platform: s.platform });
  await app.ready();
  t.equal((await app.inject({ method: 'GET', url: '/v1/escrows', headers: { authorization: `Bearer ${s.owner.token}` } })).statusCode, 200);
  await app.close();
});
