// Shared setup for the tokenization API tests: one real anvil, both APIs over one real LevelDB store with the
// tokenization services on that chain (the deployer is anvil's development account 9 and the gasless relayer
// its account 1, neither used otherwise by these tests and never a customer's key), a manual clock, two
// customers (Acme and Globex) with keys of several roles, and hosted vaults with an evm-local wallet each to
// own admin Safes or send their own transactions: calls on tokens and roles-module members' calls (the
// transaction worker signs and broadcasts them on the same anvil).
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Hex } from 'viem';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { createTokenization } from '../../../api/tokenization/tokenization-setup.ts';
import { tokenChain } from '../../../api/tokenization/token-chain.ts';
import { startAnvil } from '../../chains/anvil.ts';
import { TransactionWorker } from '../../../api/transactions/transaction-worker.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import type { CoordinatorClient } from '../../../api/coordinator/coordinator-client.ts';
import { customerMaker, signingCoordinator } from '../wallets/wallet-app.ts';

/** anvil's development account 9: the service deployer. */
export const DEPLOYER_KEY = '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6' as Hex;
/** anvil's development account 1: the gasless relayer. */
export const RELAYER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * `extra`: more of buildApp's options (the RWA layer's seams, for one); `loopbackWebhooks`: webhook
 * endpoints may be plain-http loopback receivers (the catalog-events rows).
 */
export async function tokenizationApp(t: Test, extra: Partial<Parameters<typeof buildApp>[0]> = {}, opts: { loopbackWebhooks?: boolean } = {}) {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const chain = tokenChain(evmNetwork('evm-local')!, anvil.url, DEPLOYER_KEY, RELAYER_KEY);
  const dir = mkdtempSync(join(tmpdir(), 'tokenization-'));
  const store = await RecordStore.open(dir);
  let now = Date.now();
  const clock = { now: () => now, advance: (ms: number) => { now += ms; } };
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 50 } });
  const transactions = new TransactionService({ vaults, hasBackend: () => true });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), clock: () => clock.now(), ...(opts.loopbackWebhooks ? { webhookAllowedDestinations: ['127.0.0.1'] } : {}) });
  const config = loadApiConfig({ API_DATA_DIR: dir });
  // A relay not mined within a second is answered `sent` and followed in the background.
  const tokenization = createTokenization(config, platform, { chains: new Map([['evm-local', chain]]), transactions, signatureWaitMs: 30_000, relayReceiptWaitMs: 1000, relayPollMs: 50 });
  // The signer cluster, as each test vault's whole key would sign (tests only): a Safe owner signature
  // (intent kind 3) goes through the real vault transaction path and worker.
  const signers = new Map<string, CoordinatorClient>();
  const coordinator = { sign: (req: { vaultId: string }) => signers.get(req.vaultId)!.sign(req as never) } as unknown as CoordinatorClient;
  // A vault wallet's own EVM transactions (a call on a token, a roles-module member's call) are sent to the same anvil.
  const evm = new EvmChain(evmNetwork('evm-local')!, anvil.url);
  const worker = new TransactionWorker({ vaults, transactions, coordinator, chains: { evm: (c) => (c === 'evm-local' ? evm : undefined), bitcoin: () => undefined }, log: createLogger('worker', 'silent'), pollMs: 20, maxRetryDelayMs: 20 });
  worker.start();
  const app = await buildApp({ config, logger: createLogger('api', 'silent'), vaults, transactions, platform, tokenization, ...extra });
  t.teardown(async () => {
    await worker.stop();
    await tokenization.vaultCalls.stop();
    await tokenization.tokens.settled();
    await tokenization.operations.settled();
    await tokenization.gasless.close();
    await app.close();
    await store.close();
  });
  const make = customerMaker({ store, vaults, platform });
  const customer = async (name: string) => {
    const made = await make(name);
    return { ...made, owner: await made.key('owner'), developer: await made.key('developer'), viewer: await made.key('viewer') };
  };
  const acme = await customer('Acme');
  const globex = await customer('Globex');

  const call = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

  /** An active hosted vault of `org` with an evm-local wallet; `secret` is its whole key (tests only). */
  const vaultWallet = async (org: string) => {
    const secret = secp256k1.utils.randomSecretKey();
    const v = await vaults.createVault(org, { tier: 'hosted' });
    const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secret, true)), chain_code: bytesToHex(new Uint8Array(32).fill(7)) };
    await store.batch([vaults.vaultOp(active)]);
    const { wallet } = await vaults.createWallet(org, active.id, 'evm-local', 0, undefined);
    signers.set(active.id, signingCoordinator(secret, new Uint8Array(32).fill(7)));
    return { vault: active, wallet, secret };
  };

  return { dir, store, vaults, transactions, platform, app, anvil, chain, clock, tokenization, acme, globex, call, vaultWallet };
}

export type TokenizationApp = Awaited<ReturnType<typeof tokenizationApp>>;
