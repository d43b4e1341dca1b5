// The vault API's client (docs/sdk.md): every request signed (RFC 9421, docs/request-signing.md), every
// endpoint typed, intents built and signed here from the same code the API and the nodes parse, and
// waits for a vault or transaction state.
import type { Static } from '@sinclair/typebox';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { Vault as VaultSchema, Wallet as WalletSchema } from '../routes/v1/vaults.ts';
import type { Transaction as TransactionSchema } from '../routes/v1/transactions.ts';
import type { ApiKey as ApiKeySchema } from '../routes/v1/api-keys.ts';
import type { Policy } from '../policy/policy.ts';
import { encodeIntent, signIntent, type BtcOutpoint, type BtcOutput } from '../intents/intent.ts';
import { evmIntentFromFields } from '../intents/evm-fields.ts';
import { evmNetwork } from '../chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../chains/bitcoin/bitcoin-networks.ts';
import { signedHeaders } from './request-signer.ts';

export type Vault = Static<typeof VaultSchema>;
export type Wallet = Static<typeof WalletSchema>;
export type Transaction = Static<typeof TransactionSchema>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type Tier = Vault['tier'];
export type TransactionState = Transaction['state'];

export interface CustodyClientOptions {
  /** Origin of the API, e.g. https://api.example.com (paths are under /v1). */
  baseUrl: string;
  organization: string;
  keyId: string;
  /** 32-byte Ed25519 secret key of the API key. */
  secretKey: Uint8Array;
  fetch?: typeof fetch;
}

/** An error answer of the API: its HTTP status and stable code. */
export class CustodyApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = 'CustodyApiError';
  }
}

