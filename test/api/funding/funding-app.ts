// Shared setup for the funding tests: both APIs over one real LevelDB store (as server.ts builds them),
// two customers (Acme and Globex), a funding service on the sandbox rail driven by a manual clock, and
// account holders with a linked hosted vault's EVM wallet. The issuer is either a real one (the anvil
// test) or a double that records mints and reports them final when told (the state-machine tests).
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { keccak256, toHex, type Hex } from 'viem';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { createCustomer } from '../../../api/customers/create-customer.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';
import { SandboxRail, type Scheduler } from '../../../api/rails/sandbox-rail.ts';
import { PlatformLedger } from '../../../api/ledger/platform-ledger.ts';
import { FundingService } from '../../../api/funding/funding-service.ts';
import type { MintStatus, SignedMint, StablecoinIssuer, TransferLog } from '../../../api/funding/stablecoin-issuer.ts';
import type { Op } from '../../../api/store/record-repository.ts';
import type { Chains } from '../../../api/transactions/transaction-worker.ts';
import { createGateways } from '../../../api/gateways/gateway-setup.ts';
import type { AddressInfo } from 'node:net';

/** A clock tests move by hand; timers never fire by themselves (the tests call runDue). */
export class ManualScheduler implements Scheduler {
  constructor(public ms = Date.UTC(2030, 0, 1)) {}
  now(): number {
    return this.ms;
  }
  setTimeout(): unknown {
    return undefined;
  }
  clearTimeout(): void {}
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3' as Hex;
export const BURN = '0x00000000000000000000000000000000000000bb';

/** An issuer double: records each signed mint, and answers its status as the test sets it. */
export class IssuerDouble {
  readonly asset = `evm-local:${TOKEN}`;
  readonly chainName = 'evm-local';
  readonly address = '0x00000000000000000000000000000000000000a1' as Hex;
  readonly token = TOKEN;
  mints: { to: string; amount: bigint; tx_hash: string }[] = [];
  broadcasts = 0;
  /** When set, broadcasting fails with it (a node that does not answer). */
  broadcastError: Error | undefined;
  status: Map<string, MintStatus> = new Map();
  transfers: Map<string, TransferLog[]> = new Map();
  private nonce = 0;

