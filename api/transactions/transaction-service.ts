// POST /transactions and GET /transactions/{txId} (docs/transactions.md): everything that can be
// checked at once is checked before anything is stored (intent form and binding to the wallet, the
// intent signature, the end-user token, policy and spend limits), so a refused request changes nothing.
// An accepted one is stored with its job and its outbox event in one batch, under a per-organization lock so
// two concurrent submissions cannot both pass a spend limit that only one fits under, nor both
// take one idempotency key. A decommissioned wallet takes no transaction (docs/platform/wallets.md); the
// same lock orders a decommissioning against submissions.
import { traceparentOf } from '../../common/tracing/spans.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { toHex as viemHex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { IntentFormatError } from '../../core/intents/canonical.ts';
import { decodeIntent, encodeIntent, intentExpiryProblem, MAX_INTENT_LIFETIME_SECONDS, verifyIntentSignature, type Intent } from '../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../core/intents/evm-fields.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import * as bitcoin from 'bitcoinjs-lib';
import { BITCOIN_NETWORK_PARAMS } from '../../core/chains/bitcoin/network-params.ts';
import { checkCallTarget, checkPolicy, normalizeRecipient, type Policy, type Transfer } from '../policy/policy.ts';
import { safeOperationProblem } from '../../core/chains/evm/safe-tx.ts';
import { EndUserTokenError, intentSha256, verifyEndUserToken } from '../../core/auth/end-user-token.ts';
import type { MemberActionBinding, PasskeyAssertion } from '../../core/session/member-action-binding.ts';
import type { VaultService } from '../vaults/vault-service.ts';
import type { ApiKeyRecord, VaultRecord, WalletRecord } from '../vaults/records.ts';
import { newId, orgJobGroup } from '../vaults/vault-service.ts';
import { memberActionJob, safeTxView, type TransactionJob, type TransactionRecord, type TransactionState } from './records.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { IndexList } from '../store/pagination.ts';
import type { Utxo } from '../chains/bitcoin/esplora-client.ts';
import { WalletLedger } from '../wallets/wallet-ledger.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { END_USER_AUTH, VAULTS, WALLETS } from '../vaults/collections.ts';
import { TRANSACTIONS, TX_JOBS } from './collections.ts';
import { EvmNonces, holdsAt } from './evm-nonces.ts';
import { VaultPolicies } from '../vaults/vault-policies.ts';
import { checkApprovals, type QuorumStatus } from '../../core/policy/policy-evaluator.ts';
import { intentApprovalMessage, intentRejectionMessage, type Approval } from '../../core/policy/policy-approval.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';

/** POST /v1/transactions/prepare. */
export interface PrepareTransaction {
  wallet_id: string;
  idempotency_key: string;
  /** The intent's not_after, Unix seconds; default an hour ahead. */
  not_after?: number | undefined;
}

/** Its answer: what an EVM intent of the wallet names, with the nonce reserved for the key. */
export interface PreparedNonce {
  wallet_id: string;
  chain: string;
  chain_id: number;
  address: string;
  nonce: number;
  not_after: number;
}

/** A prepare's not_after when none is given: the SDK's default intent lifetime. */
export const DEFAULT_PREPARED_LIFETIME_SECONDS = 3600n;

export interface SubmitTransaction {
  wallet_id: string;
  intent?: string | undefined;
  to?: string | undefined;
  amount?: string | undefined;
  asset?: string | undefined;
  max_fee?: string | undefined;
  /** EVM convenience: the intent's not_after, Unix seconds. */
  not_after?: number | undefined;
  /** EVM convenience: the intent's nonce (POST /v1/transactions/prepare reserves one). */
  nonce?: number | undefined;
  idempotency_key: string;
  intent_signature: string;
  end_user_token?: string | undefined;
  /** Hosted vaults with end-user auth: a completed member action's signing session (docs/platform/member-actions.md). */
  member_signing_session?: string | undefined;
  /** A vault under a policy: the intent's chain link, hex (docs/policies.md). */
  chain_link?: string | undefined;
  /** A vault under a policy: approvals collected already. */
  approvals?: Approval[] | undefined;
}

/** A member signing session checked for one wallet and intent: the proof and binding the nodes need. */
export interface MemberSigningClaim {
  /** The member's ID token, or for a passkey proof the member credential; a secret, as an end-user token is. */
  token: string;
  actionId: string;
  salt: Uint8Array;
  /** A passkey proof's WebAuthn assertion (core/auth/member-credential.ts). */
  passkey?: PasskeyAssertion | undefined;
  /** A batch action: the SHA-256 of every intent it approved, in order (the nonce commits to the list). */
  batch?: Uint8Array[] | undefined;
  /** Under the organization's transaction lock: rechecks the session is unused and returns the ops that use it for `txId`. */
  consume(txId: string): Promise<Op[]>;
}

const bindingOfClaim = (m: MemberSigningClaim): MemberActionBinding => ({ actionId: m.actionId, salt: m.salt, ...(m.passkey ? { passkey: m.passkey } : {}), ...(m.batch ? { batch: m.batch } : {}) });

/** The platform API's member actions, as POST /v1/transactions uses them (api/member-auth/member-actions.ts). */
export interface MemberSigning {
  claim(org: string, walletId: string, intentSha256: string, sessionId: string): Promise<MemberSigningClaim>;
}

export interface TransactionServiceOptions {
  vaults: VaultService;
  /** Chains with a configured backend; others are refused with 409. */
  hasBackend(chain: string): boolean;
  /** Unspent outputs of a Bitcoin address on a chain with a backend (GET /v1/wallets/{id}/utxos). */
  utxos?(chain: string, address: string): Promise<Utxo[]>;
  /** Outputs the wallet's own transactions spend or hold, not to be offered again. */
  busyOutputs?(wallet: WalletRecord): Promise<Set<string>>;
  now?: () => Date;
}

