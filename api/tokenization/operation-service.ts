// Token operations (docs/platform/tokenization.md "Operations"): every privileged call on a token is one
// Safe transaction of its admin Safe, proposed at a Safe nonce, signed by owners until the Safe's threshold,
// executed by the service deployer account (which pays) and confirmed on chain; or failed, telling a revert
// (decoded) from an engine error. A vault owner signs only through a customer-signed intent of kind 3 (the
// vault transaction path); an outside owner gives its EIP-712 signature. One open operation per Safe nonce:
// they execute in nonce order, and when one fails its nonce is freed (the Safe's nonce moves only by
// executing), so every later open operation moves one nonce down and starts collecting signatures again.
// Everything that touches a Safe's operations holds the Safe's lock. An operation may instead run through the
// token's roles module (`module-signature`): a role member's customer-signed kind-1 intent calls the Zodiac
// Roles modifier with exactly the operation's call; it never uses its Safe nonce, which is freed the same way.
// A token's operations list also holds the calls its vault wallets make themselves (vault-call-service.ts):
// they have no Safe transaction, are not in a Safe's index, and nothing here moves them.
import { getAddress, hexToBytes as viemHexToBytes, parseAbiItem, parseEventLogs, recoverAddress, toHex, type Address, type Hex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodeIntent, type Intent, type SafeTxIntent } from '../../core/intents/intent.ts';
import { SAFE_DELEGATECALL_TARGETS } from '../../core/chains/evm/safe-tx.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import type { TransactionService } from '../transactions/transaction-service.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { OPERATIONS, TOKENIZATION_KEYS } from './collections.ts';
import type { ModuleExecution, OperationFailure, OperationRecord, OperationSignature, StoredSafeTx, TokenOperationRecord, TokenRecord, VaultCallRecord } from './records.ts';
import { OPEN_OPERATION_STATES, operationMayBecome, type OperationState } from './operation-states.ts';
import type { TokenChain } from './token-chain.ts';
import type { TokenService } from './token-service.ts';
import type { ConfirmedOperations } from './confirmed-operations.ts';
import { operationCall, type OperationKind, type RegistryOperationKind } from './token-calls.ts';
import { executeSafeTransaction, explainInnerFailure, packSafeSignatures, readSafeNonce, safeTransaction, safeTxHash, type SafeTransaction } from './chain/safe-transaction.ts';
import { SAFE_ABI } from './chain/safe-abi.ts';
import { ChainStepError, failureOf, type ChainFailure } from './chain/chain-failure.ts';
import { deployRolesModifier, execWithRoleData, rolesModifierAddress, rolesModuleState } from './chain/roles-module.ts';
import { rolesModuleCall } from './roles-module-calls.ts';
import { decodeIntentHex, releaseNonceOnRefusal, submitVaultIntent, type SignedIntentInput } from './vault-intents.ts';

export const OPERATION_ID = /^op_[0-9a-f]{26}$/;
const TX_ID = /^txn_[0-9a-zA-Z]{1,64}$/;
const EXECUTION_SUCCESS = parseAbiItem('event ExecutionSuccess(bytes32 indexed txHash, uint256 payment)');
/** How often a module execution's vault transaction is looked at while it is on its way. */
const MODULE_FOLLOW_MS = 100;
/** The kind of the operation proposed to use a freed Safe nonce when a later operation already has its signatures (freeNonceOps). */
export const NONCE_REJECTION = 'nonce_rejection';

export interface OperationServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  deliveries: DeliveryEngine;
  tokens: TokenService;
  transactions?: TransactionService | undefined;
  chain: (name: string) => TokenChain | undefined;
  clock: () => number;
  /** How long POST signatures waits for a submitted vault intent to be signed. */
  signatureWaitMs: number;
  log?: { warn(obj: object, msg: string): void } | undefined;
  /** Told of each operation once it is confirmed. */
  confirmed?: ConfirmedOperations | undefined;
}

/** One owner signature as posted: a vault's customer-signed intent, a signed vault transaction, or an outside owner's signature. */
export type SignatureInput =
  | { wallet_id: string; intent: string; intent_signature: string; end_user_token?: string | undefined }
  | { transaction_id: string }
  | { owner: string; signature: string };

/** A role member's call through the roles module: its vault wallet's customer-signed kind-1 intent (docs/platform/tokenization.md "module-signature"). */
export interface ModuleSignatureInput extends SignedIntentInput { role_key: number }

export interface OperationFilters { state?: OperationState | undefined; kind?: string | undefined }

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

const sameHex = (b: Uint8Array, h: string) => toHex(b).toLowerCase() === h.toLowerCase();

export function storedSafeTx(tx: SafeTransaction): StoredSafeTx {
  return {
    to: tx.to.toLowerCase(), value: tx.value.toString(), data: tx.data.toLowerCase(), operation: tx.operation, safe_tx_gas: tx.safeTxGas.toString(), base_gas: tx.baseGas.toString(),
    gas_price: tx.gasPrice.toString(), gas_token: tx.gasToken.toLowerCase(), refund_receiver: tx.refundReceiver.toLowerCase(), nonce: tx.nonce.toString(),
  };
}

