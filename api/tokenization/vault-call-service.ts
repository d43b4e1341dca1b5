// Calls a customer's vault wallet makes on a token itself (docs/platform/tokenization.md "Calls by a vault
// wallet"): `policy-mint` (a minter wallet mints under its own on-chain mint policy, without the admin
// Safe's signatures) and `nft-transfers` (a holder wallet sends an ERC-721 or ERC-1155 id), with
// `nft-transfers/build`, which answers the exact intent to sign. Each is one customer-signed kind-1 intent
// from the wallet to the token (value 0, data the call) submitted through the vault transaction path. The
// API recomputes the calldata from the request's fields and refuses an intent that differs, reads the chain
// first (the minter's role, policy and what it leaves; the holder's id or balance) and simulates the call, so
// a refusal stores and submits nothing. The record is an operation of the token (kind `policy_mint` or
// `nft_transfer`) without a Safe transaction: it holds no Safe nonce, and it follows its vault transaction to
// confirmed (final, receipt successful) or failed, emitting the operation events.
import type { ConfirmedOperations } from './confirmed-operations.ts';
import { getAddress, toHex, type Address, type Hex } from 'viem';
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Intent } from '../../core/intents/intent.ts';
import { intentSha256 } from '../../core/auth/end-user-token.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import type { TransactionService } from '../transactions/transaction-service.ts';
import type { TransactionRecord } from '../transactions/records.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { WALLETS } from '../vaults/collections.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { OPERATIONS, TOKENIZATION_KEYS } from './collections.ts';
import type { OperationFailure, TokenRecord, VaultCallRecord } from './records.ts';
import { FOLLOWED_CALL_STATES, vaultCallMayBecome, type OperationState } from './operation-states.ts';
import type { TokenChain } from './token-chain.ts';
import type { TokenService } from './token-service.ts';
import { nftTransferCall, operationCall, roleId, tokenAbi, type OperationCall } from './token-calls.ts';
import { failureOf } from './chain/chain-failure.ts';
import { decodeIntentHex, releaseNonceOnRefusal, submitVaultIntent, type SignedIntentInput } from './vault-intents.ts';
import { isVaultCall } from './operation-service.ts';

export type VaultCallKind = 'policy_mint' | 'nft_transfer';

/** The call's own fields: mint `{to, amount?, token_id?, data?}`, transfer `{to, token_id, amount?}`. */
export interface CallFields { to: string; amount?: string | undefined; token_id?: string | undefined; data?: string | undefined }

/** POST policy-mint and nft-transfers: the wallet, the call's fields and the customer-signed intent of exactly that call. */
export type VaultCallInput = SignedIntentInput & CallFields;

export interface VaultCallServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  deliveries: DeliveryEngine;
  tokens: TokenService;
  transactions?: TransactionService | undefined;
  chain: (name: string) => TokenChain | undefined;
  clock: () => number;
  /** How often a submitted call looks at its vault transaction (wall time); default 250 ms. */
  followIntervalMs?: number | undefined;
  /** Told of each call once it is confirmed. */
  confirmed?: ConfirmedOperations | undefined;
  log?: { warn(obj: object, msg: string): void } | undefined;
}

/** The kind-1 intent fields a call's customer signs, adding its own nonce, max_fee, idempotency_key and not_after (docs/intents.md "Kind 1"). */
export interface CallIntentFields {
  kind: 'evm.transfer';
  organization: string;
  wallet_id: string;
  chain_id: number;
  from: string;
  to: string;
  asset: 'native';
  amount: '0';
  data: string;
}

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);
const lower = (b: Uint8Array) => toHex(b).toLowerCase();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const vaultCallIndex = (r: VaultCallRecord): string[] => [`${r.token_id}\x00all\x00${r.id}`, `vtx\x00${r.vault_call.transaction_id}`];

export class VaultCallService {
  private readonly running = new Set<Promise<void>>();
  private readonly followed = new Set<string>();
  private stopped = false;