/**
 * The version of the transactions' index entries (txIndex); raised when an entry is added, so records
 * written before it get it when the store opens (prepareIndexes). 1: `org/` and the three `*-state/`.
 */
export const TX_INDEX_VERSION = 1;

/**
 * The entries that name a transaction's state, for GET /v1/transactions?state= alone or with a vault or a
 * wallet. A state change removes the old ones (txOp with the record it replaces).
 */
function stateIndex(tx: TransactionRecord): string[] {
  const at = `${tx.state}/${tx.created_at}/${tx.id}`;
  return [`org-state/${tx.org}/${at}`, `vault-state/${tx.vault_id}/${at}`, `wallet-state/${tx.wallet_id}/${at}`];
}

/**
 * A transaction's index entries: its idempotency key in its organization, and its organization's, vault's
 * and wallet's transactions oldest first, with and without its state (positions `<created_at>/<id>`), so
 * every filter of GET /v1/transactions walks exactly its own entries, never another organization's.
 */
export function txIndex(tx: TransactionRecord): string[] {
  return [
    `idem/${tx.org}/${tx.idempotency_key}`, `org/${tx.org}/${tx.created_at}/${tx.id}`,
    `vault/${tx.vault_id}/${tx.created_at}/${tx.id}`, `wallet/${tx.wallet_id}/${tx.created_at}/${tx.id}`, ...stateIndex(tx),
  ];
}

/** GET /v1/transactions filters. */
export interface TransactionFilters {
  vault_id?: string | undefined;
  wallet_id?: string | undefined;
  state?: TransactionState | undefined;
}

/** States a transaction can still leave: it may yet move money, or hold a nonce or outputs of its wallet. */
export const IN_FLIGHT_STATES: readonly TransactionState[] = ['created', 'checks', 'signed', 'broadcast', 'confirmed'];

const decommissioned = (w: WalletRecord) => new CustodyError('wallet_decommissioned', `wallet ${w.id} is decommissioned; it sends nothing`);

const bad = (message: string) => new CustodyError('invalid_request', message);
const forbidden = (message: string) => new CustodyError('forbidden', message);

/** Vault states in which transactions are accepted: a reshare in flight or needing attention still signs with the old epoch. */
/** The queue kind of transaction progress (api/transactions/transaction-worker.ts). */
export const TRANSACTION_PROGRESS = 'transaction_progress';

/**
 * A transaction's first job, from creation to broadcast: a Bitcoin one under its wallet's ordering key,
 * so the wallet's spends are broadcast in the order they came (a spend of a change output after its parent).
 */
export function signJob(tx: Pick<TransactionRecord, 'id' | 'wallet_id' | 'org' | 'family'>): Op {
  // An EVM transaction's nonce is in its intent: it waits for the nonces below it (transaction-worker.ts)
  // without holding up the wallet's others, which may be the ones it waits for.
  const ordering = tx.family === 'evm' ? {} : { orderingKey: `wallet:${tx.wallet_id}` };
  return { type: 'enqueue', kind: TRANSACTION_PROGRESS, key: tx.id, payload: { phase: 'sign' }, opts: { dedupeKey: `${tx.id}:sign`, ...ordering, groupKey: orgJobGroup(tx.org) } };
}

/** Its second, from broadcast to final: no ordering key, since waiting on confirmations holds no wallet back. */
export function followJob(tx: Pick<TransactionRecord, 'id'>, runAt?: number): Op {
  return { type: 'enqueue', kind: TRANSACTION_PROGRESS, key: tx.id, payload: { phase: 'follow' }, opts: { dedupeKey: `${tx.id}:follow`, ...(runAt === undefined ? {} : { runAt }) } };
}

const SIGNING_STATES: readonly VaultRecord['state'][] = ['active', 'resharing', 'reshare_pending'];

/** Canonical JSON (sorted keys) of the fields that describe the transaction; the token only authorizes it. */
/** A waiting transaction's end at its intent's not_after, unless approved before (transaction-worker.ts). */
export function expiryJob(tx: Pick<TransactionRecord, 'id' | 'org'>, notAfter: number): Op {
  return { type: 'enqueue', kind: TRANSACTION_PROGRESS, key: tx.id, payload: { phase: 'expire' }, opts: { dedupeKey: `${tx.id}:expire`, runAt: (notAfter + 1) * 1000, groupKey: orgJobGroup(tx.org) } };
}

export const quorumView = (q: QuorumStatus[]) => q.map((x) => ({ k: x.k, approvers: x.approvers, approved_by: x.approvedBy }));

/** `transaction.approval_required`: ids, the policy version and what each quorum still misses. */
export function approvalEventData(tx: TransactionRecord): Record<string, unknown> {
  const p = tx.policy!;
  return {
    transaction_id: tx.id, vault_id: tx.vault_id, state: tx.state, intent_sha256: tx.intent_sha256, policy_version: p.version,
    approvals_missing: p.quorums.reduce((n, q) => n + Math.max(0, q.k - q.approved_by.length), 0),
  };
}

function requestHash(body: SubmitTransaction): string {
  // Approvals only authorize, like a token: a retry may carry more of them.
  const { end_user_token: _t, member_signing_session: _m, approvals: _a, ...rest } = body;
  const sorted = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : 1)));
  return bytesToHex(sha256(new TextEncoder().encode(JSON.stringify(sorted))));
}