export function safeTxOf(s: StoredSafeTx): SafeTransaction {
  return {
    to: getAddress(s.to), value: BigInt(s.value), data: s.data as Hex, operation: s.operation, safeTxGas: BigInt(s.safe_tx_gas), baseGas: BigInt(s.base_gas),
    gasPrice: BigInt(s.gas_price), gasToken: getAddress(s.gas_token), refundReceiver: getAddress(s.refund_receiver), nonce: BigInt(s.nonce),
  };
}

/** A vault wallet's own call on the token (policy_mint, nft_transfer), not a Safe transaction. */
export const isVaultCall = (r: TokenOperationRecord): r is VaultCallRecord => r.via === 'vault_transaction';

/**
 * The operation as the API shows it: a Safe operation with the kind-3 intent fields each owner vault that has
 * not signed must sign; a vault call with its vault transaction and no Safe fields.
 */
export function operationView(r: TokenOperationRecord, token: TokenRecord) {
  const common = {
    id: r.id, token_id: r.token_id, kind: r.kind, params: r.params, state: r.state, chain: r.chain, chain_id: r.chain_id,
  };
  const tail = { tx_hash: r.tx_hash, failure: r.failure, created_at: r.created_at, updated_at: r.updated_at, executed_at: r.executed_at, confirmed_at: r.confirmed_at };
  if (isVaultCall(r)) {
    return {
      ...common, via: r.via, safe: null, safe_tx: null, safe_tx_hash: null, safe_nonce: null, threshold: null, signatures: [], pending_intents: [], module_execution: null, reproposals: 0,
      vault_call: { ...r.vault_call }, ...tail,
    };
  }
  const signed = new Set(r.signatures.map((s) => s.owner));
  const open = OPEN_OPERATION_STATES.includes(r.state);
  return {
    ...common, via: 'safe' as const, safe: r.safe as string | null,
    safe_tx: r.safe_tx as StoredSafeTx | null, safe_tx_hash: r.safe_tx_hash as string | null, safe_nonce: r.safe_tx.nonce as string | null, threshold: r.threshold as number | null,
    signatures: r.signatures.map((s) => ({ owner: s.owner, how: s.how, wallet_id: s.wallet_id, transaction_id: s.transaction_id, signature: s.signature, at: s.at })),
    pending_intents: open ? token.owners.filter((o) => o.kind === 'vault' && !signed.has(o.address)).map((o) => ({
      kind: 'evm.safe_tx' as const, organization: token.org, wallet_id: o.wallet_id!, chain_id: r.chain_id, owner: o.address, safe: r.safe,
      to: r.safe_tx.to, value: r.safe_tx.value, data: r.safe_tx.data, operation: r.safe_tx.operation, safe_tx_gas: r.safe_tx.safe_tx_gas, base_gas: r.safe_tx.base_gas,
      gas_price: r.safe_tx.gas_price, gas_token: r.safe_tx.gas_token, refund_receiver: r.safe_tx.refund_receiver, safe_nonce: r.safe_tx.nonce,
    })) : [],
    module_execution: r.module_execution ? { module: r.module_execution.module, role_key: r.module_execution.role_key, member: r.module_execution.member, wallet_id: r.module_execution.wallet_id, transaction_id: r.module_execution.transaction_id, at: r.module_execution.at } : null,
    reproposals: r.reproposals, vault_call: null, ...tail,
  };
}
export type OperationView = ReturnType<typeof operationView>;

export const operationIndex = (r: OperationRecord): string[] => [`${r.token_id}\x00all\x00${r.id}`, `safe\x00${r.safe}\x00${r.id}`];

