// Shared setup for the escrow tests: a real anvil with the sandbox stablecoin and the escrow contract
// deployed (the issuer and the deployer are anvil development accounts, never a holder's), both APIs
// over one real LevelDB store with the escrow service on that chain and a manual clock, two customers
// (Acme and Globex), and active account holders with a linked hosted vault's evm-local wallet. A
// holder's wallet sends its calls through anvil's impersonation (the transaction worker's broadcast
// stands in): the same calldata, from the same address.
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, erc20Abi, http, parseEther, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { createCustomer } from '../../../api/customers/create-customer.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';
import { PlatformLedger } from '../../../api/ledger/platform-ledger.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { deployStablecoin, stablecoinArtifact } from '../../../api/funding/deploy-stablecoin.ts';
import { deployEscrow } from '../../../api/escrow/deploy-escrow.ts';
import { EscrowChain } from '../../../api/escrow/escrow-chain.ts';
import { EscrowService } from '../../../api/escrow/escrow-service.ts';
import type { EscrowCall } from '../../../api/escrow/token-escrow.ts';
import { startAnvil } from '../../chains/anvil.ts';
import { ManualScheduler } from '../funding/funding-app.ts';

// anvil's development accounts 1 (the stablecoin's issuer) and 8 (the escrow's deployer).
export const ISSUER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;
export const DEPLOYER_KEY = '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97' as Hex;
export const UNIT = 10n ** 18n;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** `loopbackWebhooks`: webhook endpoints may be plain-http loopback receivers (the catalog-events tests). */
export async function escrowApp(t: Test, opts: { loopbackWebhooks?: boolean } = {}) {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const net = evmNetwork('evm-local')!;
  const token = await deployStablecoin(net, anvil.url, ISSUER_KEY);
  const contract = await deployEscrow(net, anvil.url, DEPLOYER_KEY);
  const chain = new EscrowChain(net, anvil.url, contract);

  const dir = mkdtempSync(join(tmpdir(), 'escrow-'));
  const store = await RecordStore.open(dir);
  // Escrow times are in whole seconds of the chain; the manual clock starts at the chain's own time.
  const clock = new ManualScheduler(Number((await anvil.publicClient.getBlock()).timestamp) * 1000);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 50 } });
  const transactions = new TransactionService({ vaults, hasBackend: () => true });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), clock: () => clock.now(), ...(opts.loopbackWebhooks ? { webhookAllowedDestinations: ['127.0.0.1'] } : {}) });
  const ledger = new PlatformLedger(store, () => clock.now());
  const links = new CustomerLinks(store);
  const warnings: object[] = [];
  const service = new EscrowService({
    store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links, ledger,
    escrow: (c) => (c === 'evm-local' ? chain : undefined), stablecoin: (c) => (c === 'evm-local' ? token : undefined), fundingWindowMs: 3_600_000,
    clock: () => clock.now(), log: { warn: (o: object) => warnings.push(o) },
  });
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, transactions, platform,
    escrows: { service, start: () => undefined, stop: () => undefined },
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const operator = ed25519.utils.randomSecretKey();
  const customer = async (name: string) => {
    const secret = ed25519.utils.randomSecretKey();
    const made = await createCustomer({ store, vaults, tenancy: platform.tenancy, links, environment: 'sandbox' }, { name, publicKey: bytesToHex(ed25519.getPublicKey(secret)), operatorSecretKey: operator });
    const key = async (role: string, workspace = made.sandbox.id) =>
      (await platform.tenancy.createKey(workspace, role, workspace === made.production.id ? { signingPublicKey: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) } : {})).token;
    return { ...made, org: made.organization.id, creds: { keyId: made.apiKeyId, secretKey: secret }, owner: await key('owner'), key };
  };
  const acme = await customer('Acme');
  const globex = await customer('Globex');

  const bearer = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

  const issuer = createWalletClient({ chain: foundry, transport: http(anvil.url), account: privateKeyToAccount(ISSUER_KEY) });
  /** An active holder of `who`'s sandbox workspace with a linked hosted vault and an evm-local wallet holding `coins` of the stablecoin and 1 ETH. */
  const holder = async (who = acme, coins = 0n, member?: { id: string; kind: 'byo_oidc' | 'hosted' }) => {
    const call = (method: Method, url: string, body?: unknown, headers: Record<string, string> = {}) => bearer(method, url, body, who.owner, headers);
    const made = await call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' });
    if (made.statusCode !== 201) throw new Error(made.body);
    const id = made.json().id as string;
    for (const [v, patch] of [[1, { verification_status: 'pending' }], [2, { verification_status: 'verified' }], [3, { status: 'active' }]] as const) {
      const r = await call('PATCH', `/v1/account-holders/${id}`, patch, { 'if-match': `"${v}"` });
      if (r.statusCode !== 200) throw new Error(r.body);
    }
    if (member) {
      const h = (await ACCOUNT_HOLDERS.in(store).get(id))!;
      await store.batch([ACCOUNT_HOLDERS.putOp(id, { ...h, member_id: member.id, member_kind: member.kind })]);
    }
    const v = await vaults.createVault(who.org, { tier: 'hosted' });
    const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(new Uint8Array(32).fill(7)), end_user_auth: true, end_user_subject: `sub-${id}` };
    await store.batch([vaults.vaultOp(active)]);
    const { wallet } = await vaults.createWallet(who.org, active.id, 'evm-local', 0, undefined);
    const now = new Date(clock.now()).toISOString();
    await store.batch([
      ACCOUNT_HOLDER_VAULTS.putOp(id, { v: 1, account_holder_id: id, tenant: who.tenant.id, workspace: who.sandbox.id, org: who.org, vault_id: active.id, chains: ['evm-local'], wallets: [{ chain: 'evm-local', wallet_id: wallet.id }], linked_at: now, updated_at: now }),
      VAULT_ACCOUNT_HOLDERS.putOp(active.id, { v: 1, account_holder_id: id }),
    ]);
    const address = wallet.address as Hex;
    await anvil.testClient.setBalance({ address, value: parseEther('1') });
    if (coins > 0n) await anvil.publicClient.waitForTransactionReceipt({ hash: await issuer.writeContract({ address: token, abi: stablecoinArtifact().abi, functionName: 'mint', args: [address, coins] }) });
    return { id, wallet, address, vault: active };
  };

  /** Sends `call` from `from` (impersonated) and waits for its receipt; anvil mines it at once. */
  const send = async (from: Hex, call: Pick<EscrowCall, 'to' | 'data'>) => {
    await anvil.testClient.impersonateAccount({ address: from });
    const w = createWalletClient({ chain: foundry, transport: http(anvil.url), account: from });
    const hash = await w.sendTransaction({ account: from, to: call.to, data: call.data, value: 0n, chain: foundry });
    const r = await anvil.publicClient.waitForTransactionReceipt({ hash });
    await anvil.testClient.stopImpersonatingAccount({ address: from });
    return r;
  };
  /** Mines `n` empty blocks (the chain's finality depth is 2: one block after a transaction's). */
  const mine = (n = 1) => anvil.testClient.mine({ blocks: n });
  const balance = (address: string) => anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [address as Hex] });

  return { dir, store, vaults, transactions, platform, app, clock, ledger, service, chain, anvil, token, contract, acme, globex, bearer, holder, send, mine, balance, warnings };
}

export type EscrowApp = Awaited<ReturnType<typeof escrowApp>>;