export class TransactionService {
  private readonly now: () => Date;
  private wake: (() => void) | undefined;
  /** The wallets' ledger, which the worker writes with each state change (one per process: it numbers the entries). */
  readonly ledger: WalletLedger;
  private memberSigning: MemberSigning | undefined;
  private pendingNonce: ((chain: string, address: string) => Promise<number>) | undefined;
  /** The wallets' EVM nonce reservations and holds (evm-nonces.ts). */
  readonly nonces: EvmNonces;

  /** Vault policies in the trust log: admission of intents, approvals (vault-policies.ts). */
  readonly policies: VaultPolicies;

  constructor(private readonly o: TransactionServiceOptions) {
    this.now = o.now ?? (() => new Date());
    this.policies = new VaultPolicies(o.vaults, this.now);
    this.ledger = new WalletLedger(o.vaults.store, this.now);
    this.nonces = new EvmNonces(o.vaults.store, () => Math.floor(this.now().getTime() / 1000));
  }

  /**
   * POST /v1/transactions/prepare: what the customer needs before signing an EVM intent, its nonce,
   * reserved for the idempotency key until the intent's not_after (evm-nonces.ts). The same key again
   * answers the same nonce and not_after, so a retry, in any process, signs the same bytes.
   */
  async prepare(org: string, body: PrepareTransaction): Promise<PreparedNonce> {
    const store = this.o.vaults.store;
    const wallet = await WALLETS.in(store).get(body.wallet_id);
    if (!wallet || wallet.org !== org) throw new CustodyError('not_found', 'no such wallet');
    if (walletState(wallet) === 'decommissioned') throw decommissioned(wallet);
    const net = evmNetwork(wallet.chain);
    if (!net) throw bad('a Bitcoin intent names the outputs it spends, not a nonce: GET /v1/wallets/{id}/utxos lists them');
    if (!this.o.hasBackend(wallet.chain)) throw new CustodyError('conflict', `chain ${wallet.chain} has no backend configured on this service`);
    const nowS = Math.floor(this.now().getTime() / 1000);
    const answer = (nonce: number, notAfter: number) => ({ wallet_id: wallet.id, chain: wallet.chain, chain_id: Number(net.chainId), address: wallet.address, nonce, not_after: notAfter });
    // A transaction that the key already names answers with its own nonce.
    const prior = await this.byIdempotencyKey(org, body.idempotency_key);
    if (prior) {
      const intent = decodeIntent(hexToBytes(prior.intent));
      if (prior.wallet_id !== wallet.id || intent.kind !== 'evm.transfer' || intent.nonce === undefined) throw new CustodyError('conflict', 'this idempotency_key was used for another transaction');
      return answer(Number(intent.nonce), Number(intent.notAfter));
    }
    const notAfter = body.not_after ?? nowS + Number(DEFAULT_PREPARED_LIFETIME_SECONDS);
    const expiry = intentExpiryProblem(BigInt(notAfter), BigInt(nowS));
    if (expiry === 'intent_expiry_too_far') throw bad(`not_after is more than ${MAX_INTENT_LIFETIME_SECONDS / 3600n} hours ahead`);
    if (expiry) throw bad('not_after has passed');
    return this.nonces.locked(wallet.chain, wallet.address, async () => {
      const held = await this.nonces.byIdempotencyKey(org, body.idempotency_key);
      if (held) {
        if (held.wallet_id !== wallet.id) throw new CustodyError('conflict', 'this idempotency_key reserved a nonce of another wallet');
        if (holdsAt(held, nowS)) return answer(held.nonce, held.not_after);
      }
      const pending = this.pendingNonce
        ? await this.pendingNonce(wallet.chain, wallet.address).catch((err: unknown) => {
          throw new CustodyError('conflict', `the ${wallet.chain} backend did not answer: ${(err as Error).message}`.slice(0, 300));
        })
        : 0;
      const hold = await this.nonces.reserve({ chain: wallet.chain, address: wallet.address, org, wallet_id: wallet.id, idempotency_key: body.idempotency_key, not_after: notAfter }, pending);
      return answer(hold.nonce, hold.not_after);
    });
  }

  /** Runs `fn` while no transaction of `org` is being accepted: what a wallet's decommissioning waits for. */
  exclusive<T>(org: string, fn: () => Promise<T>): Promise<T> {
    return this.o.vaults.store.exclusive(`tx-org:${org}`, fn);
  }

  /** Whether a transaction of the wallet is not final, failed or rejected yet. */
  async inFlight(walletId: string): Promise<boolean> {
    for (const state of IN_FLIGHT_STATES) {
      // A Safe owner signature that is signed is done (its last state): it holds nothing of the wallet.
      const found = await TRANSACTIONS.in(this.o.vaults.store).byIndex(`wallet-state/${walletId}/${state}/`, state === 'signed' ? 10_000 : 1);
      if (found.some((t) => t.state === state && !(t.kind === 'safe_tx' && state === 'signed'))) return true;
    }
    return false;
  }

  /**
   * Set by the transaction worker, which has the chain backends: the chain's next nonce of an EVM address,
   * mempool included, that prepare counts from (from 0 without one).
   */
  useNonceSource(pendingNonce: (chain: string, address: string) => Promise<number>): void {
    this.pendingNonce = pendingNonce;
  }

  /** Set by the platform API when it serves member actions: POST /v1/transactions then takes member_signing_session. */
  useMemberSigning(m: MemberSigning): void {
    this.memberSigning = m;
  }

