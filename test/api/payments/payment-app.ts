// Shared setup for the fee and quote tests: both APIs over one real LevelDB store as server.ts builds them
// (test/api/wallets/wallet-app.ts), with a platform fee configured, an injected clock, two customers
// (Acme and Globex, each an organization linked to its tenant), and account holders made through the API
// and linked to a vault's wallet the way wallet-provision leaves them.
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { walletApp } from '../wallets/wallet-app.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import { ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';

export async function paymentApp(t: Test, env: Record<string, string> = {}) {
  const clock = { now: Date.parse('2026-03-01T12:00:00.000Z') };
  const s = await walletApp(t, { platform: { clock: () => clock.now }, env, vaultsPerOrg: 20 });
  const { store, vaults, acme } = s;
  /** A platform call with a bearer key (Acme's owner by default). */
  const call = s.bearer;

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
   * them (holder-wallets.ts); that call's member-session checks are tested in holder-wallets.unit.ts.
   */
  const link = async (holderId: string, c: { tenant: { id: string }; sandbox: { id: string } }, vault: VaultRecord, wallet: WalletRecord) => {
    const at = new Date(clock.now).toISOString();
    await store.batch([
      ACCOUNT_HOLDER_VAULTS.putOp(holderId, { v: 1, account_holder_id: holderId, tenant: c.tenant.id, workspace: c.sandbox.id, org: vault.org, vault_id: vault.id, chains: [wallet.chain], wallets: [{ chain: wallet.chain, wallet_id: wallet.id }], linked_at: at, updated_at: at }),
      VAULT_ACCOUNT_HOLDERS.putOp(vault.id, { v: 1, account_holder_id: holderId }),
    ]);
  };

  return { dir: s.dir, store, vaults, platform: s.platform, app: s.app, clock, acme, globex: s.globex, call, vaultWallet, patchHolder, holder, link };
}
