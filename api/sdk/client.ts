// The vault API's client (docs/sdk.md): every request signed (RFC 9421, docs/request-signing.md), every
// endpoint typed, intents built and signed here from the same code the API and the nodes parse, and
// waits for a vault or transaction state.
import type { Static } from '@sinclair/typebox';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { CreateVaultBody, ListVaultsQuery, ListWalletsQuery, ReshareVaultBody, Vault as VaultSchema, Wallet as WalletSchema } from '../../core/api-schemas/vaults.ts';
import type { ListTransactionsQuery, Prepared, SubmitBody, Transaction as TransactionSchema, Utxo } from '../../core/api-schemas/transactions.ts';
import type { ApiKey as ApiKeySchema, RegisterApiKeyBody } from '../../core/api-schemas/api-keys.ts';
import type { Committee as CommitteeSchema } from '../../core/api-schemas/committees.ts';
import type { EnrolNodeBody, Node as NodeSchema, NodeSetup as NodeSetupSchema, TeeMeasurements as TeeMeasurementsSchema, TeeMeasurementsBody } from '../../core/api-schemas/nodes.ts';
import type { TierName } from '../../core/tiers.ts';
import { encodeIntent, signIntent, type BtcOutpoint, type BtcOutput } from '../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../core/intents/evm-fields.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import { signedHeaders } from './request-signer.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { decodeIntent, type Intent } from '../../core/intents/intent.ts';
import { decodeChainLink } from '../../core/policy/intent-chain.ts';
import { intentApprovalMessage, intentRejectionMessage, passkeyApprovalChallenge, signApproval, type Approval } from '../../core/policy/policy-approval.ts';
import type { PolicyVersionView, PolicyView, VaultExportView } from '../../core/api-schemas/governance.ts';
import { chainIntent, policyChangeBody } from './policy.ts';
import type { ExportRequest } from '../../core/export/export-request.ts';
import { SdkError } from './sdk-error.ts';
import { CustodyApiError, Transport, type RetryOptions } from './transport.ts';
import type { Page } from './all-pages.ts';

export type Vault = Static<typeof VaultSchema>;
export type Wallet = Static<typeof WalletSchema>;
export type Transaction = Static<typeof TransactionSchema>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type Tier = TierName;
export type CommitteeProposal = Static<typeof CommitteeSchema>;
export type Node = Static<typeof NodeSchema>;
export type NodeSetup = Static<typeof NodeSetupSchema>;
export type TeeMeasurements = Static<typeof TeeMeasurementsSchema>;

/** A node's public identity, as `npm run node-identity` prints it on that node. */
export interface NodeIdentityRef {
  node_id: string;
  signing_key: string;
  encryption_key: string;
}

/** What a signed vault or reshare request binds of the committee (docs/trust.md "Committees"). */
export interface CommitteeBinding {
  /** The node ids shown by GET /v1/committees: the nodes join only this committee. */
  committee?: string[];
  /** Self and customer_tee: the customer's own node; pass it to pin it yourself rather than take the proposal's. */
  customer_node?: NodeIdentityRef;
}
export type TransactionState = Transaction['state'];

/** listVaults: `state`, `tier`, and the page's `cursor` and `limit` (1 to 100, default 25). */
export type ListVaultsParameters = Static<typeof ListVaultsQuery>;
/** listWallets: `chain`, `cursor`, `limit`. */
export type ListWalletsParameters = Static<typeof ListWalletsQuery>;
/** listTransactions: `vault_id`, `wallet_id`, `state`, `cursor`, `limit`. */
export type ListTransactionsParameters = Static<typeof ListTransactionsQuery>;

/** `?a=1&b=2` of the parameters that are set; empty when none is. */
function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export { allPages, type Page } from './all-pages.ts';

export interface CustodyClientOptions {
  /** Origin of the API, e.g. https://api.example.com (paths are under /v1). */
  baseUrl: string;
  organization: string;
  keyId: string;
  /** 32-byte Ed25519 secret key of the API key. */
  secretKey: Uint8Array;
  fetch?: typeof fetch;
  /** How long one attempt may take before it counts as unanswered (default 30 000 ms). */
  timeoutMs?: number;
  /** Retries of reads and replay-safe writes (docs/sdk.md "Timeouts and retries"); `{ attempts: 1 }` turns them off. */
  retry?: RetryOptions;
  /** The longest answer body read, in bytes (default 32 MiB); a longer answer is a `bad_response` error. */
  maxResponseBytes?: number;
}

/** Per request: what makes a write safe to send again. */
export interface RequestOptions {
  /** Sent as Idempotency-Key: the API answers a repeat with the first answer, so the write may be retried. */
  idempotencyKey?: string;
  /** The write is safe to repeat by what it is (a single-use intent, an idempotent operation). */
  replaySafe?: boolean;
}

export { CustodyApiError, type FieldError, type RetryOptions } from './transport.ts';

/** A wait ran out (code `timeout`); `last` is the last value seen. */
export class WaitTimeoutError extends SdkError {
  constructor(what: string, readonly last: unknown) {
    super('timeout', `timed out waiting for ${what}`);
    this.name = 'WaitTimeoutError';
  }
}

/** Runs an intent builder; whatever it refuses becomes an SdkError `bad_intent`. */
/** `{[k]: BigInt(v)}`, or nothing when `v` is absent. */
const opt = <K extends string>(k: K, v: bigint | string | undefined) => (v === undefined ? {} : { [k]: BigInt(v) }) as Partial<Record<K, bigint>>;
/** `{[k]: String(v)}`, or nothing when `v` is absent. */
const str = <K extends string>(k: K, v: bigint | string | undefined) => (v === undefined ? {} : { [k]: String(v) }) as Partial<Record<K, string>>;

function building<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof SdkError) throw err;
    throw new SdkError('bad_intent', (err as Error)?.message ?? String(err), { cause: err });
  }
}

export interface WaitOptions<T = unknown> {
  timeoutMs?: number;
  intervalMs?: number;
  /** Sees every answer read while waiting (the CLI prints state changes on a terminal). */
  progress?: (x: T) => void;
}