  /**
   * The checks POST /v1/transactions runs on an intent before its signature (form, binding to the wallet
   * of `org`, expiry, a chain backend), for a member action that freezes it: the same parser and rules.
   */
  async checkIntentFor(org: string, walletId: string, bytes: Uint8Array): Promise<{ wallet: WalletRecord; vault: VaultRecord; intent: Intent }> {
    const wallet = await WALLETS.in(this.o.vaults.store).get(walletId);
    if (!wallet || wallet.org !== org) throw new CustodyError('not_found', 'no such wallet');
    if (walletState(wallet) === 'decommissioned') throw decommissioned(wallet);
    const vault = await this.o.vaults.vault(org, wallet.vault_id);
    let intent: Intent;
    try {
      intent = decodeIntent(bytes);
    } catch (err) {
      throw bad(`intent: ${err instanceof IntentFormatError ? err.message : 'malformed'}`);
    }
    this.checkBinding(org, wallet, intent, intent.idempotencyKey);
    const expiry = intentExpiryProblem(intent.notAfter, BigInt(Math.floor(this.now().getTime() / 1000)));
    if (expiry === 'intent_expiry_required') throw bad('the intent needs a not_after (Unix seconds); nodes sign only intents that expire');
    if (expiry === 'intent_expiry_too_far') throw bad(`the intent's not_after is more than ${MAX_INTENT_LIFETIME_SECONDS / 3600n} hours ahead`);
    if (expiry === 'intent_expired') throw bad('the intent has expired (not_after)');
    if (intent.kind !== 'evm.safe_tx' && !this.o.hasBackend(wallet.chain)) throw new CustodyError('conflict', `chain ${wallet.chain} has no backend configured on this service`);
    return { wallet, vault, intent };
  }

  onJob(wake: () => void): void {
    this.wake = wake;
  }

  get store(): RecordRepository {
    return this.o.vaults.store;
  }

  async get(org: string, id: string): Promise<TransactionRecord> {
    const t = await TRANSACTIONS.in(this.o.vaults.store).get(id);
    if (!t || t.org !== org) throw new CustodyError('not_found', 'no such transaction');
    return t;
  }

  /** Returns the transaction and whether this call created it (false: an idempotent retry). */
  async submit(org: string, callerKeyId: string, given: SubmitTransaction): Promise<{ tx: TransactionRecord; created: boolean }> {
    // Hex is hex in either case (docs/errors.md): one spelling, so a retry in the other case is the same request.
    const body: SubmitTransaction = {
      ...given, ...(given.intent !== undefined ? { intent: given.intent.toLowerCase() } : {}), intent_signature: given.intent_signature.toLowerCase(),
      ...(given.chain_link !== undefined ? { chain_link: given.chain_link.toLowerCase() } : {}), ...(given.to !== undefined ? { to: given.to.toLowerCase() } : {}),
      ...(given.asset !== undefined ? { asset: given.asset.toLowerCase() } : {}),
    };
    if (body.end_user_token !== undefined && body.member_signing_session !== undefined) throw bad('give either end_user_token or member_signing_session, not both');
    const hash = requestHash(body);
    const prior = await this.byIdempotencyKey(org, body.idempotency_key);
    if (prior) return this.replay(prior, hash);
    try {
      return await this.accept(org, callerKeyId, body, hash);
    } catch (err) {
      // A refused submission stores nothing and lets go of its key's nonce reservation, so the wallet's
      // later transactions do not wait on a nonce no transaction will use; a retry prepares again.
      await this.nonces.release(org, body.wallet_id, body.idempotency_key).catch(() => undefined);
      throw err;
    }
  }