  async signMint(to: Hex, amount: bigint, persist: (m: SignedMint, op: Op) => Promise<void>): Promise<SignedMint> {
    const raw = toHex(`mint ${to} ${amount} ${this.nonce}`);
    const m: SignedMint = { raw_tx: raw, tx_hash: keccak256(raw), nonce: this.nonce++ };
    this.mints.push({ to, amount, tx_hash: m.tx_hash });
    await persist(m, { type: 'put', collection: 'issuer_double_nonces', id: 'n', value: this.nonce });
    return m;
  }
  async broadcast(): Promise<void> {
    if (this.broadcastError) throw this.broadcastError;
    this.broadcasts++;
  }
  async mintStatus(hash: string): Promise<MintStatus> {
    return this.status.get(hash) ?? { state: 'pending' };
  }
  async finalTransfers(hash: string) {
    const logs = this.transfers.get(hash);
    return logs ? { logs, block_number: 7 } : undefined;
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface FundingAppOptions {
  issuer?: (chain: string) => StablecoinIssuer | undefined;
  settleMs?: number;
  /** The chain backends the app reads balances with (GET /v1/account-holders/self/balance). */
  chains?: Chains;
  /**
   * Integration gateways (docs/platform/gateways.md): the app listens on loopback for their callbacks, and
   * may call gateways on loopback; the call timeout and the conformance callback wait as given.
   */
  gateways?: { timeoutMs: number; callbackWaitMs: number };
  /** Webhook endpoints may be plain-http loopback receivers (the catalog-events tests). */
  loopbackWebhooks?: boolean;
}

export async function fundingApp(t: Test, opts: FundingAppOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'funding-'));
  const store = await RecordStore.open(dir);
  const clock = new ManualScheduler();
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 50 } });
  const transactions = new TransactionService({ vaults, hasBackend: () => true });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), clock: () => clock.now(), ...(opts.gateways || opts.loopbackWebhooks ? { webhookAllowedDestinations: ['127.0.0.1'] } : {}) });
  const config = loadApiConfig({ API_DATA_DIR: dir, ...(opts.gateways ? { API_GATEWAY_TIMEOUT_MS: String(opts.gateways.timeoutMs), API_GATEWAY_CALLBACK_WAIT_MS: String(opts.gateways.callbackWaitMs) } : {}) });
  let origin = 'http://127.0.0.1';
  const gateways = opts.gateways ? createGateways(config, platform, { callbackOrigin: () => origin }) : undefined;
  gateways?.setRedemptionAddresses({ 'evm-local': BURN });
  const issuer = new IssuerDouble();
  const rail = new SandboxRail({ store, environment: 'sandbox', settleMs: opts.settleMs ?? 60_000, scheduler: clock, redemptionAddresses: { 'evm-local': BURN } });
  const ledger = new PlatformLedger(store, () => clock.now());
  const links = new CustomerLinks(store);
  /** What the sweep logged. */
  const warnings: object[] = [];
  const service = new FundingService({
    store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links, ledger, rail, gateways,
    issuer: opts.issuer ?? ((c) => (c === 'evm-local' ? (issuer as unknown as StablecoinIssuer) : undefined)), offRampWindowMs: 3_600_000, clock: () => clock.now(),
    log: { warn: (o: object) => warnings.push(o) },
  });
  const app = await buildApp({
    config, logger: createLogger('api', 'silent'), vaults, transactions, platform, gateways,
    funding: { service, rail, start: () => undefined, stop: () => undefined }, chains: opts.chains,
  });
  if (gateways) {
    await app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  }
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

  /** A vault-API call signed with Acme's API key, as the SDK signs it. */
  const signed = (method: Method, path: string, body?: unknown) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(acme.creds, method, `http://api.test${path}`, payload) } });
  };
  const bearer = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

  /**
   * An active holder of `who`'s sandbox workspace, with a hosted vault of its organization linked and an
   * evm-local wallet derived under it (as POST /account-holders/self/wallet-provision leaves them).
   */
  const holder = async (who = acme, secret = secp256k1.utils.randomSecretKey()) => {
    const call = (method: Method, url: string, body?: unknown, headers: Record<string, string> = {}) => bearer(method, url, body, who.owner, headers);
    const made = await call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' });
    if (made.statusCode !== 201) throw new Error(made.body);
    const id = made.json().id as string;
    for (const [v, patch] of [[1, { verification_status: 'pending' }], [2, { verification_status: 'verified' }], [3, { status: 'active' }]] as const) {
      const r = await call('PATCH', `/v1/account-holders/${id}`, patch, { 'if-match': `"${v}"` });
      if (r.statusCode !== 200) throw new Error(r.body);
    }
    const v = await vaults.createVault(who.org, { tier: 'hosted' });
    const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secret, true)), chain_code: bytesToHex(new Uint8Array(32).fill(7)), end_user_auth: true, end_user_subject: `sub-${id}` };
    await store.batch([vaults.vaultOp(active)]);
    const { wallet } = await vaults.createWallet(who.org, active.id, 'evm-local', 0, undefined);
    const now = new Date(clock.now()).toISOString();
    await store.batch([
      ACCOUNT_HOLDER_VAULTS.putOp(id, { v: 1, account_holder_id: id, tenant: who.tenant.id, workspace: who.sandbox.id, org: who.org, vault_id: active.id, chains: ['evm-local'], wallets: [{ chain: 'evm-local', wallet_id: wallet.id }], linked_at: now, updated_at: now }),
      VAULT_ACCOUNT_HOLDERS.putOp(active.id, { v: 1, account_holder_id: id }),
    ]);
    return { id, wallet, vault: active, secret };
  };

  return { dir, store, vaults, transactions, platform, app, clock, issuer, rail, ledger, service, gateways, acme, globex, bearer, signed, holder, warnings };
}

export type FundingApp = Awaited<ReturnType<typeof fundingApp>>;