export class OperationService {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly o: OperationServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  private lock<T>(safe: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`tokenization:safe:${safe}`, fn);
  }

  /** Resolves once every execution run this process started has ended. */
  async settled(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  private chainOf(token: TokenRecord): TokenChain {
    const c = this.o.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    return c;
  }

  /** Any operation of the token: a Safe operation or a vault call. */
  async get(scope: Scope, tokenId: string, id: string): Promise<{ op: TokenOperationRecord; token: TokenRecord }> {
    const token = await this.o.tokens.get(scope, tokenId);
    const op = OPERATION_ID.test(id) ? await OPERATIONS.in(this.o.store).get(id) : undefined;
    if (!op || op.token_id !== token.id) throw new CustodyError('not_found', `no operation ${id} of token ${tokenId}`);
    return { op, token };
  }

  /** A Safe operation of the token; a vault call is 409 (it has no Safe transaction to sign). */
  private async getSafeOp(scope: Scope, tokenId: string, id: string): Promise<{ op: OperationRecord; token: TokenRecord }> {
    const { op, token } = await this.get(scope, tokenId, id);
    if (isVaultCall(op)) throw new CustodyError('conflict', `operation ${id} is a ${op.kind} by a vault wallet; it has no Safe transaction and takes no signatures`);
    return { op, token };
  }

  async list(scope: Scope, tokenId: string, f: OperationFilters, cursor: string | undefined, limit: number): Promise<PageResult<OperationView>> {
    const token = await this.o.tokens.get(scope, tokenId);
    const filters = { ...f, token: tokenId };
    const after = this.o.cursors.decode(cursor, 'token_operations', scope.workspace, filters);
    const keep = (r: TokenOperationRecord) => (!f.state || r.state === f.state) && (!f.kind || r.kind === f.kind);
    const rows = await filteredWalk(this.o.store, OPERATIONS, `${token.id}\x00all\x00`, after, limit, keep);
    const page = pageOf(this.o.cursors, rows, limit, 'token_operations', scope.workspace, filters);
    return { ...page, data: page.data.map((r) => operationView(r, token)) };
  }

  /** The Safe's open operations, lowest nonce first. */
  private async openOf(safe: string): Promise<OperationRecord[]> {
    const all = (await OPERATIONS.in(this.o.store).byIndex(`safe\x00${safe}\x00`)).filter((r): r is OperationRecord => !isVaultCall(r));
    return all.filter((r) => OPEN_OPERATION_STATES.includes(r.state) || r.state === 'executed').sort((a, b) => Number(BigInt(a.safe_tx.nonce) - BigInt(b.safe_tx.nonce)));
  }

  /** Proposes an operation at the Safe's next free nonce; a retry with the same Idempotency-Key and body answers the same one. */
  async propose(scope: Scope, actor: Actor, tokenId: string, kind: OperationKind | RegistryOperationKind, body: Record<string, unknown>, key: string): Promise<{ op: OperationRecord; token: TokenRecord }> {
    const keyId = `${scope.workspace}\x00op_${tokenId}_${kind}\x00${key}`;
    const fingerprint = bodyFingerprint(body);
    const prior = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
    if (prior) {
      if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
      return this.getSafeOp(scope, tokenId, prior.id);
    }
    const token = await this.o.tokens.get(scope, tokenId);
    // raw-safe-tx with {roles_module} configures the token's roles module (api/tokenization/roles-module-calls.ts).
    const roles = kind === 'raw_safe_tx' && body.roles_module !== undefined ? rolesModuleCall(token, body.roles_module) : undefined;
    if (roles && Object.keys(body).length > 1) throw invalid('roles_module', 'goes alone: the Safe transaction follows from the action');
    const call = roles?.call ?? operationCall(token.kind, getAddress(token.address), kind, body);
    const recordKind = roles?.kind ?? kind;
    if (call.operation === 1 && !SAFE_DELEGATECALL_TARGETS.includes(call.to.toLowerCase())) throw invalid('operation', `a delegatecall may only go to Safe's MultiSendCallOnly (${SAFE_DELEGATECALL_TARGETS.join(', ')})`);
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${tokenId} is ${token.status}; operations need it deployed`);
    const chain = this.chainOf(token);
    // The module the Safe is asked to enable exists first (deterministic, idempotent; the service deployer pays).
    if (roles?.deployModifier) await deployRolesModifier(chain.client, chain.sender, token.id, getAddress(token.safe)).catch((err: unknown) => { throw ChainStepError.from(err, 'deploying the roles modifier'); });
    return this.lock(token.safe, async () => {
      const again = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
      if (again) return this.getSafeOp(scope, tokenId, again.id);
      let next: bigint;
      try {
        next = await readSafeNonce(chain.client, getAddress(token.safe));
      } catch (err) {
        throw new CustodyError('chain_backend_error', `reading the Safe's nonce: ${failureOf(err).kind === 'engine' ? (failureOf(err) as { message: string }).message : 'reverted'}`);
      }
      for (const r of await this.openOf(token.safe)) if (BigInt(r.safe_tx.nonce) >= next) next = BigInt(r.safe_tx.nonce) + 1n;
      const tx = safeTransaction({ to: call.to, data: call.data, value: call.value, operation: call.operation, nonce: next });
      const now = this.iso();
      const op: OperationRecord = {
        v: 1, id: newId('op', this.o.clock()), token_id: token.id, tenant: token.tenant, workspace: token.workspace, kind: recordKind, params: body, safe: token.safe, chain: token.chain, chain_id: token.chain_id,
        safe_tx: storedSafeTx(tx), safe_tx_hash: safeTxHash(getAddress(token.safe), token.chain_id, tx), state: 'proposed', threshold: token.threshold, signatures: [], reproposals: 0,
        tx_hash: null, failure: null, created_at: now, updated_at: now, executed_at: null, confirmed_at: null,
      };
      await this.o.store.batch([
        OPERATIONS.putOp(op.id, op, { index: operationIndex(op) }),
        TOKENIZATION_KEYS.putOp(keyId, { v: 1, id: op.id, fingerprint }),
        this.o.audit.op(scope, actor, `tokenization.operation.propose`, op.id, null, { token_id: token.id, kind: recordKind, safe_tx_hash: op.safe_tx_hash, nonce: op.safe_tx.nonce }),
      ]);
      return { op, token };
    });
  }

  /** The intent's SafeTx must be the operation's, field by field; else 422 safe_tx_mismatch. */
  private checkIntent(op: OperationRecord, token: TokenRecord, intent: SafeTxIntent, walletId: string): void {
    const s = op.safe_tx;
    const hex = (b: Uint8Array) => toHex(b).toLowerCase();
    const same = intent.organization === token.org && intent.walletId === walletId && Number(intent.chainId) === op.chain_id && hex(intent.safe) === op.safe
      && hex(intent.to) === s.to && intent.value.toString() === s.value && hex(intent.data) === s.data && intent.operation === s.operation
      && intent.safeTxGas.toString() === s.safe_tx_gas && intent.baseGas.toString() === s.base_gas && intent.gasPrice.toString() === s.gas_price
      && hex(intent.gasToken) === s.gas_token && hex(intent.refundReceiver) === s.refund_receiver && intent.safeNonce.toString() === s.nonce;
    if (!same) throw new CustodyError('safe_tx_mismatch', `the intent is over another Safe transaction than operation ${op.id}'s (${op.safe_tx_hash} at Safe nonce ${s.nonce})`);
  }

  private ownerVault(token: TokenRecord, walletId: string) {
    const o = token.owners.find((x) => x.kind === 'vault' && x.wallet_id === walletId);
    if (!o) throw invalid('wallet_id', `wallet ${walletId} is not a vault owner of token ${token.id}'s Safe`);
    return o;
  }

  private async waitSigned(org: string, txId: string) {
    const transactions = this.o.transactions!;
    // Wall time, not the service clock: this waits on the signer cluster.
    const started = Date.now();
    for (;;) {
      const tx = await transactions.get(org, txId);
      if (tx.state === 'signed' && tx.signature) return tx;
      if (['rejected', 'failed', 'expired'].includes(tx.state)) throw new CustodyError('refused', `vault transaction ${txId} ended ${tx.state}: ${tx.reason ?? 'no signature'}`);
      if (Date.now() - started > this.o.signatureWaitMs) {
        throw new CustodyError('signature_pending', `vault transaction ${txId} is ${tx.state}; post {"transaction_id": "${txId}"} once it is signed`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Adds one owner's signature; at the threshold the operation is ready and its execution starts. */
  async addSignature(scope: Scope, actor: Actor, tokenId: string, id: string, input: SignatureInput): Promise<{ op: OperationRecord; token: TokenRecord }> {
    const { op: op0, token } = await this.getSafeOp(scope, tokenId, id);
    if (!OPEN_OPERATION_STATES.includes(op0.state)) throw new CustodyError('conflict', `operation ${id} is ${op0.state}; it takes no more signatures`);
    let sig: OperationSignature;
    const now = this.iso();
    if ('owner' in input) {
      const owner = token.owners.find((o) => o.address === input.owner.toLowerCase());
      if (!owner || owner.kind !== 'outside') throw invalid('owner', 'not an outside owner of the token\'s Safe (a vault owner signs through its kind-3 intent)');
      sig = { owner: owner.address, how: 'eip712', wallet_id: null, transaction_id: null, signature: input.signature.toLowerCase(), at: now };
    } else {
      if (!this.o.transactions) throw new CustodyError('tokenization_unavailable', 'vault signatures need the vault API\'s transactions, which this service does not run');
      let tx;
      let how: OperationSignature['how'];
      let walletId: string;
      if ('transaction_id' in input) {
        if (!TX_ID.test(input.transaction_id)) throw invalid('transaction_id', 'not a transaction id');
        tx = await this.o.transactions.get(token.org, input.transaction_id).catch(() => undefined);
        if (!tx || tx.kind !== 'safe_tx') throw invalid('transaction_id', 'no Safe owner signature transaction of this organization with that id');
        walletId = tx.wallet_id;
        this.ownerVault(token, walletId);
        this.checkIntent(op0, token, decodeIntent(viemHexToBytes(`0x${tx.intent.replace(/^0x/, '')}`)) as SafeTxIntent, walletId);
        if (tx.state !== 'signed' || !tx.signature) throw new CustodyError('conflict', `vault transaction ${tx.id} is ${tx.state}, not signed`);
        how = 'vault_transaction';
      } else {
        walletId = input.wallet_id;
        this.ownerVault(token, walletId);
        const { intent } = decodeIntentHex(input.intent);
        if (intent.kind !== 'evm.safe_tx') throw invalid('intent', 'not a Safe transaction intent (kind 3)');
        this.checkIntent(op0, token, intent, walletId);
        const submitted = await submitVaultIntent(this.o.transactions, token.org, input, intent);
        tx = await this.waitSigned(token.org, submitted.id);
        how = 'vault_intent';
      }
      sig = { owner: this.ownerVault(token, walletId).address, how, wallet_id: walletId, transaction_id: tx.id, signature: tx.signature!.toLowerCase(), at: now };
    }
    let signer: string;
    try {
      signer = (await recoverAddress({ hash: op0.safe_tx_hash as Hex, signature: sig.signature as Hex })).toLowerCase();
    } catch {
      throw new CustodyError('safe_signature_invalid', 'the signature does not parse as a 65-byte ECDSA signature');
    }
    if (signer !== sig.owner) throw new CustodyError('safe_signature_invalid', `the signature over ${op0.safe_tx_hash} is by ${signer}, not the owner ${sig.owner}`);
    const chain = this.chainOf(token);
    const owners = (await chain.client.readContract({ address: getAddress(token.safe), abi: SAFE_ABI, functionName: 'getOwners' }).catch(() => undefined))?.map((a) => a.toLowerCase());
    if (!owners) throw new CustodyError('chain_backend_error', 'could not read the Safe\'s owners');
    if (!owners.includes(signer)) throw new CustodyError('safe_signature_invalid', `${signer} is not a current owner of Safe ${token.safe}`);

    const result = await this.lock(token.safe, async () => {
      const op = (await OPERATIONS.in(this.o.store).get(id)) as OperationRecord;
      if (op.safe_tx_hash !== op0.safe_tx_hash) throw new CustodyError('conflict', `operation ${id} moved to Safe nonce ${op.safe_tx.nonce} while this signature was made; sign its new SafeTx`);
      if (op.signatures.some((s) => s.owner === sig.owner)) return op;
      if (!OPEN_OPERATION_STATES.includes(op.state)) throw new CustodyError('conflict', `operation ${id} is ${op.state}; it takes no more signatures`);
      const signatures = [...op.signatures, sig];
      const state: OperationState = signatures.length >= op.threshold ? 'ready' : 'collecting_signatures';
      if (!operationMayBecome(op.state, state)) throw new CustodyError('conflict', `operation ${id} is ${op.state}`);
      const next: OperationRecord = { ...op, signatures, state, updated_at: this.iso() };
      await this.o.store.batch([OPERATIONS.putOp(id, next, { index: operationIndex(next) }), this.o.audit.op(scope, actor, 'tokenization.operation.sign', id, { state: op.state }, { state, owner: sig.owner, how: sig.how })]);
      return next;
    });
    if (result.state === 'ready') this.start(token);
    return { op: result, token };
  }

  /**
   * At boot: drives every Safe that has an operation left `ready` or `executed` (a restart between signing and
   * confirming), so it executes or confirms without another request. Nothing is sent twice: each run reads the
   * Safe's nonce and its ExecutionSuccess events first.
   */
  async resumeAll(): Promise<void> {
    const safes = new Map<string, TokenRecord>();
    for await (const op of this.o.store.all<TokenOperationRecord>('token_operations')) {
      if (isVaultCall(op)) continue;
      if ((op.state === 'ready' || op.state === 'executed') && !safes.has(op.safe)) {
        const token = await this.o.tokens.get({ tenant: op.tenant, workspace: op.workspace }, op.token_id).catch(() => undefined);
        if (token) safes.set(op.safe, token);
      }
      if (op.state === 'submitted') {
        const token = await this.o.tokens.get({ tenant: op.tenant, workspace: op.workspace }, op.token_id).catch(() => undefined);
        if (token) this.track(this.followModule(token, op.id), token);
      }
    }
    for (const token of safes.values()) this.start(token);
  }

  /**
   * Runs the operation through the token's roles module instead of the Safe's signatures: the member vault
   * wallet's customer-signed kind-1 intent must call the modifier with `execTransactionWithRole(to, value,
   * data, operation, role_key, true)` of exactly this operation's Safe transaction (anything else is 422
   * module_call_mismatch), and the call must pass the modifier now (simulated from the member: a call its role
   * does not allow is 422 module_call_refused with the module's decoded error). Then, under the Safe's lock,
   * the intent goes through the vault transaction path, the operation becomes `submitted` and its Safe nonce is
   * freed (every later open operation moves one nonce down); it is confirmed once the member's transaction is
   * mined with the Safe's ExecutionFromModuleSuccess. Nothing changes on a refusal.
   */
  async moduleSignature(scope: Scope, actor: Actor, tokenId: string, id: string, input: ModuleSignatureInput): Promise<{ op: OperationRecord; token: TokenRecord }> {
    const { op: op0, token } = await this.getSafeOp(scope, tokenId, id);
    const { intent } = decodeIntentHex(input.intent);
    // A retry of the same submission answers the operation as it is.
    if (op0.module_execution && op0.module_execution.wallet_id === input.wallet_id && op0.module_execution.idempotency_key === intent.idempotencyKey) return { op: op0, token };
    const transactions = this.o.transactions;
    if (!transactions) throw new CustodyError('tokenization_unavailable', 'a module execution needs the vault API\'s transactions, which this service does not run');
    return releaseNonceOnRefusal(transactions, token.org, input.wallet_id, intent, () => this.executeThroughModule(scope, actor, op0, token, input, intent, transactions));
  }

  private async executeThroughModule(scope: Scope, actor: Actor, op0: OperationRecord, token: TokenRecord, input: ModuleSignatureInput, intent: Intent, transactions: TransactionService): Promise<{ op: OperationRecord; token: TokenRecord }> {
    const id = op0.id;
    this.moduleOpen(op0);
    const chain = this.chainOf(token);
    const safe = getAddress(token.safe);
    const modifier = rolesModifierAddress(token.id, safe);
    const state = await rolesModuleState(chain.client, safe, modifier).catch(() => {
      throw new CustodyError('chain_backend_error', 'could not read the roles module\'s state on chain');
    });
    if (!state.enabled) throw new CustodyError('conflict', `the token's roles module ${modifier} is not enabled on its Safe: propose raw-safe-tx {"roles_module": {"action": "enable"}} first`);
    if (intent.kind !== 'evm.transfer') throw invalid('intent', 'not an EVM transaction intent (kind 1): the member wallet calls the roles module itself');
    const tx = safeTxOf(op0.safe_tx);
    const data = execWithRoleData(tx, input.role_key);
    const same = intent.organization === token.org && intent.walletId === input.wallet_id && Number(intent.chainId) === op0.chain_id && sameHex(intent.to, modifier)
      && intent.asset.kind === 'native' && intent.amount === 0n && sameHex(intent.data, data);
    if (!same) throw new CustodyError('module_call_mismatch', `the intent is not the call execTransactionWithRole(${tx.to}, ${tx.value}, <operation ${id}'s data>, ${tx.operation}, ${input.role_key}, true) on the roles module ${modifier} with no value, from wallet ${input.wallet_id} on chain ${op0.chain_id}`);
    const member = getAddress(toHex(intent.from));
    const refused = await this.simulateModuleCall(chain, safe, tx, member, modifier, data);
    if (refused) throw new CustodyError('module_call_refused', `the roles module refuses the call from ${member} with role ${input.role_key}: ${refused.kind === 'reverted' ? refused.reason : refused.message}`);

    const result = await this.lock(token.safe, async () => {
      const op = (await OPERATIONS.in(this.o.store).get(id)) as OperationRecord;
      if (op.module_execution && op.module_execution.wallet_id === input.wallet_id && op.module_execution.idempotency_key === intent.idempotencyKey) return op;
      if (op.safe_tx_hash !== op0.safe_tx_hash) throw new CustodyError('conflict', `operation ${id} moved to Safe nonce ${op.safe_tx.nonce} while this was checked; post again`);
      this.moduleOpen(op);
      // Under the lock, so the Safe cannot execute the operation too: once submitted, the signed intent can run.
      const vaultTx = await submitVaultIntent(transactions, token.org, input, intent);
      const now = this.iso();
      const execution: ModuleExecution = { module: modifier.toLowerCase(), role_key: input.role_key, member: member.toLowerCase(), wallet_id: input.wallet_id, transaction_id: vaultTx.id, idempotency_key: intent.idempotencyKey, at: now };
      const next: OperationRecord = { ...op, state: 'submitted', module_execution: execution, updated_at: now };
      if (!operationMayBecome(op.state, next.state)) throw new CustodyError('conflict', `operation ${id} is ${op.state}`);
      await this.o.store.batch([
        OPERATIONS.putOp(id, next, { index: operationIndex(next) }),
        ...(await this.freeNonceOps(scope, op, now)),
        this.o.audit.op(scope, actor, 'tokenization.operation.module_execute', id, { state: op.state }, { state: next.state, module: execution.module, role_key: execution.role_key, member: execution.member, transaction_id: execution.transaction_id }),
      ]);
      return next;
    });
    if (result.state === 'submitted') this.track(this.followModule(token, id), token);
    return { op: result, token };
  }

  /** An operation a module execution may take: open, and not `ready` (its collected signatures would let the Safe run it too). */
  private moduleOpen(op: OperationRecord): void {
    if (!OPEN_OPERATION_STATES.includes(op.state)) throw new CustodyError('conflict', `operation ${op.id} is ${op.state}`);
    if (op.state === 'ready') throw new CustodyError('conflict', `operation ${op.id} is ready: it has the Safe's threshold of signatures and executes through the Safe`);
  }

  /** Why the member's call would fail now (the module's own error, or the token's when the Safe's call reverts), or undefined. */
  private async simulateModuleCall(chain: TokenChain, safe: Address, tx: SafeTransaction, member: Address, modifier: Address, data: Hex): Promise<ChainFailure | undefined> {
    try {
      await chain.client.call({ account: member, to: modifier, data });
      return undefined;
    } catch (err) {
      const f = failureOf(err);
      if (f.kind === 'engine') throw new CustodyError('chain_backend_error', `simulating the module call: ${f.message}`);
      // The modifier allowed it and the Safe's call reverted: say why, as for a Safe execution.
      if (f.errorName === 'ModuleTransactionFailed') {
        const inner = await explainInnerFailure(chain.client, safe, tx).catch(() => undefined);
        if (inner?.kind === 'reverted') return { ...inner, reason: `${inner.reason} (the module reverted with ModuleTransactionFailed)` };
      }
      return f;
    }
  }

  private track(p: Promise<void>, token: TokenRecord): void {
    const q = p.catch((err: unknown) => this.o.log?.warn({ category: (err as { code?: string }).code ?? 'error', safe: token.safe }, 'token operation run failed'));
    this.running.add(q);
    void q.finally(() => this.running.delete(q));
  }

  /**
   * Follows a submitted module execution's vault transaction to its end: confirmed once the member's
   * transaction is mined with the Safe's ExecutionFromModuleSuccess for the module; failed when the vault
   * transaction ends failed or rejected, or the transaction reverted.
   */
  private async followModule(token: TokenRecord, id: string): Promise<void> {
    const chain = this.chainOf(token);
    const scope = { tenant: token.tenant, workspace: token.workspace };
    for (;;) {
      const op = await OPERATIONS.in(this.o.store).get(id);
      if (!op || isVaultCall(op) || op.state !== 'submitted' || !op.module_execution) return;
      const m = op.module_execution;
      const vaultTx = await this.o.transactions!.get(token.org, m.transaction_id);
      if (vaultTx.state === 'failed' || vaultTx.state === 'rejected') {
        const revert = vaultTx.reason?.startsWith('would_revert');
        await this.lock(token.safe, () => this.fail(scope, op, { reason: revert ? 'revert' : 'engine', message: `vault transaction ${vaultTx.id} ended ${vaultTx.state}: ${vaultTx.reason ?? 'no reason'}`, error_name: null, at: this.iso() }));
        return;
      }
      if (vaultTx.tx_hash && ['broadcast', 'confirmed', 'final'].includes(vaultTx.state)) {
        const receipt = await chain.client.getTransactionReceipt({ hash: vaultTx.tx_hash as Hex }).catch(() => undefined);
        if (receipt) {
          const events = parseEventLogs({ abi: SAFE_ABI, logs: receipt.logs.filter((l) => l.address.toLowerCase() === token.safe) });
          const ok = receipt.status === 'success' && events.some((e) => e.eventName === 'ExecutionFromModuleSuccess' && e.args.module.toLowerCase() === m.module);
          if (ok) {
            await this.lock(token.safe, () => this.confirm(scope, op, receipt.transactionHash));
          } else {
            const why = await this.simulateModuleCall(chain, getAddress(token.safe), safeTxOf(op.safe_tx), getAddress(m.member), getAddress(m.module), execWithRoleData(safeTxOf(op.safe_tx), m.role_key)).catch(() => undefined);
            await this.lock(token.safe, () => this.fail(scope, op, why?.kind === 'reverted'
              ? { reason: 'revert', message: `the member's transaction ${receipt.transactionHash} reverted: ${why.reason}`, error_name: why.errorName, at: this.iso() }
              : { reason: 'revert', message: `the member's transaction ${receipt.transactionHash} reverted`, error_name: null, at: this.iso() }));
          }
          return;
        }
      }
      await new Promise((r) => setTimeout(r, MODULE_FOLLOW_MS));
    }
  }

  private start(token: TokenRecord): void {
    this.track(this.drive(token), token);
  }

  /** Executes the Safe's ready operations in nonce order, each at the Safe's next nonce, until one is not ready. */
  private async drive(token: TokenRecord): Promise<void> {
    const chain = this.chainOf(token);
    const safe = getAddress(token.safe);
    await this.lock(token.safe, async () => {
      for (;;) {
        const open = await this.openOf(token.safe);
        const op = open[0];
        if (!op) return;
        const scope = { tenant: op.tenant, workspace: op.workspace };
        let nonce: bigint;
        try {
          nonce = await readSafeNonce(chain.client, safe);
        } catch (err) {
          if (op.state !== 'ready') throw err;
          const f = failureOf(err);
          await this.fail(scope, op, { reason: 'engine', message: f.kind === 'engine' ? f.message : f.reason, error_name: null, at: this.iso() });
          continue;
        }
        const opNonce = BigInt(op.safe_tx.nonce);
        if (op.state === 'executed' && op.tx_hash && nonce > opNonce) {
          // Its receipt showed ExecutionSuccess for this hash when it was recorded executed.
          await this.confirm(scope, op, op.tx_hash as Hex);
          continue;
        }
        if (op.state === 'executed' || opNonce < nonce) {
          // Sent before a stop and not recorded, or the nonce used elsewhere: the Safe's ExecutionSuccess
          // events for this hash tell which (a scan from genesis: this is the rare path).
          const logs = await chain.client.getLogs({ address: safe, event: EXECUTION_SUCCESS, args: { txHash: op.safe_tx_hash as Hex }, fromBlock: 0n });
          if (logs[0]) {
            await this.confirm(scope, op, logs[0].transactionHash);
            continue;
          }
          if (opNonce < nonce) {
            await this.fail(scope, op, { reason: 'engine', message: `Safe nonce ${opNonce} was used by another transaction`, error_name: null, at: this.iso() }, true);
            continue;
          }
          return;
        }
        if (opNonce !== nonce || op.state !== 'ready') return;
        const tx = safeTxOf(op.safe_tx);
        try {
          const packed = await packSafeSignatures(op.safe_tx_hash as Hex, op.signatures.map((s) => ({ owner: s.owner as Address, signature: s.signature as Hex })));
          const done = await executeSafeTransaction(chain.client, chain.sender, safe, tx, packed);
          const executed: OperationRecord = { ...op, state: 'executed', tx_hash: done.receipt.transactionHash, executed_at: this.iso(), updated_at: this.iso() };
          await this.o.store.batch([OPERATIONS.putOp(op.id, executed, { index: operationIndex(executed) })]);
        } catch (err) {
          const f = failureOf(err);
          // An engine error after sending may still have executed it: the next turn reads the chain.
          if (f.kind === 'engine' && await readSafeNonce(chain.client, safe).then((n) => n > opNonce).catch(() => false)) continue;
          await this.fail(scope, op, f.kind === 'reverted'
            ? { reason: 'revert', message: f.reason, error_name: f.errorName, at: this.iso() }
            : { reason: 'engine', message: f.message, error_name: null, at: this.iso() });
        }
      }
    });
  }

  private async confirm(scope: Scope, op: OperationRecord, txHash: Hex): Promise<void> {
    const now = this.iso();
    const done: OperationRecord = { ...op, state: 'confirmed', tx_hash: txHash, executed_at: op.executed_at ?? now, confirmed_at: now, updated_at: now, ...this.o.confirmed?.pending };
    await this.o.deliveries.emitAll(scope, [{ type: 'tokenization.operation.confirmed', resource: { type: 'token_operation', id: op.id }, actor: { type: 'system', id: 'tokenization' }, data: { token_id: op.token_id, operation_id: op.id, kind: op.kind, tx_hash: txHash } }],
      [OPERATIONS.putOp(op.id, done, { index: operationIndex(done) })]);
    await this.o.confirmed?.notify(done);
  }

  /**
   * `op`'s Safe nonce is freed (it failed, or runs through the module). The Safe's nonce moves only by
   * executing, so the operations after it cannot run at theirs until something executes at the freed one:
   * - when no later open operation holds its threshold of signatures, each moves one nonce down, its
   *   signatures dropped: they were over the old hash and, fewer than the threshold, can never execute it;
   * - when one does, nothing moves: its signatures would stay valid at its old nonce, and once it executed
   *   one nonce down, whoever holds them (the store, a reverted `execTransaction`'s calldata) could execute the
   *   same call again at the old one. Instead a rejection (the Safe calling itself with no value and no data)
   *   is proposed at the freed nonce; once owners sign it and it executes, the later ones run where they were
   *   signed, and the failed operation's own signatures die with the nonce.
   * Run under the Safe's lock.
   */
  private async freeNonceOps(scope: Scope, op: OperationRecord, at: string): Promise<Op[]> {
    const later = (await this.openOf(op.safe)).filter((r) => r.id !== op.id && BigInt(r.safe_tx.nonce) > BigInt(op.safe_tx.nonce) && r.state !== 'executed');
    if (!later.length) return [];
    // A Safe whose threshold went down since an operation was proposed executes it with fewer signatures than it
    // recorded; when the chain cannot say, any signature counts.
    const onChain = await this.o.chain(op.chain)?.client.readContract({ address: getAddress(op.safe), abi: SAFE_ABI, functionName: 'getThreshold' }).then(Number).catch(() => undefined);
    const executable = (r: OperationRecord) => r.signatures.length > 0 && r.signatures.length >= Math.min(r.threshold, onChain ?? 1);
    if (later.some(executable)) {
      const tx = safeTransaction({ to: getAddress(op.safe), data: '0x', nonce: BigInt(op.safe_tx.nonce) });
      const rejection: OperationRecord = {
        v: 1, id: newId('op', this.o.clock()), via: 'safe', token_id: op.token_id, tenant: op.tenant, workspace: op.workspace, kind: NONCE_REJECTION, params: { freed_by: op.id },
        safe: op.safe, chain: op.chain, chain_id: op.chain_id, safe_tx: storedSafeTx(tx), safe_tx_hash: safeTxHash(getAddress(op.safe), op.chain_id, tx), state: 'proposed',
        threshold: op.threshold, signatures: [], reproposals: 0, tx_hash: null, failure: null, created_at: at, updated_at: at, executed_at: null, confirmed_at: null,
      };
      return [
        OPERATIONS.putOp(rejection.id, rejection, { index: operationIndex(rejection) }),
        this.o.audit.op(scope, { type: 'system', id: 'tokenization' }, 'tokenization.operation.propose', rejection.id, null, { token_id: op.token_id, kind: NONCE_REJECTION, safe_tx_hash: rejection.safe_tx_hash, nonce: rejection.safe_tx.nonce, freed_by: op.id }),
      ];
    }
    return later.map((r) => {
      const tx = { ...safeTxOf(r.safe_tx), nonce: BigInt(r.safe_tx.nonce) - 1n };
      const moved: OperationRecord = {
        ...r, safe_tx: storedSafeTx(tx), safe_tx_hash: safeTxHash(getAddress(r.safe), r.chain_id, tx), state: 'proposed', signatures: [], reproposals: r.reproposals + 1, updated_at: at,
      };
      return OPERATIONS.putOp(r.id, moved, { index: operationIndex(moved) });
    });
  }

  /** Ends `op` failed; an operation that held a Safe nonce frees it (later ones move down). */
  private async fail(scope: Scope, op: OperationRecord, failure: OperationFailure, nonceUsed = false): Promise<void> {
    const failed: OperationRecord = { ...op, state: 'failed', failure, updated_at: failure.at };
    // A submitted module execution freed its nonce when it was submitted; a nonce another transaction used is not free.
    const ops: Op[] = [OPERATIONS.putOp(op.id, failed, { index: operationIndex(failed) }), ...(op.state === 'submitted' || nonceUsed ? [] : await this.freeNonceOps(scope, op, failure.at))];
    await this.o.deliveries.emitAll(scope, [{
      type: 'tokenization.operation.failed', resource: { type: 'token_operation', id: op.id }, actor: { type: 'system', id: 'tokenization' },
      data: { token_id: op.token_id, operation_id: op.id, kind: op.kind, reason: failure.reason === 'revert' ? 'onchain_revert' : 'engine_error', error: failure.message },
    }], ops);
  }
}