  private async accept(org: string, callerKeyId: string, body: SubmitTransaction, hash: string): Promise<{ tx: TransactionRecord; created: boolean }> {
    const store = this.o.vaults.store;

    const wallet = await WALLETS.in(store).get(body.wallet_id);
    if (!wallet || wallet.org !== org) throw new CustodyError('not_found', 'no such wallet');
    if (walletState(wallet) === 'decommissioned') throw decommissioned(wallet);
    const vault = await this.o.vaults.vault(org, wallet.vault_id);
    const { intent, bytes } = this.intentOf(org, wallet, body);
    this.checkBinding(org, wallet, intent, body.idempotency_key);
    const nowMs = this.now().getTime();
    // The nodes sign only intents that expire within a day (docs/intents.md): refuse the others now.
    const expiry = intentExpiryProblem(intent.notAfter, BigInt(Math.floor(nowMs / 1000)));
    if (expiry === 'intent_expiry_required') throw bad('the intent needs a not_after (Unix seconds); nodes sign only intents that expire');
    if (expiry === 'intent_expiry_too_far') throw bad(`the intent's not_after is more than ${MAX_INTENT_LIFETIME_SECONDS / 3600n} hours ahead`);
    // A Safe transaction's signature is returned, not broadcast: it needs no chain backend here.
    if (intent.kind !== 'evm.safe_tx' && !this.o.hasBackend(wallet.chain)) throw new CustodyError('conflict', `chain ${wallet.chain} has no backend configured on this service`);
    const apiKeyId = await this.verifySignature(org, callerKeyId, bytes, body.intent_signature);
    if (expiry === 'intent_expired') throw forbidden('the intent has expired (not_after)');
    let member: MemberSigningClaim | undefined;
    if (vault.tier === 'hosted' && vault.end_user_auth) {
      if (body.member_signing_session !== undefined) {
        if (!this.memberSigning) throw bad('member_signing_session needs the platform API\'s member actions, which this service does not run');
        member = await this.memberSigning.claim(org, wallet.id, intentSha256(bytes), body.member_signing_session);
        // The nodes' own check, run here first: a proof they would refuse is refused before anything is stored.
        await this.checkEndUser(org, vault, member.token, bytes, nowMs, bindingOfClaim(member));
      } else {
        await this.checkEndUser(org, vault, body.end_user_token, bytes, nowMs);
      }
    } else if (body.end_user_token !== undefined || body.member_signing_session !== undefined) {
      throw bad(`${body.end_user_token !== undefined ? 'end_user_token' : 'member_signing_session'} applies to hosted vaults with end-user authentication only`);
    }
    const transfers = transfersOf(wallet.chain, intent);

    return this.o.vaults.store.exclusive(`tx-org:${org}`, () => this.withNonceLock(wallet, intent, async () => {
      // Re-read under the lock: the state, and a concurrent submission with the same key.
      const again = await this.byIdempotencyKey(org, body.idempotency_key);
      if (again) return this.replay(again, hash);
      // A decommissioning that ran while this request was checked wins: it saw no transaction in flight.
      const walletNow = await WALLETS.in(store).get(wallet.id);
      if (!walletNow || walletState(walletNow) === 'decommissioned') throw decommissioned(wallet);
      const current = await this.o.vaults.vault(org, vault.id);
      if (!SIGNING_STATES.includes(current.state)) throw new CustodyError('conflict', `the vault is ${current.state}; it signs nothing now`);
      const txId = newId('txn');
      // A vault whose trust log holds a policy in force is governed by it, as every node will check
      // (docs/policies.md); the policy fixed at creation applies until then.
      const key = (await this.o.vaults.listKeys(org)).find((k) => k.id === apiKeyId)!;
      const admission = await this.policies.admit({
        vault: current, intent, bytes, apiPublicKey: hexToBytes(key.public_key), chainLink: body.chain_link, approvals: body.approvals, transactionId: txId,
      });
      if (!admission) {
        checkPolicy(current.policy as Policy | null, transfers, await this.windowSpends(current, nowMs), nowMs);
        // A Safe transaction moves none of the wallet's own funds; the policy's recipient lists still bound whom it calls.
        if (intent.kind === 'evm.safe_tx') checkCallTarget(current.policy as Policy | null, viemHex(intent.to));
      }
      const state = admission?.state ?? 'created';
      const t = this.now().toISOString();
      const tx: TransactionRecord = {
        id: txId, org, vault_id: vault.id, wallet_id: wallet.id, chain: wallet.chain, family: intent.kind === 'btc.transfer' ? 'bitcoin' : 'evm',
        state, idempotency_key: body.idempotency_key, request_hash: hash, intent: bytesToHex(bytes), intent_signature: body.intent_signature.toLowerCase(),
        api_key_id: apiKeyId, intent_sha256: intentSha256(bytes), transfers: transfers.map((x) => ({ ...x, amount: x.amount.toString() })),
        tx_hash: null, reason: null, fee: null, created_at: t, updated_at: t,
        ...(admission ? { policy: { version: admission.policyVersion, chain_seq: admission.seq, approvals: admission.approvals, quorums: quorumView(admission.quorums) } } : {}),
        // What makes it unique on chain, as its intent names it: listed while it is in flight.
        ...(intent.kind === 'evm.transfer' ? { nonce: Number(intent.nonce) } : intent.kind === 'evm.safe_tx' ? { kind: 'safe_tx' as const, safe_tx: safeTxView(intent) } : { inputs: intent.inputs.map((i) => `${bytesToHex(i.txid)}:${i.vout}`) }),
      };
      // The nonce the intent names becomes this transaction's: no other of the wallet's can take it.
      const nonceOps = intent.kind === 'evm.transfer'
        ? await this.nonces.claimOps({ chain: wallet.chain, address: wallet.address, org, wallet_id: wallet.id, idempotency_key: body.idempotency_key, not_after: Number(intent.notAfter), nonce: Number(intent.nonce) }, tx.id)
        : [];
      // The member signing session is used in this batch, or not at all: of concurrent submissions, one wins.
      const memberOps = member ? await member.consume(tx.id) : [];
      // The submitting request's trace, which the signing continues in the worker (empty when tracing is off).
      const traceparent = traceparentOf();
      const job: TransactionJob = {
        id: tx.id, attempts: 0, next_at: 0, ...(body.end_user_token ? { end_user_token: body.end_user_token } : {}),
        ...(member ? { end_user_token: member.token, member_action: memberActionJob(bindingOfClaim(member)) } : {}),
        ...(traceparent ? { traceparent } : {}),
      };
      await store.batch([
        ...memberOps,
        ...nonceOps,
        ...(admission?.ops ?? []),
        this.txOp(tx),
        TX_JOBS.putOp(tx.id, job),
        // Waiting for approvals: nothing to sign yet; a job ends it at the intent's not_after unless approved.
        ...(state === 'created' ? [signJob(tx)] : [expiryJob(tx, Number(intent.notAfter))]),
        state === 'created'
          ? this.o.vaults.event(org, 'transaction.created', 'transaction', tx.id, { transaction_id: tx.id, vault_id: vault.id, state: 'created' })
          : this.o.vaults.event(org, 'transaction.approval_required', 'transaction', tx.id, approvalEventData(tx)),
      ]);
      this.wake?.();
      return { tx, created: true };
    }));
  }

  /** Runs `fn` under the sending address's nonce lock for an EVM intent; at once for a Bitcoin one. */
  private withNonceLock<T>(wallet: WalletRecord, intent: Intent, fn: () => Promise<T>): Promise<T> {
    return intent.kind === 'evm.transfer' ? this.nonces.locked(wallet.chain, wallet.address, fn) : fn();
  }

  /** Stores `tx`; `prev`, the record it replaces, when the state may have changed (its state entries go). */
  txOp(tx: TransactionRecord, prev?: TransactionRecord): Op & { type: 'put' } {
    return TRANSACTIONS.putOp(tx.id, tx, { index: txIndex(tx), ...(prev && prev.state !== tx.state ? { unindex: stateIndex(prev) } : {}) });
  }