export class WaitTimeoutError extends Error {
  constructor(what: string, readonly last: unknown) {
    super(`timed out waiting for ${what}`);
    this.name = 'WaitTimeoutError';
  }
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

export interface SendEvmParameters {
  wallet: Pick<Wallet, 'id' | 'chain' | 'address'>;
  to: string;
  /** Base units. */
  amount: bigint | string;
  /** `native` (default) or a token contract address. */
  asset?: string;
  /** Fee ceiling in wei. */
  maxFee?: bigint | string;
  idempotencyKey: string;
  /** Calldata of a native-asset contract call (hex); sent as a full intent. */
  data?: string;
  /** Unix seconds after which the nodes refuse to sign; 0 for none. */
  notAfter?: bigint;
  endUserToken?: string;
}

export interface SendBitcoinParameters {
  wallet: Pick<Wallet, 'id' | 'chain' | 'address'>;
  outputs: { address: string; amount: bigint }[];
  /** sat/vB ceiling. */
  maxFeeRate: bigint;
  /** Absolute fee ceiling, sat. */
  maxFee: bigint;
  inputs?: BtcOutpoint[];
  idempotencyKey: string;
  notAfter?: bigint;
  endUserToken?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class CustodyClient {
  private readonly fetch: typeof fetch;

  constructor(private readonly o: CustodyClientOptions) {
    this.fetch = o.fetch ?? fetch;
  }

  /** One signed request; throws CustodyApiError on an error answer. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = this.o.baseUrl.replace(/\/$/, '') + path;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const res = await this.fetch(url, { method, ...(payload !== undefined ? { body: payload } : {}), headers: signedHeaders({ keyId: this.o.keyId, secretKey: this.o.secretKey }, method, url, payload) });
    const text = await res.text();
    const json = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) {
      const e = (json ?? {}) as { error?: string; code?: string };
      throw new CustodyApiError(res.status, e.code ?? 'unknown', e.error ?? `HTTP ${res.status}`);
    }
    return json as T;
  }

  // API keys.
  registerApiKey(body: { public_key: string; label?: string }): Promise<ApiKey> {
    return this.request('POST', '/v1/api-keys', body);
  }

  async listApiKeys(): Promise<ApiKey[]> {
    return (await this.request<{ api_keys: ApiKey[] }>('GET', '/v1/api-keys')).api_keys;
  }

  revokeApiKey(keyId: string): Promise<ApiKey> {
    return this.request('POST', `/v1/api-keys/${encodeURIComponent(keyId)}/revoke`);
  }

  // Vaults and wallets.
  createVault(body: { tier: Tier; name?: string; policy?: Policy; end_user_subject?: string }): Promise<Vault> {
    return this.request('POST', '/v1/vaults', body);
  }

  getVault(vaultId: string): Promise<Vault> {
    return this.request('GET', `/v1/vaults/${encodeURIComponent(vaultId)}`);
  }

  reshareVault(vaultId: string, body: { target_tier?: Tier } = {}): Promise<{ id: string; status: 'accepted' }> {
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/reshare`, body);
  }

  createWallet(vaultId: string, body: { chain: string; account_index?: number; address_type?: 'p2wpkh' | 'p2tr' }): Promise<Wallet> {
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/wallets`, body);
  }

  /** A wallet's chain and address: what sendEvm and sendBitcoin need to build the intent. */
  getWallet(walletId: string): Promise<Wallet> {
    return this.request('GET', `/v1/wallets/${encodeURIComponent(walletId)}`);
  }

  setEndUserAuth(body: { jwks: { keys: Record<string, unknown>[] }; audience: string }): Promise<{ status: 'registered'; audience: string; key_count: number }> {
    return this.request('PUT', '/v1/config/end-user-auth', body);
  }

  /** Polls the vault until `done` holds (default: active). */
  waitForVault(vaultId: string, done: (v: Vault) => boolean = (v) => v.state === 'active', opts: WaitOptions = {}): Promise<Vault> {
    return this.poll(`vault ${vaultId}`, () => this.getVault(vaultId), done, opts);
  }

  // Transactions.
  submitTransaction(body: {
    wallet_id: string; intent?: string; to?: string; amount?: string; asset?: string; max_fee?: string;
    idempotency_key: string; intent_signature: string; end_user_token?: string;
  }): Promise<Transaction> {
    return this.request('POST', '/v1/transactions', body);
  }

  getTransaction(txId: string): Promise<Transaction> {
    return this.request('GET', `/v1/transactions/${encodeURIComponent(txId)}`);
  }

  /** Polls until the transaction reaches one of `states` or ends (failed, rejected, final). */
  waitForTransaction(txId: string, states: TransactionState[] = ['final'], opts: WaitOptions = {}): Promise<Transaction> {
    return this.poll(`transaction ${txId}`, () => this.getTransaction(txId), (t) => states.includes(t.state) || ['final', 'failed', 'rejected'].includes(t.state), opts);
  }

  /** The canonical intent of an EVM transfer from a wallet of this organization (docs/intents.md). */
  evmIntent(p: SendEvmParameters): Uint8Array {
    const net = evmNetwork(p.wallet.chain);
    if (!net) throw new Error(`${p.wallet.chain} is not an EVM chain`);
    const intent = evmIntentFromFields({
      organization: this.o.organization, walletId: p.wallet.id, chainId: net.chainId, from: p.wallet.address, to: p.to, amount: String(p.amount),
      asset: p.asset, maxFee: p.maxFee === undefined ? undefined : String(p.maxFee), idempotencyKey: p.idempotencyKey,
    });
    if (p.data) intent.data = hexToBytes(p.data.replace(/^0x/, ''));
    if (p.notAfter !== undefined) intent.notAfter = p.notAfter;
    return encodeIntent(intent);
  }

  /** The canonical intent of a Bitcoin transfer; the idempotency key travels inside it. */
  bitcoinIntent(p: SendBitcoinParameters): Uint8Array {
    const net = BITCOIN_NETWORKS.find((n) => n.chain === p.wallet.chain);
    if (!net) throw new Error(`${p.wallet.chain} is not a Bitcoin chain`);
    return encodeIntent({
      kind: 'btc.transfer', organization: this.o.organization, walletId: p.wallet.id, network: net.network, from: p.wallet.address,
      outputs: p.outputs as BtcOutput[], maxFeeRate: p.maxFeeRate, maxFee: p.maxFee, inputs: p.inputs ?? [], idempotencyKey: p.idempotencyKey, notAfter: p.notAfter ?? 0n,
    });
  }

  /** Signs canonical intent bytes with this client's API key. */
  signIntent(intent: Uint8Array): string {
    return bytesToHex(signIntent(intent, this.o.secretKey));
  }

  /** Builds, signs and submits an EVM transfer (native or ERC-20). */
  sendEvm(p: SendEvmParameters): Promise<Transaction> {
    return this.submitIntent(p.wallet.id, this.evmIntent(p), p.idempotencyKey, p.endUserToken);
  }

  /** Builds, signs and submits a Bitcoin transfer. */
  sendBitcoin(p: SendBitcoinParameters): Promise<Transaction> {
    return this.submitIntent(p.wallet.id, this.bitcoinIntent(p), p.idempotencyKey, p.endUserToken);
  }

  private submitIntent(walletId: string, intent: Uint8Array, idempotencyKey: string, endUserToken: string | undefined): Promise<Transaction> {
    return this.submitTransaction({
      wallet_id: walletId, intent: bytesToHex(intent), idempotency_key: idempotencyKey, intent_signature: this.signIntent(intent),
      ...(endUserToken ? { end_user_token: endUserToken } : {}),
    });
  }

  private async poll<T>(what: string, get: () => Promise<T>, done: (x: T) => boolean, opts: WaitOptions): Promise<T> {
    const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
    let last: T | undefined;
    for (;;) {
      last = await get();
      if (done(last)) return last;
      if (Date.now() > deadline) throw new WaitTimeoutError(what, last);
      await sleep(opts.intervalMs ?? 250);
    }
  }
}
