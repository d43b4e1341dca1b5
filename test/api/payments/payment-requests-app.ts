// Shared setup for the payment-request tests: both APIs over one real LevelDB store as server.ts builds
// them (test/api/wallets/wallet-app.ts), an injected clock, two customers (Acme and Globex), account
// holders made through the API and linked to a hosted vault's evm-local wallet as wallet-provision leaves
// them, and, with `anvil`, a real chain with the sandbox stablecoin deployed, so a payment's balance check
// reads a real balanceOf.
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { walletApp } from '../wallets/wallet-app.ts';
import { startAnvil, type Anvil } from '../../chains/anvil.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { deployStablecoin, stablecoinArtifact } from '../../../api/funding/deploy-stablecoin.ts';
import type { Chains } from '../../../api/transactions/transaction-worker.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import { ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';

// anvil's second dev account: the stablecoin's issuer, as in the funding tests.
const ISSUER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;
/** A token address for the tests without a chain: a request names any ERC-20 of an EVM chain. */
export const OFFCHAIN_TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3';

/** The records a refused request must leave alone. */
const WATCHED = ['payment_requests', 'payment_request_keys', 'payments', 'payment_keys', 'payment_events', 'idempotency', 'audit_log', 'webhook_events'];

export async function paymentRequestApp(t: Test, opts: { anvil?: boolean } = {}) {
  const clock = { now: Date.parse('2026-03-01T12:00:00.000Z') };
  let anvil: Anvil | undefined;
  let chains: Chains | undefined;
  if (opts.anvil) {
    anvil = await startAnvil();
    t.teardown(() => anvil!.stop());
    const chain = new EvmChain(evmNetwork('evm-local')!, anvil.url);
    chains = { evm: (c) => (c === 'evm-local' ? chain : undefined), bitcoin: () => undefined };
  }
  const token = anvil ? await deployStablecoin(evmNetwork('evm-local')!, anvil.url, ISSUER_KEY) : OFFCHAIN_TOKEN;
  const asset = `evm-local:${token}`;
  const s = await walletApp(t, { platform: { clock: () => clock.now }, vaultsPerOrg: 60, ...(chains ? { chains } : {}) });
  const { store, vaults, acme } = s;
  const call = s.bearer;
  type Customer = typeof acme;

  /** An individual holder of `who`'s sandbox workspace taken to `status`, with a hosted vault's evm-local wallet linked (none with `wallet: false`). */
  const holder = async (status: 'active' | 'suspended' | 'pending_verification' | 'closed' = 'active', who: Customer = acme, o: { wallet?: boolean } = {}): Promise<{ id: string; wallet: WalletRecord; vault: VaultRecord }> => {
    const made = await call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' }, who.owner);
    if (made.statusCode !== 201) throw new Error(made.body);
    const id = made.json().id as string;
    let version = 1;
    const patch = async (body: Record<string, unknown>) => {
      const r = await call('PATCH', `/v1/account-holders/${id}`, body, who.owner, { 'if-match': `"${version}"` });
      if (r.statusCode !== 200) throw new Error(r.body);
      version++;
    };
    if (status !== 'pending_verification') {
      await patch({ verification_status: 'pending' });
      await patch({ verification_status: 'verified' });
      await patch({ status: 'active' });
      if (status !== 'active') await patch({ status });
    }
    const v = await vaults.createVault(who.org, { tier: 'hosted' });
    const vault: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)), end_user_auth: true, end_user_subject: `sub-${id}` };
    await store.batch([vaults.vaultOp(vault)]);
    const { wallet } = await vaults.createWallet(who.org, vault.id, 'evm-local', 0, undefined);
    if (o.wallet !== false) {
      const at = new Date(clock.now).toISOString();
      await store.batch([
        ACCOUNT_HOLDER_VAULTS.putOp(id, { v: 1, account_holder_id: id, tenant: who.tenant.id, workspace: who.sandbox.id, org: who.org, vault_id: vault.id, chains: ['evm-local'], wallets: [{ chain: 'evm-local', wallet_id: wallet.id }], linked_at: at, updated_at: at }),
        VAULT_ACCOUNT_HOLDERS.putOp(vault.id, { v: 1, account_holder_id: id }),
      ]);
    }
    return { id, wallet, vault };
  };

  /** Mints `amount` of the stablecoin to `address` (with `anvil` only). */
  const fund = async (address: string, amount: bigint) => {
    if (!anvil) throw new Error('no chain');
    const issuer = createWalletClient({ chain: foundry, transport: http(anvil.url), account: privateKeyToAccount(ISSUER_KEY) });
    const hash = await issuer.writeContract({ address: token as Hex, abi: stablecoinArtifact().abi, functionName: 'mint', args: [address as Hex, amount] });
    await anvil.publicClient.waitForTransactionReceipt({ hash });
  };

  /** Every record of the collections a refused request must leave alone. */
  const snapshot = async () => {
    const out: unknown[] = [];
    for (const c of WATCHED) for await (const r of store.all(c)) out.push([c, r]);
    return JSON.stringify(out);
  };

  /** The webhook events emitted in Acme's workspace of `type` (all when omitted), oldest first. */
  const events = async (type?: string, who: Customer = acme) => {
    const out: { type: string; data: Record<string, unknown>; resource: { id: string }; actor: { type: string } }[] = [];
    for await (const e of store.all('webhook_events') as AsyncIterable<{ type: string; workspace: string; data: Record<string, unknown>; resource: { id: string }; actor: { type: string } }>) {
      if (e.workspace === who.sandbox.id && (!type || e.type === type)) out.push(e);
    }
    return out;
  };

  /** The audit entries of `action` for `resource`. */
  const audits = async (action: string, resource: string) => {
    const out: { action: string; resource_id: string; before: unknown; after: unknown; actor: { type: string } }[] = [];
    for await (const e of store.all('audit_log') as AsyncIterable<{ action: string; resource_id: string; before: unknown; after: unknown; actor: { type: string } }>) {
      if (e.action === action && e.resource_id === resource) out.push(e);
    }
    return out;
  };

  return { ...s, clock, anvil, token, asset, call, holder, fund, snapshot, events, audits };
}

export type PaymentRequestApp = Awaited<ReturnType<typeof paymentRequestApp>>;
