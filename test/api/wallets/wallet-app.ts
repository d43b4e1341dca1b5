// Shared setup for the wallet tests: both APIs over one real LevelDB store, as server.ts builds them,
// with two customers (Acme and Globex: an organization, a tenant, and the link), bearer keys of several
// roles in Acme's linked (sandbox) workspace, and calls signed as the SDK signs them.
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { HDKey } from '@scure/bip32';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService, type TransactionServiceOptions } from '../../../api/transactions/transaction-service.ts';
import type { Chains } from '../../../api/transactions/transaction-worker.ts';
import { createPlatform } from '../../../api/platform.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { createCustomer } from '../../../api/customers/create-customer.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';
import type { CoordinatorClient } from '../../../api/coordinator/coordinator-client.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import type { MemberActions } from '../../../api/member-auth/member-actions.ts';

export interface WalletAppOptions {
  chains?: Chains;
  hasBackend?: TransactionServiceOptions['hasBackend'];
  /** Options of the platform (e.g. its clock, the loopback allow-list an OpenID provider fixture needs). */
  platform?: Parameters<typeof createPlatform>[1];
  /** API settings beside the data directory (e.g. the platform fee). */
  env?: Record<string, string>;
  /** Vaults an organization may have (default 5). */
  vaultsPerOrg?: number;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Makes test customers as the operator does (an organization, its sandbox and production workspaces, the
 * link) with their API credentials, and a maker of workspace bearer keys of a role (sandbox by default).
 */
export function customerMaker(d: { store: RecordStore; vaults: VaultService; platform: Awaited<ReturnType<typeof createPlatform>>; links?: CustomerLinks }) {
  const links = d.links ?? new CustomerLinks(d.store);
  const operator = ed25519.utils.randomSecretKey();
  return async (name: string) => {
    const secret = ed25519.utils.randomSecretKey();
    const made = await createCustomer({ store: d.store, vaults: d.vaults, tenancy: d.platform.tenancy, links, environment: 'sandbox' }, { name, publicKey: bytesToHex(ed25519.getPublicKey(secret)), operatorSecretKey: operator });
    const creds: ApiCredentials = { keyId: made.apiKeyId, secretKey: secret };
    // A production key needs a signing key (its changes are signed); reads with it need no signature.
    const key = async (role: string, workspace = made.sandbox.id) =>
      (await d.platform.tenancy.createKey(workspace, role, workspace === made.production.id ? { signingPublicKey: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) } : {})).token;
    return { ...made, org: made.organization.id, creds, key };
  };
}

export async function walletApp(t: Test, opts: WalletAppOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wallets-'));
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: opts.vaultsPerOrg ?? 5 } });
  const transactions = new TransactionService({ vaults, hasBackend: opts.hasBackend ?? (() => true) });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), ...opts.platform });
  let memberActions: MemberActions | undefined;
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir, ...opts.env }), logger: createLogger('api', 'silent'), vaults, transactions, platform, chains: opts.chains,
    onMemberActions: (a) => { memberActions = a; },
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const links = new CustomerLinks(store);
  const make = customerMaker({ store, vaults, platform, links });
  const customer = async (name: string) => {
    const made = await make(name);
    return { ...made, owner: await made.key('owner') };
  };
  const acme = await customer('Acme');
  const globex = await customer('Globex');

  /** A platform call with a bearer key (Acme's owner by default). */
  const bearer = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
  /** A vault-API call signed with an API key (Acme's by default). */
  const signed = (method: Method, path: string, body?: unknown, creds = acme.creds) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(creds, method, `http://api.test${path}`, payload) } });
  };

  /**
   * An active vault of `org` whose key is `secret` (random when omitted), as key generation leaves it:
   * with `secret` known, signingCoordinator() signs for its wallets as the cluster would.
   */
  const activeVault = async (org: string, secret = secp256k1.utils.randomSecretKey(), policy: Record<string, unknown> | null = null) => {
    const v = await vaults.createVault(org, { tier: 'hosted' });
    const chainCode = randomBytes(32);
    const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secret, true)), chain_code: bytesToHex(chainCode), policy };
    await store.batch([vaults.vaultOp(active)]);
    return { vault: active, secret, chainCode };
  };
  const wallet = async (org: string, vaultId: string, chain = 'evm-local', account = 0, type?: 'p2wpkh' | 'p2tr'): Promise<WalletRecord> =>
    (await vaults.createWallet(org, vaultId, chain, account, type)).wallet;

  /** The app's member actions (built with the platform and both APIs). */
  const actions = () => {
    if (!memberActions) throw new Error('the app built no member actions');
    return memberActions;
  };
  return { dir, store, vaults, transactions, platform, app, links, acme, globex, bearer, signed, activeVault, wallet, memberActions: actions };
}

/**
 * A coordinator that signs as the cluster would, with the vault's whole key (which no real deployment
 * has): the child key of the requested path, ECDSA over each digest, with its recovery id.
 */
export function signingCoordinator(secret: Uint8Array, chainCode: Uint8Array): CoordinatorClient {
  const root = new HDKey({ privateKey: secret, chainCode });
  return {
    sign: async (req: { path: number[]; digests: Uint8Array[] }) => {
      const child = root.derive(`m/${req.path.join('/')}`);
      const sigs = req.digests.map((d) => secp256k1.Signature.fromBytes(secp256k1.sign(d, child.privateKey!, { prehash: false, format: 'recovered' }), 'recovered'));
      return { signatures: sigs.map((s) => s.toBytes('compact')), recoveryIds: sigs.map((s) => s.recovery!), publicKey: child.publicKey! };
    },
  } as unknown as CoordinatorClient;
}