  /**
   * Brings the indexes GET /v1/transactions walks up to date for transactions written by an earlier
   * version; run once the store opens, before the API serves and the worker writes (api/app.ts).
   */
  async prepareIndexes(): Promise<void> {
    await TRANSACTIONS.in(this.o.vaults.store).reindex(TX_INDEX_VERSION, txIndex);
  }

  /**
   * GET /v1/transactions: the organization's transactions oldest first (by created_at, then id), from
   * the narrowest index the filters name: the wallet's, else the vault's, else the organization's, each
   * with the state when filtered. A vault or wallet the organization does not have lists nothing (its
   * index is not read), as does a wallet of another vault than vault_id.
   */
  /**
   * POST /v1/transactions/{txId}/approvals: an approver's approval of a transaction waiting for them,
   * verified here (as every node will) against the policy version it was admitted under. Once every
   * quorum that applies is met, the transaction goes on to signing. An approval already counted is
   * answered as it is; one that does not verify is refused and nothing changes.
   */
  async approve(org: string, txId: string, a: Approval): Promise<TransactionRecord> {
    return this.o.vaults.store.exclusive(`tx-org:${org}`, async () => {
      const { tx, policy, bytes, intent } = await this.waiting(org, txId, a, intentApprovalMessage);
      if (tx.policy!.approvals.some((x) => x.approver_id === a.approver_id)) return tx;
      const approvals = [...tx.policy!.approvals, a];
      const d = await this.policies.decide(tx.vault_id, tx.policy!.chain_seq, intent, bytes, approvals, policy.doc.version);
      const quorums = d.quorums ? quorumView(d.quorums) : tx.policy!.quorums;
      const approved = d.allow;
      const next: TransactionRecord = {
        ...tx, state: approved ? 'created' : 'awaiting_approval', policy: { ...tx.policy!, approvals, quorums }, updated_at: this.now().toISOString(),
        // Met every quorum but another rule answers no now (the window is full): it waits, saying why.
        waiting: !approved && d.code !== 'approval_required' ? `${d.code}: ${d.message}`.slice(0, 500) : undefined,
      };
      await this.o.vaults.store.batch([
        this.txOp(next, tx),
        ...(approved ? [signJob(next), this.o.vaults.event(org, 'transaction.created', 'transaction', tx.id, { transaction_id: tx.id, vault_id: tx.vault_id, state: 'created' })] : []),
      ]);
      if (approved) this.wake?.();
      return next;
    });
  }

  /**
   * POST /v1/transactions/{txId}/rejections: an approver of the vault's policy rejects a waiting
   * transaction (a signature over the rejection message): it ends `rejected` and its EVM nonce is let go.
   */
  async reject(org: string, txId: string, a: Approval): Promise<TransactionRecord> {
    return this.o.vaults.store.exclusive(`tx-org:${org}`, async () => {
      const { tx } = await this.waiting(org, txId, a, intentRejectionMessage);
      const wallet = await WALLETS.in(this.o.vaults.store).get(tx.wallet_id);
      const release = tx.nonce !== undefined && wallet ? await this.nonces.releaseOps(tx.chain, wallet.address, tx.nonce, tx.id) : [];
      const reason = `rejected_by_approver: ${a.approver_id} rejected the intent${tx.nonce !== undefined ? `; nonce ${tx.nonce} is released: the wallet's later transactions wait until a new one uses it (the next prepare gives it out)` : ''}`;
      const next: TransactionRecord = { ...tx, state: 'rejected', reason: reason.slice(0, 700), updated_at: this.now().toISOString() };
      await this.o.vaults.store.batch([
        this.txOp(next, tx), ...release,
        this.o.vaults.event(org, 'transaction.rejected', 'transaction', tx.id, { transaction_id: tx.id, vault_id: tx.vault_id, state: 'rejected', reason: 'rejected_by_approver' }),
      ]);
      return next;
    });
  }

  /** A transaction waiting for approvals, and `a` verifying over `message` under the policy it was admitted with. */
  private async waiting(org: string, txId: string, a: Approval, message: (vaultId: string, version: number, intentHash: string) => Uint8Array) {
    const tx = await this.get(org, txId);
    if (!tx.policy) throw new CustodyError('conflict', 'the transaction\'s vault was under no policy when it was made: it takes no approvals');
    if (tx.state !== 'awaiting_approval') throw new CustodyError('conflict', `the transaction is ${tx.state}; approvals are taken while it is awaiting_approval`);
    const bytes = hexToBytes(tx.intent);
    const intent = decodeIntent(bytes);
    if (BigInt(Math.floor(this.now().getTime() / 1000)) > intent.notAfter) throw new CustodyError('conflict', 'the intent has expired (not_after): no node signs it any more');
    const policy = await this.policies.inForce(tx.vault_id);
    if (!policy || policy.doc.version !== tx.policy.version) {
      throw new CustodyError('conflict', `the vault's policy is now ${policy ? `version ${policy.doc.version}` : 'none'}; the transaction was admitted under version ${tx.policy.version}, which its approvals sign: submit the intent again`);
    }
    const m = message(tx.vault_id, tx.policy.version, tx.intent_sha256);
    const passkeys = await this.policies.passkeys(org, policy.doc, m, [a]);
    const checked = checkApprovals(policy.doc, m, [a], passkeys.verified);
    if ('code' in checked) throw new CustodyError(checked.code as ErrorCode, `${checked.message}${passkeys.problems.size ? `: ${[...passkeys.problems.values()].join('; ')}` : ''}`);
    return { tx, policy, bytes, intent };
  }

