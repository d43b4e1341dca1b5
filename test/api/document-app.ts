// The whole API (vault API and platform) built in this process on a throwaway store, for tests that read
// its OpenAPI document or call it without any other set-up; closed when `t` ends.
import type { Test } from 'tap';
import { join } from 'node:path';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../api/platform.ts';
import { openTestStore } from '../support/test-store.ts';

export async function documentApp(t: Test, prefix: string) {
  const { dir, store } = await openTestStore(prefix);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 1 } });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api-test', 'silent'),
    vaults, transactions: new TransactionService({ vaults, hasBackend: () => true }), platform,
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  return { dir, store, vaults, platform, app };
}