/**
 * How long a wait for `final` on `chain` allows by default: two minutes for signing and broadcast, plus
 * twice the time the chain usually takes to bury a transaction under its finality depth (about 28 minutes
 * on Ethereum, 2.4 hours on Bitcoin, two minutes on npm start's anvil). Two minutes for a chain not known.
 */
export function finalityWaitMs(chain: string): number {
  const net = evmNetwork(chain) ?? BITCOIN_NETWORKS.find((n) => n.chain === chain);
  return 120_000 + (net ? 2 * (net.finalityDepth + 1) * net.blockTimeS * 1000 : 0);
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
  /** Unix seconds after which the nodes refuse to sign; default an hour from now, at most a day ahead. */
  notAfter?: bigint;
  /**
   * The transaction's nonce. Default: the one POST /v1/transactions/prepare reserves for the idempotency
   * key (the same key gets the same nonce again, so a retry signs the same bytes).
   */
  nonce?: bigint;
  endUserToken?: string;
  /**
   * Instead of endUserToken: the signing session (`mas_…`) of a completed member action for this wallet
   * and these exact intent bytes (MemberAuthClient.completeMemberAction; docs/platform/member-actions.md).
   */
  memberSigningSession?: string;
}

/**
 * A Safe 1.4.1 transaction the wallet signs as one of the Safe's owners (intent kind 3, docs/intents.md).
 * Every field of the SafeTx is signed, the Safe's nonce included; the gas fields default to 0 (the
 * executor pays) and gasToken and refundReceiver to the zero address.
 */
export interface SignSafeTxParameters {
  wallet: Pick<Wallet, 'id' | 'chain' | 'address'>;
  /** The Safe, 0x address. */
  safe: string;
  to: string;
  /** Wei the Safe sends with the call; default 0. */
  value?: bigint | string;
  /** Calldata, 0x hex; default empty. */
  data?: string;
  /** 0 call (default), 1 delegatecall: nodes sign a delegatecall only to Safe's MultiSendCallOnly. */
  operation?: 0 | 1;
  safeTxGas?: bigint | string;
  baseGas?: bigint | string;
  gasPrice?: bigint | string;
  gasToken?: string;
  refundReceiver?: string;
  /** The Safe's nonce this transaction takes. */
  safeNonce: bigint | string | number;
  idempotencyKey: string;
  /** Unix seconds after which the nodes refuse to sign; default an hour from now, at most a day ahead. */
  notAfter?: bigint;
  endUserToken?: string;
  memberSigningSession?: string;
}

/**
 * A call a wallet makes on a managed token itself (docs/platform/tokenization.md "Calls by a vault wallet"):
 * signed as an EVM intent of kind 1 from the wallet to the token, value 0, data the call.
 */
interface TokenCallParameters {
  wallet: Pick<Wallet, 'id' | 'chain' | 'address'>;
  /** The token contract, 0x address (GET /v1/tokenization/tokens/{id} `address`). */
  token: string;
  /** Fee ceiling in wei; default 10^16. */
  maxFee?: bigint | string;
  idempotencyKey: string;
  notAfter?: bigint;
  /** Default: the one POST /v1/transactions/prepare reserves for the idempotency key. */
  nonce?: bigint;
  endUserToken?: string;
}

/** POST /v1/tokenization/tokens/{id}/policy-mint: a mint by a minter wallet under its own mint policy. */
export interface PolicyMintParameters extends TokenCallParameters {
  kind: 'erc20' | 'erc721' | 'erc1155';
  to: string;
  /** ERC-20 and ERC-1155. */
  amount?: bigint | string;
  /** ERC-721 and ERC-1155. */
  tokenId?: bigint | string;
  /** ERC-1155 only, 0x hex; default empty. */
  data?: string;
}

/** POST /v1/tokenization/tokens/{id}/nft-transfers: an ERC-721 or ERC-1155 id sent by the wallet that holds it. */
export interface NftTransferParameters extends TokenCallParameters {
  kind: 'erc721' | 'erc1155';
  to: string;
  tokenId: bigint | string;
  /** ERC-1155 only. */
  amount?: bigint | string;
}

/** A token call built and signed, not sent: the intent bytes and the body of the tokenization route. */
export interface PreparedTokenCall {
  intent: Uint8Array;
  body: { wallet_id: string; to: string; amount?: string; token_id?: string; data?: string; intent: string; intent_signature: string; end_user_token?: string };
}

/** A Safe owner signature as the transaction reads once signed. */
export interface SafeTxSignature {
  transaction: Transaction;
  /** 65 bytes r || s || v (v 27 or 28), 0x hex: what Safe's checkSignatures takes from this owner. */
  signature: string;
  /** The SafeTx EIP-712 digest it signs (Safe.getTransactionHash), 0x hex. */
  safeTxHash: string;
}

const ZERO_ADDRESS = `0x${'00'.repeat(20)}`;

/** POST /v1/transactions/prepare's answer: what an EVM intent of the wallet names. */
export type PreparedNonce = Static<typeof Prepared>;

/** An unspent output of a Bitcoin wallet, as GET /v1/wallets/{id}/utxos lists it (amount: satoshis, base-10). */
export type WalletUtxo = Static<typeof Utxo>;

/** How long an intent stays signable when the caller gives no not_after (the nodes allow a day at most). */
export const DEFAULT_INTENT_LIFETIME_SECONDS = 3600n;

const defaultNotAfter = () => BigInt(Math.floor(Date.now() / 1000)) + DEFAULT_INTENT_LIFETIME_SECONDS;