  constructor(private readonly o: VaultCallServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  private chainOf(token: TokenRecord): TokenChain {
    const c = this.o.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    return c;
  }

  private transactions(): TransactionService {
    if (!this.o.transactions) throw new CustodyError('tokenization_unavailable', 'calls by a vault wallet need the vault API\'s transactions, which this service does not run');
    return this.o.transactions;
  }

  /** An EVM wallet of the token's organization on its chain, not decommissioned. */
  private async walletOf(token: TokenRecord, walletId: string): Promise<WalletRecord> {
    const w = await WALLETS.in(this.o.store).get(walletId);
    if (!w || w.org !== token.org) throw invalid('wallet_id', `no wallet ${walletId} of this workspace's organization`);
    if (w.address_type !== 'evm' || w.chain !== token.chain) throw invalid('wallet_id', `wallet ${w.id} is not an EVM wallet on ${token.chain}`);
    if (walletState(w) === 'decommissioned') throw new CustodyError('wallet_decommissioned', `wallet ${w.id} is decommissioned`);
    return w;
  }

  /** The call a request names, its fields checked against the token's ABI (422 before anything is read or stored). */
  private async callOf(kind: VaultCallKind, token: TokenRecord, body: CallFields & { wallet_id: string }): Promise<{ call: OperationCall; wallet: WalletRecord; fields: Record<string, unknown> }> {
    const fields: Record<string, unknown> = Object.fromEntries(Object.entries({ to: body.to, amount: body.amount, token_id: body.token_id, data: body.data }).filter(([, v]) => v !== undefined));
    if (kind === 'nft_transfer' && token.kind === 'erc20') throw invalid('token', 'NFT transfers are of ERC-721 and ERC-1155 tokens; this token is ERC-20');
    if (kind === 'nft_transfer' && fields.data !== undefined) throw invalid('data', 'not a field of an NFT transfer');
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${token.id} is ${token.status}; calls need it deployed`);
    const wallet = await this.walletOf(token, body.wallet_id);
    const address = getAddress(token.address);
    const call = kind === 'policy_mint' ? operationCall(token.kind, address, 'mint', fields) : nftTransferCall(token.kind, address, getAddress(wallet.address), fields);
    return { call, wallet, fields };
  }

  /**
   * What the chain says before anything is submitted: a minter holds MINTER_ROLE and a policy leaving enough
   * this period; a holder owns the ERC-721 id or enough of the ERC-1155 id. Then the call is simulated from
   * the wallet: a paused token, a denied party, a registry refusal is 422 with the token's decoded error.
   */
  private async checkOnChain(kind: VaultCallKind, token: TokenRecord, wallet: WalletRecord, fields: Record<string, unknown>, call: OperationCall): Promise<void> {
    const chain = this.chainOf(token);
    const abi = tokenAbi(token.kind);
    const address = getAddress(token.address);
    const from = getAddress(wallet.address);
    /** A view of the token; `undefined` when it reverts (ERC-721 ownerOf of an id nobody holds: an answer, not a failure). */
    const read = async <T>(functionName: string, args: unknown[]): Promise<T | undefined> => {
      try {
        return await chain.client.readContract({ address, abi, functionName, args }) as T;
      } catch (err) {
        const f = failureOf(err);
        if (f.kind === 'reverted') return undefined;
        throw new CustodyError('chain_backend_error', `reading ${functionName} of token ${token.id}: ${f.message}`);
      }
    };
    if (kind === 'policy_mint') {
      if (!await read<boolean>('hasRole', [roleId('MINTER_ROLE'), from])) {
        throw new CustodyError('mint_not_allowed', `wallet ${wallet.id} (${from}) does not hold MINTER_ROLE on token ${token.id}: grant it with roles/grant, and give it a policy with policies`);
      }
      const [cap, period, minted, remaining] = (await read<readonly [bigint, bigint, bigint, bigint]>('mintPolicy', [from])) ?? [0n, 0n, 0n, 0n];
      if (period === 0n) throw new CustodyError('mint_not_allowed', `wallet ${wallet.id} (${from}) has no mint policy on token ${token.id}: set one with policies`);
      const units = token.kind === 'erc721' ? 1n : BigInt(fields.amount as string);
      if (units > remaining) {
        throw new CustodyError('mint_cap_exceeded', `minting ${units} is over the mint policy of ${from} on token ${token.id}: it leaves ${remaining} this period (cap ${cap} per ${period} s, minted ${minted})`);
      }
    } else {
      const id = BigInt(fields.token_id as string);
      if (token.kind === 'erc721') {
        const owner = await read<Address>('ownerOf', [id]);
        if (!owner || owner.toLowerCase() !== from.toLowerCase()) {
          throw new CustodyError('not_token_holder', `wallet ${wallet.id} (${from}) does not own id ${id} of token ${token.id}${owner ? ` (${owner} does)` : ' (nobody does)'}`);
        }
      } else {
        const held = (await read<bigint>('balanceOf', [from, id])) ?? 0n;
        const amount = BigInt(fields.amount as string);
        if (held < amount) throw new CustodyError('not_token_holder', `wallet ${wallet.id} (${from}) holds ${held} of id ${id} of token ${token.id}, less than ${amount}`);
      }
    }
    try {
      await chain.client.call({ account: from, to: call.to, data: call.data });
    } catch (err) {
      const f = failureOf(err);
      if (f.kind === 'reverted') throw new CustodyError('token_call_reverted', `token ${token.id} refuses the call from ${from}: ${f.reason}; nothing was submitted`);
      throw new CustodyError('chain_backend_error', `simulating the call on token ${token.id}: ${f.message}`);
    }
  }

  /** The exact kind-1 intent fields of a call (value 0, data the call), before the customer's nonce, max_fee, idempotency_key and not_after. */
  private intentFields(token: TokenRecord, wallet: WalletRecord, call: OperationCall): CallIntentFields {
    return { kind: 'evm.transfer', organization: token.org, wallet_id: wallet.id, chain_id: token.chain_id, from: wallet.address.toLowerCase(), to: call.to.toLowerCase(), asset: 'native', amount: '0', data: call.data.toLowerCase() };
  }

  /** The intent must be exactly the call: every field but those the customer chooses; else 422 call_intent_mismatch, nothing submitted. */
  private checkIntent(intent: Intent, want: CallIntentFields, what: string): void {
    if (intent.kind !== 'evm.transfer') throw invalid('intent', `not an EVM transfer intent (kind 1): a ${what} is signed as one from the wallet to the token`);
    const differs: string[] = [];
    if (intent.organization !== want.organization) differs.push('organization');
    if (intent.walletId !== want.wallet_id) differs.push('wallet_id');
    if (intent.chainId !== BigInt(want.chain_id)) differs.push('chain_id');
    if (lower(intent.from) !== want.from) differs.push('from (the wallet\'s address)');
    if (lower(intent.to) !== want.to) differs.push(`to (the token, ${want.to})`);
    if (intent.asset.kind !== 'native') differs.push('asset (native: the call is the data, not an ERC-20 transfer)');
    if (intent.amount !== 0n) differs.push('amount (0: the call sends no value)');
    if (lower(intent.data) !== want.data) differs.push(`data (the calldata of the ${what} the fields name)`);
    if (differs.length) throw new CustodyError('call_intent_mismatch', `the intent is not the ${what} this request names: ${differs.join(', ')} differ; nothing was submitted`);
  }

  /** POST nft-transfers/build: checks the holder on chain, simulates, and answers the intent fields to sign. Changes nothing. */
  async build(scope: Scope, tokenId: string, body: CallFields & { wallet_id: string }): Promise<{ token: TokenRecord; wallet: WalletRecord; fields: Record<string, unknown>; intent: CallIntentFields }> {
    const token = await this.o.tokens.get(scope, tokenId);
    const { call, wallet, fields } = await this.callOf('nft_transfer', token, body);
    await this.checkOnChain('nft_transfer', token, wallet, fields, call);
    return { token, wallet, fields, intent: this.intentFields(token, wallet, call) };
  }

  /**
   * POST policy-mint and nft-transfers: the customer-signed intent of exactly the named call, checked against
   * the chain, simulated and submitted as the organization's vault transaction; answers the operation record.
   * A retry with the same Idempotency-Key and body answers the same record.
   */
  async submit(scope: Scope, actor: Actor, tokenId: string, kind: VaultCallKind, body: VaultCallInput, key: string): Promise<{ op: VaultCallRecord; token: TokenRecord }> {
    const keyId = `${scope.workspace}\x00vc_${tokenId}_${kind}\x00${key}`;
    // The end-user token only authorizes: a retry may carry a fresh one.
    const { end_user_token: _t, ...described } = body;
    const fingerprint = bodyFingerprint(described);
    const prior = await this.replay(scope, tokenId, keyId, fingerprint);
    if (prior) return prior;
    const token = await this.o.tokens.get(scope, tokenId);
    const transactions = this.transactions();
    const { intent, bytes } = decodeIntentHex(body.intent);
    return releaseNonceOnRefusal(transactions, token.org, body.wallet_id, intent, () => this.checkAndSubmit(scope, actor, token, kind, body, keyId, fingerprint, transactions, intent, bytes));
  }

  private async checkAndSubmit(scope: Scope, actor: Actor, token: TokenRecord, kind: VaultCallKind, body: VaultCallInput, keyId: string, fingerprint: string, transactions: TransactionService, intent: Intent, bytes: Uint8Array): Promise<{ op: VaultCallRecord; token: TokenRecord }> {
    const { call, wallet, fields } = await this.callOf(kind, token, body);
    const what = kind === 'policy_mint' ? 'mint' : 'NFT transfer';
    const want = this.intentFields(token, wallet, call);
    this.checkIntent(intent, want, what);
    // Once this very intent is a vault transaction (a retry after a stop between submitting and recording),
    // the call may already have happened: the chain is not asked again, and the record is made for it.
    const prior = await transactions.submittedUnder(token.org, intent.idempotencyKey);
    if (!prior || prior.intent !== bytesToHex(bytes)) await this.checkOnChain(kind, token, wallet, fields, call);
    return this.o.store.exclusive(`tokenization:vault-call:${token.id}`, async () => {
      const again = await this.replay(scope, token.id, keyId, fingerprint);
      if (again) return again;
      const tx = await submitVaultIntent(transactions, token.org, body, intent);
      // The same intent under another Idempotency-Key: its vault transaction already has its record.
      const existing = (await OPERATIONS.in(this.o.store).byIndex(`vtx\x00${tx.id}\x00`, 1))[0];
      if (existing) throw new CustodyError('conflict', `this intent was already submitted as operation ${existing.id} (vault transaction ${tx.id})`);
      const now = this.iso();
      const op: VaultCallRecord = {
        v: 1, id: newId('op', this.o.clock()), token_id: token.id, tenant: token.tenant, workspace: token.workspace, kind, via: 'vault_transaction',
        params: { wallet_id: wallet.id, ...fields }, chain: token.chain, chain_id: token.chain_id, state: 'submitted',
        vault_call: { organization: token.org, wallet_id: wallet.id, from: want.from, to: want.to, data: want.data, transaction_id: tx.id, intent_sha256: intentSha256(bytes) },
        tx_hash: null, failure: null, created_at: now, updated_at: now, executed_at: null, confirmed_at: null,
      };
      await this.o.store.batch([
        OPERATIONS.putOp(op.id, op, { index: vaultCallIndex(op) }),
        TOKENIZATION_KEYS.putOp(keyId, { v: 1, id: op.id, fingerprint }),
        this.o.audit.op(scope, actor, 'tokenization.operation.submit', op.id, null, { token_id: token.id, kind, wallet_id: wallet.id, transaction_id: tx.id }),
      ]);
      this.follow(op.id);
      return { op, token };
    });
  }

  private async replay(scope: Scope, tokenId: string, keyId: string, fingerprint: string): Promise<{ op: VaultCallRecord; token: TokenRecord } | undefined> {
    const prior = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
    if (!prior) return undefined;
    if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
    const token = await this.o.tokens.get(scope, tokenId);
    const op = await OPERATIONS.in(this.o.store).get(prior.id);
    if (!op || !isVaultCall(op)) throw new CustodyError('bug', `Idempotency-Key record ${prior.id} names no call`);
    return { op, token };
  }

  /** At boot: follows every call left `submitted` or `executed` by a stopped process. */
  async resumeAll(): Promise<void> {
    for await (const op of this.o.store.all<VaultCallRecord>('token_operations')) {
      if (op.via === 'vault_transaction' && FOLLOWED_CALL_STATES.includes(op.state)) this.follow(op.id);
    }
  }

  /** Resolves once every follow this process started has ended. */
  async settled(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  /** Ends every follow at its next look (a restart resumes them) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.settled();
  }

  private follow(id: string): void {
    if (this.stopped || this.followed.has(id)) return;
    this.followed.add(id);
    const p = (async () => {
      while (!this.stopped && !(await this.step(id))) await sleep(this.o.followIntervalMs ?? 250);
    })().catch((err: unknown) => this.o.log?.warn({ category: (err as { code?: string }).code ?? 'error', operation: id }, 'following a token call failed'))
      .finally(() => this.followed.delete(id));
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  /**
   * One look at the call's vault transaction: `confirmed` (included, receipt successful) makes the call
   * `executed`; `final` makes it `confirmed`; `failed` or `rejected` makes it `failed`. True once it needs no more looks.
   */
  private async step(id: string): Promise<boolean> {
    const op0 = await OPERATIONS.in(this.o.store).get(id);
    if (!op0 || !isVaultCall(op0) || !FOLLOWED_CALL_STATES.includes(op0.state)) return true;
    const tx = await this.transactions().get(op0.vault_call.organization, op0.vault_call.transaction_id);
    let to: OperationState;
    if (tx.state === 'final') to = 'confirmed';
    else if (tx.state === 'confirmed') to = 'executed';
    else if (tx.state === 'failed' || tx.state === 'rejected') to = 'failed';
    else return false;
    if (to === op0.state) return false;
    if (!vaultCallMayBecome(op0.state, to)) {
      this.o.log?.warn({ operation: id, state: op0.state, transaction_state: tx.state }, 'a token call\'s vault transaction ended in a way its state cannot follow');
      return true;
    }
    const failure = to === 'failed' ? await this.failureOf(op0, tx) : null;
    const scope = { tenant: op0.tenant, workspace: op0.workspace };
    let confirmed: VaultCallRecord | undefined;
    await this.o.store.exclusive(`tokenization:vault-call:${op0.token_id}`, async () => {
      const op = await OPERATIONS.in(this.o.store).get(id);
      if (!op || !isVaultCall(op) || !vaultCallMayBecome(op.state, to)) return;
      const now = this.iso();
      const next: VaultCallRecord = {
        ...op, state: to, tx_hash: tx.tx_hash ?? op.tx_hash, failure, updated_at: now,
        executed_at: to === 'failed' ? op.executed_at : op.executed_at ?? now, confirmed_at: to === 'confirmed' ? now : op.confirmed_at,
        ...(to === 'confirmed' ? this.o.confirmed?.pending : {}),
      };
      const put: Op[] = [OPERATIONS.putOp(id, next, { index: vaultCallIndex(next) })];
      const event = to === 'confirmed'
        ? { type: 'tokenization.operation.confirmed', data: { token_id: op.token_id, operation_id: op.id, kind: op.kind, tx_hash: next.tx_hash } }
        : to === 'failed'
          ? { type: 'tokenization.operation.failed', data: { token_id: op.token_id, operation_id: op.id, kind: op.kind, reason: failure!.reason === 'revert' ? 'onchain_revert' : 'engine_error', error: failure!.message } }
          : undefined;
      if (!event) return this.o.store.batch(put);
      await this.o.deliveries.emitAll(scope, [{ ...event, resource: { type: 'token_operation', id: op.id }, actor: { type: 'system', id: 'tokenization' } }], put);
      confirmed = to === 'confirmed' ? next : undefined;
    });
    if (confirmed) await this.o.confirmed?.notify(confirmed);
    return to !== 'executed';
  }

  /**
   * Why the vault transaction ended without a successful inclusion: a revert (included and reverted, or refused
   * by the chain's estimate before signing) is replayed from the wallet to decode the token's error; anything
   * else (the signers refused, the wallet could not pay, the cluster did not sign in time) is `engine`.
   */
  private async failureOf(op: VaultCallRecord, tx: TransactionRecord): Promise<OperationFailure> {
    const at = this.iso();
    const why = tx.reason ?? tx.state;
    if (!/^(reverted|would_revert)\b/.test(why)) return { reason: 'engine', message: `vault transaction ${tx.id} ${tx.state}: ${why}`, error_name: null, at };
    const chain = this.o.chain(op.chain);
    // Included: replay just before its block; refused before signing: replay now.
    const blockNumber = tx.block_number !== undefined ? BigInt(tx.block_number) - 1n : undefined;
    const replay = await chain?.client.call({ account: op.vault_call.from as Address, to: op.vault_call.to as Address, data: op.vault_call.data as Hex, ...(blockNumber !== undefined ? { blockNumber } : {}) })
      .then(() => undefined, (err: unknown) => failureOf(err));
    if (replay?.kind === 'reverted') return { reason: 'revert', message: replay.reason, error_name: replay.errorName, at };
    return { reason: 'revert', message: why, error_name: null, at };
  }
}