  /** The organization's vault (404 otherwise). */
  vaultOf(org: string, vaultId: string): Promise<VaultRecord> {
    return this.o.vaults.vault(org, vaultId);
  }

  async transactionList(org: string, filters: TransactionFilters): Promise<IndexList<TransactionRecord>> {
    const store = this.o.vaults.store;
    const { vault_id: vaultId, wallet_id: walletId, state } = filters;
    // txIndex's entries: `<scope>/<id>/...`, or `<scope>-state/<id>/<state>/...` with a state.
    const entries = (scope: 'org' | 'vault' | 'wallet', id: string) => (state === undefined ? `${scope}/${id}/` : `${scope}-state/${id}/${state}/`);
    let prefix: string | undefined = entries('org', org);
    if (walletId !== undefined) {
      const w = await WALLETS.in(store).get(walletId);
      prefix = w && w.org === org && (vaultId === undefined || w.vault_id === vaultId) ? entries('wallet', w.id) : undefined;
    } else if (vaultId !== undefined) {
      const v = await VAULTS.in(store).get(vaultId);
      prefix = v && v.org === org ? entries('vault', v.id) : undefined;
    }
    return {
      list: 'transactions', scope: org, filters: { vault_id: vaultId, wallet_id: walletId, state }, collection: TRANSACTIONS.name, prefix,
      keep: (t) => t.org === org && (vaultId === undefined || t.vault_id === vaultId) && (walletId === undefined || t.wallet_id === walletId) && (state === undefined || t.state === state),
    };
  }

  /** The organization's transaction accepted under an idempotency key (the one inside its intent), if any. */
  submittedUnder(org: string, key: string): Promise<TransactionRecord | undefined> {
    return this.byIdempotencyKey(org, key);
  }

  private async byIdempotencyKey(org: string, key: string): Promise<TransactionRecord | undefined> {
    return (await TRANSACTIONS.in(this.o.vaults.store).byIndex(`idem/${org}/${key}\x00`, 1))[0];
  }

  private replay(prior: TransactionRecord, hash: string): { tx: TransactionRecord; created: boolean } {
    if (prior.request_hash !== hash) throw new CustodyError('conflict', 'this idempotency_key was used for another transaction');
    return { tx: prior, created: false };
  }

  private intentOf(org: string, wallet: WalletRecord, body: SubmitTransaction): { intent: Intent; bytes: Uint8Array } {
    if (body.intent !== undefined) {
      try {
        const bytes = hexToBytes(body.intent);
        return { intent: decodeIntent(bytes), bytes };
      } catch (err) {
        throw bad(`intent: ${err instanceof IntentFormatError ? err.message : 'not hex'}`);
      }
    }
    const net = evmNetwork(wallet.chain);
    if (!net) throw bad('a Bitcoin transaction needs `intent`; the convenience fields are for EVM chains');
    if (body.to === undefined || body.amount === undefined) throw bad('give either `intent`, or `to` and `amount`');
    try {
      const intent = evmIntentFromFields({
        organization: org, walletId: wallet.id, chainId: net.chainId, nonce: body.nonce === undefined ? undefined : BigInt(body.nonce), from: wallet.address, to: body.to, amount: body.amount,
        asset: body.asset, maxFee: body.max_fee, idempotencyKey: body.idempotency_key, notAfter: BigInt(body.not_after ?? 0),
      });
      return { intent, bytes: encodeIntent(intent) };
    } catch (err) {
      throw bad(err instanceof IntentFormatError ? err.message : `convenience fields: ${(err as Error).message}`);
    }
  }

  /** The intent must describe a payment from this wallet, of this organization, on this wallet's chain. */
  private checkBinding(org: string, wallet: WalletRecord, intent: Intent, idempotencyKey: string): void {
    if (intent.organization !== org) throw bad('the intent names another organization');
    if (intent.walletId !== wallet.id) throw bad('the intent names another wallet than wallet_id');
    if (intent.idempotencyKey !== idempotencyKey) throw bad('idempotency_key differs from the one inside the intent');
    if (intent.kind === 'evm.transfer') {
      const net = evmNetwork(wallet.chain);
      if (!net || net.chainId !== intent.chainId) throw bad(`the intent is for chain id ${intent.chainId}, the wallet is on ${wallet.chain}`);
      if (viemHex(intent.from).toLowerCase() !== wallet.address.toLowerCase()) throw bad('the intent sends from another address than the wallet');
      // No transaction fits under a zero ceiling: refuse it now rather than fail it later.
      if (intent.maxFee === 0n) throw bad('max_fee must be positive');
      // The nodes sign an EVM intent only at the nonce it names (docs/intents.md, version 3).
      if (intent.nonce === undefined) throw bad('the intent names no nonce: nodes sign only EVM intents of version 3, which do; POST /v1/transactions/prepare reserves one (with the convenience fields, give it as `nonce`)');
      if (intent.nonce > BigInt(Number.MAX_SAFE_INTEGER)) throw bad('the intent\'s nonce is beyond what this service tracks (2^53 - 1)');
      return;
    }
    if (intent.kind === 'evm.safe_tx') {
      const net = evmNetwork(wallet.chain);
      if (!net) throw bad(`a Safe transaction is signed by an EVM wallet; ${wallet.chain} is not an EVM chain`);
      if (net.chainId !== intent.chainId) throw bad(`the intent is for chain id ${intent.chainId}, the wallet is on ${wallet.chain}`);
      if (viemHex(intent.owner).toLowerCase() !== wallet.address.toLowerCase()) throw bad('the intent names another owner address than the wallet\'s');
      // The nodes refuse a delegatecall anywhere but MultiSendCallOnly (docs/intents.md "Kind 3"): so does the API, first.
      const op = safeOperationProblem(intent);
      if (op) throw bad(op);
      return;
    }
    const net = BITCOIN_NETWORKS.find((n) => n.chain === wallet.chain);
    if (!net || net.network !== intent.network) throw bad(`the intent is for bitcoin ${intent.network}, the wallet is on ${wallet.chain}`);
    if (intent.from !== wallet.address) throw bad('the intent spends from another address than the wallet');
    // The nodes sign a Bitcoin intent only for the outputs it names as spent (docs/intents.md).
    if (!intent.inputs.length) throw bad('the intent names no inputs: nodes sign only Bitcoin intents that name the outputs they spend (GET /v1/wallets/{id}/utxos lists them)');
    // A P2WPKH signature commits to its own input's amount only: the customer names every input and amount.
    if (wallet.address_type !== 'p2tr' && !intent.inputs.every((i) => i.amount !== undefined)) {
      throw bad('a P2WPKH wallet\'s intent names its inputs with their amounts (intent version 2; GET /v1/wallets/{id}/utxos lists them)');
    }
    for (const o of intent.outputs) {
      try {
        bitcoin.address.toOutputScript(o.address, BITCOIN_NETWORK_PARAMS[intent.network]);
      } catch {
        throw bad(`output address ${o.address} is not a valid ${intent.network} address`);
      }
    }
  }