export interface SendBitcoinParameters {
  wallet: Pick<Wallet, 'id' | 'chain' | 'address'> & Partial<Pick<Wallet, 'address_type'>>;
  outputs: { address: string; amount: bigint }[];
  /** sat/vB ceiling. */
  maxFeeRate: bigint;
  /** Absolute fee ceiling, sat. */
  maxFee: bigint;
  /**
   * Inputs to spend, each with its amount (intent version 2). Nodes sign only an intent that names them:
   * sendBitcoin selects them from the wallet's UTXOs when absent.
   */
  inputs?: BtcOutpoint[];
  idempotencyKey: string;
  /** Unix seconds after which the nodes refuse to sign; default an hour from now, at most a day ahead. */
  notAfter?: bigint;
  endUserToken?: string;
  /**
   * Instead of endUserToken: the signing session (`mas_…`) of a completed member action for this wallet
   * and these exact intent bytes (MemberAuthClient.completeMemberAction; docs/platform/member-actions.md).
   */
  memberSigningSession?: string;
}

/** A transaction ready to submit: the canonical intent bytes and the signed request body. */
/** A key export as the API answers it (docs/export.md "API"). */
export type VaultExport = VaultExportView;
/** GET /v1/vaults/{vaultId}/policy (docs/policies.md). */
export type VaultPolicy = PolicyView;
export type VaultPolicyVersion = PolicyVersionView;

