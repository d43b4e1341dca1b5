// Shared setup for the customer tests: a real LevelDB store with the vault API's and the platform API's
// services over it, as server.ts builds them.
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { createPlatform } from '../../api/platform.ts';
import { CustomerLinks } from '../../api/customers/customer-links.ts';
import type { CustomerServices } from '../../api/customers/create-customer.ts';

export const newPublicKey = () => bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));

/** Opens the services over `dir` (a fresh directory when omitted); closes the store at teardown. */
export async function setupCustomers(t: Test, dir = mkdtempSync(join(tmpdir(), 'customers-')), opts: Parameters<typeof createPlatform>[1] = {}) {
  const store = await RecordStore.open(dir);
  let closed = false;
  t.teardown(async () => {
    if (!closed) await store.close();
  });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), ...opts });
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 } });
  const links = new CustomerLinks(store);
  const services: CustomerServices = { store, vaults, tenancy: platform.tenancy, links, environment: 'sandbox' };
  const operator = ed25519.utils.randomSecretKey();
  return {
    dir, store, platform, vaults, links, services, operator,
    async close() {
      closed = true;
      await store.close();
    },
  };
}