  /** Unspent outputs of a Bitcoin wallet, without those its own transactions spend or hold. */
  async walletUtxos(org: string, walletId: string): Promise<{ txid: string; vout: number; amount: string; confirmed: boolean }[]> {
    const wallet = await WALLETS.in(this.o.vaults.store).get(walletId);
    if (!wallet || wallet.org !== org) throw new CustodyError('not_found', 'no such wallet');
    if (!BITCOIN_NETWORKS.some((n) => n.chain === wallet.chain)) throw bad(`${wallet.chain} is not a Bitcoin chain`);
    if (!this.o.hasBackend(wallet.chain) || !this.o.utxos) throw new CustodyError('conflict', `chain ${wallet.chain} has no backend configured on this service`);
    const busy = (await this.o.busyOutputs?.(wallet)) ?? new Set<string>();
    const utxos = await this.o.utxos(wallet.chain, wallet.address).catch((err: unknown) => {
      throw new CustodyError('conflict', `the ${wallet.chain} backend did not answer: ${(err as Error).message}`.slice(0, 300));
    });
    return utxos.filter((u) => !busy.has(`${u.txid}:${u.vout}`)).map((u) => ({ txid: u.txid, vout: u.vout, amount: String(u.value), confirmed: u.status.confirmed }));
  }

  /** The API key of the organization whose signature the intent carries: the caller's first, then the others. */
  private async verifySignature(org: string, callerKeyId: string, bytes: Uint8Array, sigHex: string): Promise<string> {
    const sig = hexToBytes(sigHex.toLowerCase());
    const keys = (await this.o.vaults.listKeys(org)).filter((k) => !k.revoked);
    const ordered = [...keys.filter((k) => k.id === callerKeyId), ...keys.filter((k) => k.id !== callerKeyId)];
    const ok = ordered.find((k: ApiKeyRecord) => verifyIntentSignature(bytes, sig, hexToBytes(k.public_key)));
    if (!ok) throw forbidden('the intent signature did not verify under an active API key of the organization');
    return ok.id;
  }

  private async checkEndUser(org: string, vault: VaultRecord, token: string | undefined, intent: Uint8Array, nowMs: number, memberAction?: MemberActionBinding): Promise<void> {
    const config = await END_USER_AUTH.in(this.o.vaults.store).get(org);
    if (!config) throw forbidden('end-user authentication is not configured for the organization');
    try {
      await verifyEndUserToken(config, token, intent, vault.end_user_subject, Math.floor(nowMs / 1000), memberAction);
    } catch (err) {
      if (err instanceof EndUserTokenError) throw forbidden(err.message);
      throw err;
    }
  }

  /** Spends of the vault that still count against its rolling window: every transaction not failed or rejected. */
  private async windowSpends(vault: VaultRecord, nowMs: number) {
    const seconds = (vault.policy as Policy | null)?.rolling_window?.seconds;
    if (!seconds) return [];
    const since = new Date(nowMs - seconds * 1000).toISOString();
    const txs = await TRANSACTIONS.in(this.o.vaults.store).byIndexAfter(`vault/${vault.id}/`, since, 100_000);
    return txs
      .filter((t) => t.state !== 'failed' && t.state !== 'rejected')
      .flatMap((t) => t.transfers.map((x) => ({ asset: x.asset, amount: BigInt(x.amount), at: Date.parse(t.created_at) })));
  }
}

/** What a transaction moves, for policy: recipients, assets (`<chain>:native` or `<chain>:<contract>`) and amounts. */
export function transfersOf(chain: string, intent: Intent): Transfer[] {
  // A Safe transaction's signature moves the Safe's assets, not the wallet's: nothing counts against its limits.
  if (intent.kind === 'evm.safe_tx') return [];
  if (intent.kind === 'evm.transfer') {
    const asset = intent.asset.kind === 'native' ? `${chain}:native` : `${chain}:${viemHex(intent.asset.contract).toLowerCase()}`;
    return [{ recipient: normalizeRecipient(viemHex(intent.to)), asset, amount: intent.amount }];
  }
  return intent.outputs.map((o) => ({ recipient: o.address, asset: `${chain}:native`, amount: o.amount }));
}