export interface PreparedTransaction {
  intent: Uint8Array;
  body: Static<typeof SubmitBody>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class CustodyClient {
  private readonly transport: Transport;
  // The default not_after chosen per idempotency key, so a retry (or evmIntent then sendEvm) builds the
  // same bytes and the API answers it as a replay rather than a conflict.
  private readonly notAfters = new Map<string, bigint>();

  constructor(private readonly o: CustodyClientOptions) {
    this.transport = new Transport({ baseUrl: o.baseUrl, ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}), ...(o.retry ? { retry: o.retry } : {}), ...(o.maxResponseBytes !== undefined ? { maxResponseBytes: o.maxResponseBytes } : {}) });
  }

  /**
   * One signed request, signed afresh for each attempt; reads, and writes made safe to repeat by `opts`,
   * are retried (docs/sdk.md "Timeouts and retries"). Throws CustodyApiError on an error answer (with its
   * request id and rejected fields), SdkError `network` when the API cannot be reached or does not answer
   * in time and `bad_response` when a success answer is not JSON.
   */
  async request<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const url = this.transport.url(path);
    const idem: Record<string, string> = opts.idempotencyKey !== undefined ? { 'idempotency-key': opts.idempotencyKey } : {};
    return (await this.transport.send<T>({
      method, path, payload, replaySafe: opts.replaySafe === true || opts.idempotencyKey !== undefined,
      headers: () => ({ ...idem, ...signedHeaders({ keyId: this.o.keyId, secretKey: this.o.secretKey }, method, url, payload) }),
    })).json;
  }

  // API keys.
  registerApiKey(body: Static<typeof RegisterApiKeyBody>): Promise<ApiKey> {
    return this.request('POST', '/v1/api-keys', body);
  }

  async listApiKeys(): Promise<ApiKey[]> {
    return (await this.request<{ api_keys: ApiKey[] }>('GET', '/v1/api-keys')).api_keys;
  }

  revokeApiKey(keyId: string): Promise<ApiKey> {
    return this.request('POST', `/v1/api-keys/${encodeURIComponent(keyId)}/revoke`);
  }

  // Customer nodes (docs/self-node.md).
  /** Enrols the organization's own node with its identity (npm run node-identity); the same node and keys again answer it as it is. */
  enrolNode(body: Static<typeof EnrolNodeBody>): Promise<Node> {
    return this.request('POST', '/v1/nodes', body, { replaySafe: true });
  }

  async listNodes(): Promise<Node[]> {
    return (await this.request<{ nodes: Node[] }>('GET', '/v1/nodes')).nodes;
  }

  revokeNode(nodeId: string): Promise<Node> {
    return this.request('POST', `/v1/nodes/${encodeURIComponent(nodeId)}/revoke`);
  }

  /** What a node of this organization is configured with: coordinator address, operator keys, owner. */
  nodeConfig(): Promise<NodeSetup> {
    return this.request('GET', '/v1/node-config');
  }

  /** Replaces the enclave measurements a tee node may show; `version` must be above the one in force. */
  putTeeMeasurements(body: Static<typeof TeeMeasurementsBody>): Promise<TeeMeasurements> {
    return this.request('PUT', '/v1/tee/measurements', body);
  }

  getTeeMeasurements(): Promise<TeeMeasurements> {
    return this.request('GET', '/v1/tee/measurements');
  }

  // Vaults and wallets.
  /**
   * The committee a new vault at `tier` would get now, with each member's keys and the roster version;
   * for self and customer_tee, with the enrolled node `customerNodeId` when given.
   */
  proposeCommittee(tier: Tier, customerNodeId?: string): Promise<CommitteeProposal> {
    const pin = customerNodeId && tier !== 'hosted' ? `&customer_node=${encodeURIComponent(customerNodeId)}` : '';
    return this.request('GET', `/v1/committees?tier=${encodeURIComponent(tier)}${pin}`);
  }

  /**
   * The committee the customer binds in its signed request: the proposal's node ids, and for self and
   * customer_tee its customer node (the one given, which must be the proposal's, or else the proposal's).
   * An API that cannot propose one (no coordinator) leaves the request without: the nodes then still
   * check the roster and the tier's shape.
   */
  private async bindCommittee(tier: Tier, given: CommitteeBinding): Promise<CommitteeBinding> {
    if (given.committee) return {};
    let proposal: CommitteeProposal;
    try {
      proposal = await this.proposeCommittee(tier, given.customer_node?.node_id);
    } catch (err) {
      if (err instanceof CustodyApiError && (err.status === 503 || err.status === 404)) return {};
      throw err;
    }
    const customers = proposal.members.filter((m) => m.kind !== 'service');
    const mine = given.customer_node;
    if (mine && !customers.some((m) => m.node_id === mine.node_id && m.signing_key === mine.signing_key.toLowerCase() && m.encryption_key === mine.encryption_key.toLowerCase())) {
      throw new CustodyApiError(409, 'committee_mismatch', `the proposed committee does not seat your node ${mine.node_id}`);
    }
    const customer = mine ?? (customers[0] ? { node_id: customers[0].node_id, signing_key: customers[0].signing_key, encryption_key: customers[0].encryption_key } : undefined);
    return { committee: proposal.members.map((m) => m.node_id), ...(tier !== 'hosted' && customer ? { customer_node: customer } : {}) };
  }

  /**
   * Creates a vault, binding the committee it was shown (bindCommittee) in the signed body. It is sent
   * under an Idempotency-Key (`idempotencyKey`, else a fresh one), so a retry after a lost answer gets the
   * same vault, never a second one.
   */
  async createVault(body: Static<typeof CreateVaultBody>, opts: { idempotencyKey?: string } = {}): Promise<Vault> {
    const bound = { ...body, ...(await this.bindCommittee(body.tier, body)) };
    return this.request('POST', '/v1/vaults', bound, { idempotencyKey: opts.idempotencyKey ?? `vault-${crypto.randomUUID()}` });
  }

  getVault(vaultId: string): Promise<Vault> {
    return this.request('GET', `/v1/vaults/${encodeURIComponent(vaultId)}`);
  }

  /** One page of the organization's vaults, oldest first; `allPages` walks them all. */
  listVaults(params: ListVaultsParameters = {}): Promise<Page<Vault>> {
    return this.request('GET', `/v1/vaults${query(params)}`);
  }

  /**
   * Reshares a vault. A move to self or customer_tee binds the committee shown and the customer's node
   * in the signed body, which is what lets the nodes seat that node.
   */
  async reshareVault(vaultId: string, body: Static<typeof ReshareVaultBody> = {}): Promise<{ id: string; status: 'accepted' }> {
    // The nodes take a move between tiers, or a new committee of a customer's vault, only on a request
    // made at the vault's current rotation that names the target tier and committee (docs/trust.md).
    const rotation = body.rotation ?? (await this.getVault(vaultId)).rotation;
    const bound = body.target_tier ? await this.bindCommittee(body.target_tier, body) : {};
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/reshare`, { ...body, rotation, ...bound });
  }

  /** Generates a failed vault's key afresh (202, back in `creating`); a vault already creating is answered as it is. */
  retryVault(vaultId: string): Promise<Vault> {
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/retry`, undefined, { replaySafe: true });
  }

  /** Deletes a vault that never got a key (failed, or creating between attempts); a vault with a key answers 409. */
  async deleteVault(vaultId: string): Promise<void> {
    await this.request('DELETE', `/v1/vaults/${encodeURIComponent(vaultId)}`);
  }

  createWallet(vaultId: string, body: { chain: string; account_index?: number; address_type?: 'p2wpkh' | 'p2tr' }): Promise<Wallet> {
    // A wallet derived before is answered as it is (200): safe to repeat.
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/wallets`, body, { replaySafe: true });
  }

  /** One page of a vault's wallets, oldest first. */
  listWallets(vaultId: string, params: ListWalletsParameters = {}): Promise<Page<Wallet>> {
    return this.request('GET', `/v1/vaults/${encodeURIComponent(vaultId)}/wallets${query(params)}`);
  }

  /** A wallet's chain and address: what sendEvm and sendBitcoin need to build the intent. */
  getWallet(walletId: string): Promise<Wallet> {
    return this.request('GET', `/v1/wallets/${encodeURIComponent(walletId)}`);
  }

  /** Unspent outputs of a Bitcoin wallet, without those its own transactions spend or hold. */
  async listUtxos(walletId: string): Promise<WalletUtxo[]> {
    return (await this.request<{ utxos: WalletUtxo[] }>('GET', `/v1/wallets/${encodeURIComponent(walletId)}/utxos`)).utxos;
  }

  /**
   * Inputs for a Bitcoin intent, with their amounts: the wallet's UTXOs, confirmed first and largest
   * first, until they cover the outputs plus the fee ceiling.
   */
  async selectInputs(p: Pick<SendBitcoinParameters, 'wallet' | 'outputs' | 'maxFee'>): Promise<BtcOutpoint[]> {
    const want = p.outputs.reduce((a, o) => a + o.amount, 0n) + p.maxFee;
    const utxos = [...(await this.listUtxos(p.wallet.id))]
      .sort((a, b) => Number(b.confirmed) - Number(a.confirmed) || (BigInt(b.amount) > BigInt(a.amount) ? 1 : BigInt(b.amount) < BigInt(a.amount) ? -1 : 0));
    const chosen: BtcOutpoint[] = [];
    let have = 0n;
    for (const u of utxos) {
      if (have >= want) break;
      chosen.push({ txid: hexToBytes(u.txid), vout: u.vout, amount: BigInt(u.amount) });
      have += BigInt(u.amount);
    }
    if (have < want) throw new SdkError('insufficient_funds', `wallet ${p.wallet.id} holds ${have} sat available; ${want} (outputs plus the fee ceiling) are needed`);
    return chosen;
  }

  /** `account_center`: opt in to Account Center passkeys with the object GET /v1/tenant/member-auth/account-center-key answers (docs/end-user-auth.md). */
  setEndUserAuth(body: { jwks: { keys: Record<string, unknown>[] }; audience: string; account_center?: { jwk: Record<string, unknown>; origin: string } }): Promise<{ status: 'registered'; audience: string; key_count: number; account_center: boolean }> {
    return this.request('PUT', '/v1/config/end-user-auth', body);
  }

  /** Polls the vault until `done` holds (default: active). */
  waitForVault(vaultId: string, done: (v: Vault) => boolean = (v) => v.state === 'active', opts: WaitOptions<Vault> = {}): Promise<Vault> {
    return this.poll(`vault ${vaultId}`, () => this.getVault(vaultId), done, opts);
  }

  // Transactions.
  /**
   * POST /v1/transactions. For a vault under a policy (docs/policies.md) the intent needs its link of the
   * vault's intent chain: when the API asks for one (chain_link_required), the link is signed here after
   * the chain's head and the request sent again; a head that moved meanwhile (chain_conflict) is read again.
   */
  async submitTransaction(body: Static<typeof SubmitBody>): Promise<Transaction> {
    try {
      // The intent is single-use: the same intent again is answered with its transaction.
      return await this.request<Transaction>('POST', '/v1/transactions', body, { replaySafe: true });
    } catch (err) {
      if (!(err instanceof CustodyApiError) || err.code !== 'chain_link_required' || body.chain_link !== undefined || body.intent === undefined) throw err;
    }
    const vaultId = (await this.getWallet(body.wallet_id)).vault_id;
    for (let attempt = 1; ; attempt++) {
      const head = (await this.getPolicy(vaultId)).chain;
      const { bytes } = chainIntent({ vaultId, intent: hexToBytes(body.intent), prev: head ? decodeChainLink(hexToBytes(head.link)) : undefined, apiSecretKey: this.o.secretKey });
      try {
        return await this.request<Transaction>('POST', '/v1/transactions', { ...body, chain_link: bytesToHex(bytes) }, { replaySafe: true });
      } catch (err) {
        if (attempt < 5 && err instanceof CustodyApiError && err.code === 'chain_conflict') continue;
        throw err;
      }
    }
  }

  // Key export (docs/export.md): the request is built and signed here with this client's key.
  /** Requests the export of the vault's key to `recipientPublicKey` (X25519); each node starts its delay when it sees it. */
  async requestExport(vaultId: string, o: { recipientPublicKey: Uint8Array; requestId?: string; notBefore?: number }): Promise<VaultExport> {
    const { exportRequestBody } = await import('./key-export.ts');
    const requestId = o.requestId ?? `exp_${bytesToHex(crypto.getRandomValues(new Uint8Array(12)))}`;
    const body = exportRequestBody({ org: this.o.organization, vaultId, recipientKey: o.recipientPublicKey, requestId, notBefore: o.notBefore ?? 0 }, this.o.secretKey);
    // The request id inside the signed request is its idempotency key.
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/exports`, body, { replaySafe: true });
  }

  getExport(vaultId: string, exportId: string): Promise<VaultExport> {
    return this.request('GET', `/v1/vaults/${encodeURIComponent(vaultId)}/exports/${encodeURIComponent(exportId)}`);
  }

  /**
   * An approver of the vault's export governance approves the request it reads here, signed over its own
   * hash of the bytes. The bytes are decoded first: a request that does not name this organization, vault
   * and export id (an API showing another request the customer signed) is refused, `bad_response`, and so
   * is one sealed to another key than `recipientKey` when given. `inspect` sees the decoded request before
   * anything is signed (throw to refuse).
   */
  async approveExportRequest(vaultId: string, exportId: string, approverSecretKey: Uint8Array, opts: { recipientKey?: Uint8Array; inspect?: (r: ExportRequest) => void } = {}): Promise<VaultExport> {
    const exp = await this.getExport(vaultId, exportId);
    const [{ decodeExportRequest }, { approveExport }] = await Promise.all([import('../../core/export/export-request.ts'), import('./key-export.ts')]);
    let r: ExportRequest;
    try {
      r = decodeExportRequest(hexToBytes(exp.request));
    } catch (err) {
      throw new SdkError('bad_response', `the API shows an export request that does not decode: ${(err as Error).message}`, { cause: err });
    }
    if (r.org !== this.o.organization || r.vaultId !== vaultId || r.requestId !== exportId) {
      throw new SdkError('bad_response', `the API shows the export request ${r.org}/${r.vaultId}/${r.requestId}, not ${this.o.organization}/${vaultId}/${exportId}`);
    }
    if (opts.recipientKey && bytesToHex(r.recipientKey) !== bytesToHex(opts.recipientKey)) {
      throw new SdkError('bad_response', `the export request is sealed to ${bytesToHex(r.recipientKey)}, not the expected recipient key`);
    }
    opts.inspect?.(r);
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/exports/${encodeURIComponent(exportId)}/approvals`, approveExport(exp.request, approverSecretKey));
  }

  /** Asks every node for its answer: when it seals, or its sealed share. */
  collectExport(vaultId: string, exportId: string): Promise<VaultExport> {
    return this.request('POST', `/v1/vaults/${encodeURIComponent(vaultId)}/exports/${encodeURIComponent(exportId)}/collect`);
  }

  /** Collects until the export is sealed (enough shares to reconstruct) or the timeout; `progress` sees each answer. */
  waitForExport(vaultId: string, exportId: string, opts: WaitOptions<VaultExport> = {}): Promise<VaultExport> {
    return this.poll(`export ${exportId}`, () => this.collectExport(vaultId, exportId), (e) => e.state === 'sealed', { intervalMs: 1000, ...opts });
  }

  // Vault policies (docs/policies.md).
  /** The vault's policy in force, changes waiting out their delay, its intent chain's head and the legacy policy's migration. */
  getPolicy(vaultId: string): Promise<VaultPolicy> {
    return this.request('GET', `/v1/vaults/${encodeURIComponent(vaultId)}/policy`);
  }

  /** Signs a new version of the vault's policy into its trust log, with the approvals its change quorum asks for (approvePolicyChange). */
  putPolicy(vaultId: string, policy: unknown, approvals: Approval[] = []): Promise<VaultPolicy> {
    return this.request('PUT', `/v1/vaults/${encodeURIComponent(vaultId)}/policy`, policyChangeBody(policy, approvals));
  }

  /** Signs the API's `migration` of the vault's legacy policy (the same rules as version 1) into the trust log. */
  async migratePolicy(vaultId: string): Promise<VaultPolicy> {
    const p = await this.getPolicy(vaultId);
    if (!p.migration) throw new SdkError('usage', p.in_force || p.pending.length ? `vault ${vaultId} has a policy in its trust log already` : `vault ${vaultId} has no legacy policy to migrate`);
    return this.putPolicy(vaultId, p.migration);
  }

  /** Links of the vault's intent chain from `fromSeq`, each with its intent, as the API relays them to the nodes (to audit). */
  async getChain(vaultId: string, opts: { fromSeq?: number; limit?: number } = {}): Promise<{ seq: number; link: string; intent: string; hash: string; until: number; transaction_id: string }[]> {
    const q = query({ from_seq: opts.fromSeq, limit: opts.limit });
    return (await this.request<{ data: { seq: number; link: string; intent: string; hash: string; until: number; transaction_id: string }[] }>('GET', `/v1/vaults/${encodeURIComponent(vaultId)}/chain${q}`)).data;
  }

  /** The vault's transactions awaiting approvals. */
  async pendingApprovals(vaultId: string): Promise<Transaction[]> {
    return (await this.request<{ data: Transaction[] }>('GET', `/v1/vaults/${encodeURIComponent(vaultId)}/approvals`)).data;
  }

  /**
   * Approves (or rejects) a waiting transaction as one of the policy's approvers. The approver signs the
   * hash of the intent bytes it is shown, computed here, never the API's word for it: `inspect` sees the
   * decoded intent first and may refuse by throwing.
   */
  async approveTransaction(txId: string, approver: { id: string; secretKey: Uint8Array }, opts: { reject?: boolean; inspect?: (intent: Intent) => void } = {}): Promise<Transaction> {
    const { message } = await this.approvalMessage(txId, opts);
    const a = signApproval(approver.id, message, approver.secretKey);
    return this.request('POST', `/v1/transactions/${encodeURIComponent(txId)}/${opts.reject ? 'rejections' : 'approvals'}`, a);
  }

  /**
   * For a member approver (docs/policies.md "Members' passkeys"): the WebAuthn challenge (base64url) the
   * member's passkey answers for a waiting transaction, from intent bytes decoded and checked here, and
   * the decoded intent to show the member. Pass the assertion to approveTransactionWithPasskey.
   */
  async passkeyApprovalChallenge(txId: string, opts: { reject?: boolean } = {}): Promise<{ challenge: string; intent: Intent }> {
    const { message, intent } = await this.approvalMessage(txId, opts);
    return { challenge: passkeyApprovalChallenge(message), intent };
  }

  /** Sends a member's passkey approval (or rejection): its member credential and the assertion over passkeyApprovalChallenge. */
  approveTransactionWithPasskey(txId: string, approverId: string, proof: { credential: string; assertion: { credentialId: Uint8Array; authenticatorData: Uint8Array; clientDataJson: Uint8Array; signature: Uint8Array } }, opts: { reject?: boolean } = {}): Promise<Transaction> {
    const a = proof.assertion;
    return this.request('POST', `/v1/transactions/${encodeURIComponent(txId)}/${opts.reject ? 'rejections' : 'approvals'}`, {
      approver_id: approverId, signature: '',
      passkey: { credential: proof.credential, credential_id: bytesToHex(a.credentialId), authenticator_data: bytesToHex(a.authenticatorData), client_data_json: bytesToHex(a.clientDataJson), signature: bytesToHex(a.signature) },
    });
  }

  /** The approval (or rejection) message of a waiting transaction, over the hash of intent bytes decoded here. */
  private async approvalMessage(txId: string, opts: { reject?: boolean; inspect?: (intent: Intent) => void }): Promise<{ message: Uint8Array; intent: Intent }> {
    const tx = await this.getTransaction(txId);
    if (!tx.policy?.intent) throw new SdkError('usage', `transaction ${txId} is not awaiting approvals under a vault policy`);
    const bytes = hexToBytes(tx.policy.intent);
    const hash = bytesToHex(sha256(bytes));
    if (hash !== tx.intent_sha256) throw new SdkError('bad_response', `the API shows intent bytes whose hash is not the transaction's intent_sha256`);
    const intent = decodeIntent(bytes);
    opts.inspect?.(intent);
    return { message: (opts.reject ? intentRejectionMessage : intentApprovalMessage)(tx.vault_id, tx.policy.version, hash), intent };
  }

  getTransaction(txId: string): Promise<Transaction> {
    return this.request('GET', `/v1/transactions/${encodeURIComponent(txId)}`);
  }

  /** One page of the organization's transactions, oldest first, filtered by vault, wallet and state. */
  listTransactions(filters: ListTransactionsParameters = {}): Promise<Page<Transaction>> {
    return this.request('GET', `/v1/transactions${query(filters)}`);
  }

  /** Polls until the transaction reaches one of `states` or ends (failed, rejected, final). */
  waitForTransaction(txId: string, states: TransactionState[] = ['final'], opts: WaitOptions<Transaction> = {}): Promise<Transaction> {
    return this.poll(`transaction ${txId}`, () => this.getTransaction(txId), (t) => states.includes(t.state) || ['final', 'failed', 'rejected'].includes(t.state), opts);
  }

  /**
   * Reserves the nonce an EVM intent names for `idempotencyKey` (POST /v1/transactions/prepare); the same
   * key answers the same nonce and not_after again.
   */
  prepareNonce(walletId: string, idempotencyKey: string, notAfter?: bigint): Promise<PreparedNonce> {
    return this.request('POST', '/v1/transactions/prepare', { wallet_id: walletId, idempotency_key: idempotencyKey, ...(notAfter === undefined ? {} : { not_after: Number(notAfter) }) }, { replaySafe: true });
  }

  /**
   * The canonical intent of an EVM transfer from a wallet of this organization (docs/intents.md, version
   * 3); without `nonce`, reserves one first (prepareNonce), and its not_after too when none is given.
   */
  async evmIntent(p: SendEvmParameters): Promise<Uint8Array> {
    let { nonce, notAfter } = p;
    if (nonce === undefined) {
      if (!evmNetwork(p.wallet.chain)) throw new SdkError('bad_intent', `${p.wallet.chain} is not an EVM chain`);
      const prepared = await this.prepareNonce(p.wallet.id, p.idempotencyKey, notAfter);
      nonce = BigInt(prepared.nonce);
      notAfter = BigInt(prepared.not_after);
    }
    return building(() => this.buildEvmIntent({ ...p, nonce, ...(notAfter === undefined ? {} : { notAfter }) }));
  }

  private buildEvmIntent(p: SendEvmParameters & { nonce: bigint }): Uint8Array {
    const net = evmNetwork(p.wallet.chain);
    if (!net) throw new SdkError('bad_intent', `${p.wallet.chain} is not an EVM chain`);
    const intent = evmIntentFromFields({
      organization: this.o.organization, walletId: p.wallet.id, chainId: net.chainId, nonce: p.nonce, from: p.wallet.address, to: p.to, amount: String(p.amount),
      asset: p.asset, maxFee: p.maxFee === undefined ? undefined : String(p.maxFee), idempotencyKey: p.idempotencyKey, notAfter: this.notAfter(p.idempotencyKey, p.notAfter),
    });
    if (p.data) intent.data = hexToBytes(p.data.replace(/^0x/, ''));
    return encodeIntent(intent);
  }

  /**
   * The canonical intent of a Bitcoin transfer; the idempotency key travels inside it. Inputs given with
   * amounts make a version 2 intent, which a P2WPKH wallet needs (sendBitcoin selects them).
   */
  bitcoinIntent(p: SendBitcoinParameters): Uint8Array {
    return building(() => this.buildBitcoinIntent(p));
  }

  private buildBitcoinIntent(p: SendBitcoinParameters): Uint8Array {
    const net = BITCOIN_NETWORKS.find((n) => n.chain === p.wallet.chain);
    if (!net) throw new SdkError('bad_intent', `${p.wallet.chain} is not a Bitcoin chain`);
    return encodeIntent({
      kind: 'btc.transfer', organization: this.o.organization, walletId: p.wallet.id, network: net.network, from: p.wallet.address,
      outputs: p.outputs as BtcOutput[], maxFeeRate: p.maxFeeRate, maxFee: p.maxFee, inputs: p.inputs ?? [], idempotencyKey: p.idempotencyKey, notAfter: this.notAfter(p.idempotencyKey, p.notAfter),
    });
  }

  /** The canonical intent of a Safe owner signature by an EVM wallet of this organization (intent kind 3). */
  safeTxIntent(p: SignSafeTxParameters): Uint8Array {
    return building(() => {
      const net = evmNetwork(p.wallet.chain);
      if (!net) throw new SdkError('bad_intent', `${p.wallet.chain} is not an EVM chain`);
      const address = (a: string, what: string) => {
        if (!/^0x[0-9a-fA-F]{40}$/.test(a)) throw new SdkError('bad_intent', `${what} is not a 0x address`);
        return hexToBytes(a.slice(2).toLowerCase());
      };
      const data = p.data ?? '0x';
      if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) throw new SdkError('bad_intent', 'data is not 0x hex');
      return encodeIntent({
        kind: 'evm.safe_tx', organization: this.o.organization, walletId: p.wallet.id, chainId: net.chainId, owner: address(p.wallet.address, 'the wallet address'),
        safe: address(p.safe, 'safe'), to: address(p.to, 'to'), value: BigInt(p.value ?? 0), data: hexToBytes(data.slice(2)), operation: p.operation ?? 0,
        safeTxGas: BigInt(p.safeTxGas ?? 0), baseGas: BigInt(p.baseGas ?? 0), gasPrice: BigInt(p.gasPrice ?? 0), gasToken: address(p.gasToken ?? ZERO_ADDRESS, 'gasToken'),
        refundReceiver: address(p.refundReceiver ?? ZERO_ADDRESS, 'refundReceiver'), safeNonce: BigInt(p.safeNonce), idempotencyKey: p.idempotencyKey, notAfter: this.notAfter(p.idempotencyKey, p.notAfter),
      });
    });
  }

  /** The intent bytes and the POST /v1/transactions body of a Safe owner signature, built and signed, not sent. */
  prepareSafeTx(p: SignSafeTxParameters): PreparedTransaction {
    return this.prepared(p.wallet.id, this.safeTxIntent(p), p.idempotencyKey, p);
  }

  /**
   * Builds, signs and submits a Safe owner signature (POST /v1/transactions); the transaction's last state
   * is `signed`, with the signature: safeTxSignature waits for it.
   */
  signSafeTx(p: SignSafeTxParameters): Promise<Transaction> {
    return this.submitTransaction(this.prepareSafeTx(p).body);
  }

  /**
   * Waits until a Safe owner signature is signed and returns it; fails (SdkError with the transaction's
   * reason) when the signing was rejected or failed.
   */
  async safeTxSignature(txId: string, opts: WaitOptions = {}): Promise<SafeTxSignature> {
    const tx = await this.waitForTransaction(txId, ['signed'], opts);
    if (tx.kind !== 'safe_tx' || !tx.safe_tx) throw new SdkError('not_signed', `transaction ${txId} is not a Safe owner signature`);
    if (tx.state !== 'signed' || !tx.signature) throw new SdkError('not_signed', `transaction ${txId} is ${tx.state}: ${tx.reason ?? 'no signature'}`);
    return { transaction: tx, signature: tx.signature, safeTxHash: tx.safe_tx.safe_tx_hash };
  }

  /**
   * The canonical intent of a mint by a minter wallet under its own mint policy (policy-mint): kind 1 from
   * the wallet to the token, value 0, data `mint(...)` of the token's kind, exactly what the API recomputes.
   * Without `nonce`, reserves one first (prepareNonce).
   */
  async policyMintIntent(p: PolicyMintParameters): Promise<Uint8Array> {
    const { mintCalldata } = await import('../../core/chains/evm/token-call-data.ts');
    return this.evmIntent({ ...this.callBase(p), data: building(() => mintCalldata(p.kind, { to: this.hexAddress(p.to, 'to'), ...opt('amount', p.amount), ...opt('tokenId', p.tokenId), ...(p.data === undefined ? {} : { data: p.data as `0x${string}` }) })) });
  }

  /** The intent and the POST policy-mint body (fields, intent, its signature), built and signed, not sent. */
  async preparePolicyMint(p: PolicyMintParameters): Promise<PreparedTokenCall> {
    const intent = await this.policyMintIntent(p);
    return this.preparedCall(p, intent, { to: p.to, ...str('amount', p.amount), ...str('token_id', p.tokenId), ...(p.data === undefined ? {} : { data: p.data }) });
  }

  /**
   * The canonical intent of an NFT transfer by the wallet that holds it (nft-transfers): kind 1 from the
   * wallet to the token, value 0, data `safeTransferFrom(wallet, to, id[, amount, ""])`, the intent
   * nft-transfers/build answers. Without `nonce`, reserves one first (prepareNonce).
   */
  async nftTransferIntent(p: NftTransferParameters): Promise<Uint8Array> {
    const { nftTransferCalldata } = await import('../../core/chains/evm/token-call-data.ts');
    return this.evmIntent({
      ...this.callBase(p),
      data: building(() => nftTransferCalldata(p.kind, { from: this.hexAddress(p.wallet.address, 'the wallet address'), to: this.hexAddress(p.to, 'to'), tokenId: BigInt(p.tokenId), ...opt('amount', p.amount) })),
    });
  }

  /** The intent and the POST nft-transfers body, built and signed, not sent. */
  async prepareNftTransfer(p: NftTransferParameters): Promise<PreparedTokenCall> {
    const intent = await this.nftTransferIntent(p);
    return this.preparedCall(p, intent, { to: p.to, token_id: String(p.tokenId), ...str('amount', p.amount) });
  }

  private callBase(p: TokenCallParameters): SendEvmParameters {
    return {
      wallet: p.wallet, to: p.token, amount: 0n, idempotencyKey: p.idempotencyKey, ...(p.maxFee === undefined ? {} : { maxFee: p.maxFee }),
      ...(p.notAfter === undefined ? {} : { notAfter: p.notAfter }), ...(p.nonce === undefined ? {} : { nonce: p.nonce }),
    };
  }

  private hexAddress(a: string, what: string): `0x${string}` {
    if (!/^0x[0-9a-fA-F]{40}$/.test(a)) throw new SdkError('bad_intent', `${what} is not a 0x address`);
    return a.toLowerCase() as `0x${string}`;
  }

  private preparedCall(p: TokenCallParameters, intent: Uint8Array, fields: { to: string; amount?: string; token_id?: string; data?: string }): PreparedTokenCall {
    return {
      intent,
      body: { wallet_id: p.wallet.id, ...fields, intent: bytesToHex(intent), intent_signature: this.signIntent(intent), ...(p.endUserToken ? { end_user_token: p.endUserToken } : {}) },
    };
  }

  private notAfter(idempotencyKey: string, given: bigint | undefined): bigint {
    if (given !== undefined) return given;
    const known = this.notAfters.get(idempotencyKey);
    if (known !== undefined && known > BigInt(Math.floor(Date.now() / 1000))) return known;
    if (this.notAfters.size >= 10_000) this.notAfters.delete(this.notAfters.keys().next().value!);
    const chosen = defaultNotAfter();
    this.notAfters.set(idempotencyKey, chosen);
    return chosen;
  }

  /** Signs canonical intent bytes with this client's API key. */
  signIntent(intent: Uint8Array): string {
    return bytesToHex(signIntent(intent, this.o.secretKey));
  }

  /**
   * The intent bytes and the POST /v1/transactions body of an EVM transfer, built and signed, not sent;
   * without `nonce`, reserves one first (prepareNonce).
   */
  async prepareEvm(p: SendEvmParameters): Promise<PreparedTransaction> {
    return this.prepared(p.wallet.id, await this.evmIntent(p), p.idempotencyKey, p);
  }

  /** The same for a Bitcoin transfer; without `inputs`, selects them from the wallet's UTXOs first (a read). */
  async prepareBitcoin(p: SendBitcoinParameters): Promise<PreparedTransaction> {
    const inputs = p.inputs ?? (await this.selectInputs(p));
    return this.prepared(p.wallet.id, this.bitcoinIntent({ ...p, inputs }), p.idempotencyKey, p);
  }

  /** Reserves a nonce, builds, signs and submits an EVM transfer (native or ERC-20): one call. */
  async sendEvm(p: SendEvmParameters): Promise<Transaction> {
    return this.submitTransaction((await this.prepareEvm(p)).body);
  }

  /** Builds, signs and submits a Bitcoin transfer; without `inputs`, selects them first. */
  async sendBitcoin(p: SendBitcoinParameters): Promise<Transaction> {
    return this.submitTransaction((await this.prepareBitcoin(p)).body);
  }

  private prepared(walletId: string, intent: Uint8Array, idempotencyKey: string, auth: { endUserToken?: string | undefined; memberSigningSession?: string | undefined }): PreparedTransaction {
    return {
      intent,
      body: {
        wallet_id: walletId, intent: bytesToHex(intent), idempotency_key: idempotencyKey, intent_signature: this.signIntent(intent),
        ...(auth.endUserToken ? { end_user_token: auth.endUserToken } : {}),
        ...(auth.memberSigningSession ? { member_signing_session: auth.memberSigningSession } : {}),
      },
    };
  }

  private async poll<T>(what: string, get: () => Promise<T>, done: (x: T) => boolean, opts: WaitOptions<T>): Promise<T> {
    const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
    let last: T | undefined;
    for (;;) {
      try {
        last = await get();
      } catch (err) {
        // Past a request budget (429 rate_limited with Retry-After, docs/operations.md "Rate limits") a
        // wait waits the budget out, as long as its deadline allows, instead of failing.
        const wait = err instanceof CustodyApiError && err.status === 429 ? err.retryAfterMs ?? opts.intervalMs ?? 250 : undefined;
        if (wait === undefined || Date.now() + wait > deadline) throw err;
        await sleep(wait);
        continue;
      }
      opts.progress?.(last);
      if (done(last)) return last;
      if (Date.now() > deadline) throw new WaitTimeoutError(what, last);
      await sleep(opts.intervalMs ?? 250);
    }
  }
}
