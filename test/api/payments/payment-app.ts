// Shared setup for the fee and quote tests: both APIs over one real LevelDB store as server.ts builds them
// (test/api/wallets/wallet-app.ts), with a platform fee configured, an injected clock, two customers
// (Acme and Globex, each an organization linked to its tenant), and account holders made through the API
// and linked to a vault's wallet the way wallet-provision leaves them.
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { createCustomer } from '../../../api/customers/create-customer.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import { ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export async function paymentApp(t: Test, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'payments-'));
  const store = await RecordStore.open(dir);
  const clock = { now: Date.parse('2026-03-01T12:00:00.000Z') };
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 20 } });
  const transactions = new TransactionService({ vaults, hasBackend: () => true });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), clock: () => clock.now });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir, ...env }), logger: createLogger('api', 'silent'), vaults, transactions, platform });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const links = new CustomerLinks(store);
  const operator = ed25519.utils.randomSecretKey();
  const customer = async (name: string) => {
    const made = await createCustomer({ store, vaults, tenancy: platform.tenancy, links, environment: 'sandbox' }, { name, publicKey: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())), operatorSecretKey: operator });
    const key = async (role: string) => (await platform.tenancy.createKey(made.sandbox.id, role)).token;
    return { ...made, org: made.organization.id, owner: await key('owner'), key };
  };
  const acme = await customer('Acme');
  const globex = await customer('Globex');

  /** A platform call with a bearer key (Acme's owner by default). */
  const call = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

  /** An active vault of `org` (its key as key generation leaves it) and its wallet on `chain`. */
  const vaultWallet = async (org: string, chain = 'evm-local', policy: Record<string, unknown> | null = null): Promise<{ vault: VaultRecord; wallet: WalletRecord }> => {
    const v = await vaults.createVault(org, { tier: 'hosted' });
    const vault: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)), policy };
    await store.batch([vaults.vaultOp(vault)]);
    return { vault, wallet: (await vaults.createWallet(org, vault.id, chain, 0, undefined)).wallet };
  };

  /** PATCH with the holder's current ETag. */
  const patchHolder = async (id: string, body: Record<string, unknown>, token = acme.owner) => {
    const etag = (await call('GET', `/v1/account-holders/${id}`, undefined, token)).headers.etag as string;
    const r = await call('PATCH', `/v1/account-holders/${id}`, body, token, { 'if-match': etag });
    t.equal(r.statusCode, 200, r.body);
    return r.json() as { id: string; status: string; verification_status: string };
  };

  /** An individual holder taken through verification to `status` (active, suspended, pending_verification). */
  const holder = async (status: 'active' | 'suspended' | 'pending_verification' = 'active', token = acme.owner): Promise<string> => {
    const h = (await call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' }, token)).json() as { id: string };
    if (status === 'pending_verification') return h.id;
    await patchHolder(h.id, { verification_status: 'pending' }, token);
    await patchHolder(h.id, { verification_status: 'verified', status: 'active' }, token);
    if (status === 'suspended') await patchHolder(h.id, { status: 'suspended' }, token);
    return h.id;
  };

  /**
   * Links the holder to the vault and its wallet as POST /account-holders/self/wallet-provision leaves
   * them (holder-wallets.ts); that call's member-session checks are tested in holder-wallets.test.ts.
   */
  const link = async (holderId: string, c: { tenant: { id: string }; sandbox: { id: string } }, vault: VaultRecord, wallet: WalletRecord) => {
    const at = new Date(clock.now).toISOString();
    await store.batch([
      ACCOUNT_HOLDER_VAULTS.putOp(holderId, { v: 1, account_holder_id: holderId, tenant: c.tenant.id, workspace: c.sandbox.id, org: vault.org, vault_id: vault.id, chains: [wallet.chain], wallets: [{ chain: wallet.chain, wallet_id: wallet.id }], linked_at: at, updated_at: at }),
      VAULT_ACCOUNT_HOLDERS.putOp(vault.id, { v: 1, account_holder_id: holderId }),
    ]);
  };

  return { dir, store, vaults, platform, app, clock, acme, globex, call, vaultWallet, patchHolder, holder, link };
}
