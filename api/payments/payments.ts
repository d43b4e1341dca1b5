// Payments (docs/platform/payments.md): an ERC-20 amount from a payer account holder's wallet to another
// holder of the workspace or to an address, with its fees moved on chain as transfers of their own to
// the tenant's and the platform's collectors. A payment is priced and checked by the quote's code
// (payment-quotes.ts `evaluate`), answered as `requires_authorization` with its transfers, and approved by
// the payer's member as one batch member action (`purpose {type: "payment"}`): the authorizer here checks
// the batch's intents are exactly the transfers. States move through payment-states.ts, each transition
// under the payment's lock against the stored state, with its history entry, its ledger entries (on
// `confirmed`) and its webhook event in one batch. `advance` drives a payment as far as it goes now and is
// safe to repeat; the sweep (`runDue`) calls it for every open payment.
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { httpStatusOfCode } from '../../core/errors/http-status.ts';
import { decodeIntent, type Intent } from '../../core/intents/intent.ts';
import type { Op } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type PageResult } from '../store/pagination.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { Envelope } from '../webhooks/delivery-engine.ts';
import { FieldValidationError, type FieldError } from '../validation.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { holderStablecoin, type Posting } from '../ledger/platform-ledger.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../account-holders/collections.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { WALLETS } from '../vaults/collections.ts';
import { TRANSACTIONS } from '../transactions/collections.ts';
import type { TransactionRecord } from '../transactions/records.ts';
import { parseAsset } from '../fees/base-units.ts';
import { FEE_SCHEDULES } from '../fees/collections.ts';
import { collectorOf } from '../fees/fee-schedules.ts';
import type { PaymentKind } from '../fees/fee-rule.ts';
import type { PaymentQuoteRecord, PaymentQuotes, QuoteInput } from './payment-quotes.ts';
import type { FeeCollectors } from './payment-fee-collectors.ts';
import { PAYMENT_EVENTS, PAYMENT_KEYS, PAYMENTS } from './collections.ts';
import { PAYMENT_FINAL, paymentMayBecome, type PaymentFailureReason, type PaymentStatus } from './payment-states.ts';
import type { PaymentEventRecord, PaymentRecord, PaymentTransaction, PaymentTransfer, TransferRole } from './payment-records.ts';
import { purposeLock, type MemberActions, type PurposeCheck } from '../member-auth/member-actions.ts';
import type { MoneyFlowDeps } from '../ledger/money-flow-deps.ts';
import { ComplianceCases } from './compliance-cases.ts';

export const PAYMENT_ID = /^pay_[0-9a-f]{26}$/;
/** The lock every change of a payment's state holds: the one member-actions holds around the authorizer and the action's commit. */
const lockOf = (id: string) => purposeLock('payment', id);

/** What POST /payments takes (and a payment request's approval passes on). */
export interface CreatePaymentInput {
  source_wallet_id: string;
  destination: { account_holder_id: string } | { address: string };
  amount: string;
  asset: string;
  /** A quote of this workspace for exactly this payment, not expired: its fees are the payment's. */
  quote_id?: string | undefined;
  /** Go ahead although a compliance check asks for review (the caller reviewed it). */
  accept_review?: boolean | undefined;
}

/** Who made the payment, besides the key: a payment request's approval. */
export interface CreatePaymentOptions {
  kind?: 'transfer' | 'payment_request';
  reference?: { type: 'payment_request'; id: string };
}

/** What payments use of member actions (api/member-auth/member-actions.ts). */
export type PaymentMemberActions = Pick<MemberActions, 'registerPurpose' | 'batchTransactions' | 'revoke'>;

/** `store` is the one store of both APIs (server.ts): wallets, transactions and the platform's records. */
export interface PaymentServiceOptions extends MoneyFlowDeps {
  quotes: PaymentQuotes;
  collectors: FeeCollectors;
  /** The ERC-20 balance of `address` on `chain` (pending block); undefined when the chain has no backend here. */
  tokenBalance: (chain: string, token: string, address: string) => Promise<bigint | undefined>;
  /** Where the sweep reports a payment it could not advance (ids and error codes only). */
  log?: { warn(obj: object, msg: string): void } | undefined;
  clock: () => number;
}

export interface PaymentFilters {
  status?: PaymentStatus | undefined;
  account_holder_id?: string | undefined;
  created_after?: string | undefined;
  created_before?: string | undefined;
}

const SYSTEM: Envelope['actor'] = { type: 'system', id: 'payments' };
const invalid = (field: string, reason: string) => new FieldValidationError([{ field, reason }]);

/** The payment as the API answers it, with what the customer does next while it waits for approval. */
export function paymentView(r: PaymentRecord) {
  const { v: _v, tenant: _t, workspace: _w, org: _o, platform_fee: _p, unsent_event: _u, ...rest } = r;
  return { ...rest, next_action: r.status === 'requires_authorization' ? nextAction(r) : null };
}

/** One intent per transfer, in this order, approved together as one batch member action for the payment. */
export function nextAction(r: Pick<PaymentRecord, 'id' | 'payer' | 'transfers'>) {
  return {
    type: 'member_action' as const,
    member_action: { kind: 'transaction.sign_batch' as const, wallet_id: r.payer.wallet_id, purpose: { type: 'payment' as const, id: r.id } },
    intents: r.transfers.map((t) => ({ role: t.role, from: r.payer.address, to: t.to, asset: t.asset, amount: t.amount, idempotency_key: t.idempotency_key })),
  };
}

export const paymentEventView = ({ v: _v, tenant: _t, workspace: _w, ...rest }: PaymentEventRecord) => rest;

const indexOf = (r: PaymentRecord): string[] => [
  `${r.workspace}\x00all\x00${r.id}`,
  `${r.workspace}\x00holder\x00${r.payer.account_holder_id}\x00${r.id}`,
  ...(r.payee.account_holder_id && r.payee.account_holder_id !== r.payer.account_holder_id ? [`${r.workspace}\x00holder\x00${r.payee.account_holder_id}\x00${r.id}`] : []),
  ...((r.status === 'authorizing' || r.status === 'submitted' || r.unsent_event) ? [`open\x00${r.id}`] : []),
];

/** The ledger account of an address outside the workspace's holders, and of each fee's collector. */
export const externalAddress = (chain: string, address: string) => `external/${chain}/${address.toLowerCase()}`;
export const tenantFees = (workspace: string) => `tenant/${workspace}/fees`;
export const platformFees = () => 'platform/fees';

/** The payment's failure reason for a transaction that ended unsuccessfully. */
function failureOf(tx: TransactionRecord): PaymentFailureReason {
  if (tx.state === 'rejected') return 'transaction_rejected';
  if (tx.reason?.startsWith('dropped')) return 'transaction_dropped';
  if (tx.reason?.startsWith('reverted')) return 'transaction_reverted';
  return 'transaction_failed';
}

export class PaymentService {
  private actions: PaymentMemberActions | undefined;
  private readonly cases: ComplianceCases;

  constructor(private readonly o: PaymentServiceOptions) {
    this.cases = new ComplianceCases(o.store, o.audit, o.clock);
  }

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  /** Wires the batch member actions: registers the payment authorizer, and lets the sweep and cancel read and revoke actions. */
  useMemberActions(actions: PaymentMemberActions): void {
    this.actions = actions;
    actions.registerPurpose('payment', { authorize: (c) => this.authorize(c) });
  }

  // ── Create and simulate ────────────────────────────────────────────────────────────────────────────

  /**
   * The payment the input describes, checked as POST /payments checks it, and the refusal it would meet
   * (undefined when none). Reads only. Form, wallet, holder and quote errors are thrown (as for a quote);
   * the refusals that depend on compliance, fee collectors and the payer's balance are returned.
   */
  private async evaluate(scope: Scope, input: CreatePaymentInput, kind: PaymentKind): Promise<{ payment: PaymentRecord; refusal: CustodyError | undefined }> {
    const quoteInput: QuoteInput = { kind, source_wallet_id: input.source_wallet_id, destination: input.destination, amount: input.amount, asset: input.asset };
    const q = await this.o.quotes.evaluate(scope, quoteInput, ['transfer', 'payment_request']);
    const asset = parseAsset(q.asset)!;
    if (asset.token === 'native') throw invalid('asset', 'a payment moves an ERC-20 token: <chain>:0x<token contract>');
    const wallet = (await WALLETS.in(this.o.store).get(q.source_wallet_id))!;
    if (wallet.address_type !== 'evm') throw invalid('source_wallet_id', 'a payment is paid from an EVM wallet');
    // The payer is the account holder whose vault holds the wallet, and the wallet one of its linked wallets.
    const payerId = (await VAULT_ACCOUNT_HOLDERS.in(this.o.store).get(wallet.vault_id))?.account_holder_id;
    const payer = payerId === undefined ? undefined : await ACCOUNT_HOLDERS.in(this.o.store).get(payerId);
    const link = payer && (await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(payer.id));
    if (!payer || payer.workspace !== scope.workspace || payer.tenant !== scope.tenant || !link || !link.wallets.some((w) => w.wallet_id === wallet.id)) {
      throw invalid('source_wallet_id', 'not a wallet of an account holder of this workspace');
    }
    const dest = q.destination;
    const payeeHolder = 'account_holder_id' in dest ? dest.account_holder_id : null;
    const payeeAddress = (dest.address ?? '').toLowerCase();
    if (payeeHolder === payer.id || (payeeAddress && payeeAddress === wallet.address.toLowerCase())) throw invalid('destination', 'the payer\'s own wallet: a payment goes to someone else');

    let priced: Pick<PaymentQuoteRecord, 'fees' | 'total_debit' | 'fee_schedule_id' | 'platform_fee'> = q;
    if (input.quote_id !== undefined) priced = await this.quoted(scope, input.quote_id, q);

    const chain = wallet.chain;
    const transfers: PaymentTransfer[] = [];
    const id = newId('pay', this.o.clock());
    const add = (role: TransferRole, to: string, amount: string) => transfers.push({ role, to: to.toLowerCase(), amount, asset: q.asset, idempotency_key: `${id}:${role}` });
    if (payeeAddress) add('principal', payeeAddress, q.amount);
    let refusal: CustodyError | undefined;
    if (BigInt(priced.fees.tenant) > 0n) {
      // The collector of the schedule the fee came from: schedules never change, so neither does it.
      const schedule = priced.fee_schedule_id ? await FEE_SCHEDULES.in(this.o.store).get(priced.fee_schedule_id) : undefined;
      const to = collectorOf(schedule, chain);
      if (to) add('tenant_fee', to, priced.fees.tenant);
      else refusal ??= new CustodyError('conflict', `the fee schedule ${priced.fee_schedule_id ?? ''} names no tenant fee collector on ${chain}: create a schedule with collectors.${chain} (POST /v1/fee-schedules) to take payments with a tenant fee there`);
    }
    if (BigInt(priced.fees.platform) > 0n) {
      const to = this.o.collectors.platform(chain);
      if (to) add('platform_fee', to, priced.fees.platform);
      else refusal ??= new CustodyError('unavailable', `no platform fee collector is configured on ${chain} (API_PLATFORM_FEE_COLLECTORS)`);
    }

    const failed = q.compliance.checks.filter((c) => c.result === 'fail').map((c) => `${c.name} (${c.code})`).join(', ');
    if (q.compliance.status === 'block') refusal = new CustodyError('forbidden', `compliance blocks this payment: ${failed}`);
    else if (q.compliance.status === 'review' && input.accept_review !== true) {
      refusal ??= new CustodyError('forbidden', `compliance asks for review: ${failed}; after reviewing, send accept_review: true`);
    }
    if (!payeeAddress) refusal ??= new CustodyError('forbidden', 'compliance blocks this payment: destination_holder_wallet (destination_no_wallet)');

    const now = this.o.clock();
    const payment: PaymentRecord = {
      v: 1, id, tenant: scope.tenant, workspace: scope.workspace, org: wallet.org, kind: q.kind, status: 'requires_authorization',
      payer: { account_holder_id: payer.id, wallet_id: wallet.id, address: wallet.address.toLowerCase() },
      payee: { account_holder_id: payeeHolder, wallet_id: 'wallet_id' in dest ? dest.wallet_id : null, address: payeeAddress },
      chain, asset: q.asset, amount: q.amount, fees: priced.fees, total_debit: priced.total_debit, fee_schedule_id: priced.fee_schedule_id, platform_fee: priced.platform_fee,
      quote_id: input.quote_id ?? null, compliance: q.compliance, review_accepted: q.compliance.status === 'review' && input.accept_review === true,
      transfers, member_action_id: null, transactions: [], failure_reason: null, reference: null, unsent_event: null,
      created_at: this.iso(now), updated_at: this.iso(now), completed_at: null,
    };
    if (!refusal) {
      const balance = await this.o.tokenBalance(chain, asset.token, wallet.address);
      if (balance === undefined) refusal = new CustodyError('unavailable', `chain ${chain} has no backend configured on this service: the payer's balance cannot be read`);
      else if (balance < BigInt(priced.total_debit)) refusal = new CustodyError('insufficient_funds', 'the payer\'s wallet holds less of the asset than the amount and fees');
    }
    return { payment, refusal };
  }

  /** The named quote: this workspace's (404 otherwise), for exactly this payment, and not expired (422 naming quote_id). */
  private async quoted(scope: Scope, quoteId: string, now: PaymentQuoteRecord): Promise<PaymentQuoteRecord> {
    const q = await this.o.quotes.stored(scope, quoteId);
    if (!q) throw new CustodyError('not_found', `no payment quote ${quoteId}`);
    const errors: FieldError[] = [];
    const destOf = (d: PaymentQuoteRecord['destination']) => ('account_holder_id' in d ? `h:${d.account_holder_id}` : `a:${d.address.toLowerCase()}`);
    if (q.kind !== now.kind || q.source_wallet_id !== now.source_wallet_id || destOf(q.destination) !== destOf(now.destination) || q.amount !== now.amount || q.asset !== now.asset) {
      errors.push({ field: 'quote_id', reason: 'the quote prices another payment (kind, source wallet, destination, amount or asset differ)' });
    } else if (Date.parse(q.expires_at) <= this.o.clock()) {
      errors.push({ field: 'quote_id', reason: `the quote expired at ${q.expires_at}; quote again` });
    }
    if (errors.length) throw new FieldValidationError(errors);
    return q;
  }

  /** The payment an Idempotency-Key already created (same body), or undefined; another body is 409. */
  private async prior(scope: Scope, key: string, input: unknown): Promise<string | undefined> {
    const prior = await PAYMENT_KEYS.in(this.o.store).get(`${scope.workspace}\x00create_payment\x00${key}`);
    if (!prior) return undefined;
    if (prior.fingerprint !== bodyFingerprint(input)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
    return prior.id;
  }

  /**
   * POST /payments, and the payment a payment request's approval makes (`opts`). Checks in this order:
   * the form (422), the source wallet (404, 409), asset and destination for its chain (422), the
   * destination holder (404), the payer (422), the quote (404, 422); then the fee collectors (409, 503),
   * compliance (403 forbidden: a block, or a review without accept_review) and the payer's balance
   * (403 insufficient_funds). Stores the payment, its key, its first history entry and its audit entry,
   * and emits `payment.created`, in one batch. The same key and input answer the same payment.
   */
  async create(scope: Scope, actor: Actor, input: CreatePaymentInput, idempotencyKey: string, opts: CreatePaymentOptions = {}): Promise<PaymentRecord> {
    return this.o.store.exclusive(`payment-key:${scope.workspace}:${idempotencyKey}`, async () => {
      const priorId = await this.prior(scope, idempotencyKey, input);
      if (priorId) return this.get(scope, priorId);
      const { payment, refusal } = await this.evaluate(scope, input, opts.kind ?? 'transfer');
      if (refusal) throw refusal;
      const r: PaymentRecord = { ...payment, reference: opts.reference ?? null };
      const ops: Op[] = [
        PAYMENTS.putOp(r.id, r, { index: indexOf(r) }),
        PAYMENT_KEYS.putOp(`${scope.workspace}\x00create_payment\x00${idempotencyKey}`, { v: 1, id: r.id, fingerprint: bodyFingerprint(input) }),
        this.historyOp(r, 'payment.created', null, null, actor),
        this.o.audit.op(scope, actor, 'payment.create', r.id, null, paymentView(r)),
      ];
      // Past a failed review check on the caller's word: a manual-review case stays open until the payment is decided.
      const opened = r.review_accepted ? this.cases.open(r, actor) : { ops: [], events: [] };
      await this.o.deliveries.emitAll(scope, [{ type: 'payment.created', resource: { type: 'payment', id: r.id }, actor, data: this.eventData(r) }, ...opened.events], [...ops, ...opened.ops]);
      return r;
    });
  }

  /** POST /payments/simulate: what create would make of the input and whether it would refuse it; writes nothing. */
  async simulate(scope: Scope, input: CreatePaymentInput) {
    const { payment, refusal } = await this.evaluate(scope, input, 'transfer');
    const { id: _id, next_action: _n, status: _s, transfers, ...view } = paymentView(payment);
    return {
      would_refuse: refusal !== undefined,
      refusal: refusal ? { status: httpStatusOfCode(refusal.code), code: refusal.code, error: refusal.message } : null,
      // The transfers' idempotency keys name the payment's id, which a dry run does not have.
      payment: { ...view, transfers: transfers.map(({ idempotency_key: _k, ...t }) => t) },
    };
  }

  // ── Reads ──────────────────────────────────────────────────────────────────────────────────────────

  async get(scope: Scope, id: string): Promise<PaymentRecord> {
    const r = PAYMENT_ID.test(id) ? await PAYMENTS.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no payment ${id}`);
    return r;
  }

  /** GET /payments: oldest first; by status, a holder as payer or payee, and a creation range. The cursor is bound to the filters. */
  async list(scope: Scope, f: PaymentFilters, cursor: string | undefined, limit: number): Promise<PageResult<PaymentRecord>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, 'payments', scope.workspace, filters);
    const prefix = f.account_holder_id ? `${scope.workspace}\x00holder\x00${f.account_holder_id}\x00` : `${scope.workspace}\x00all\x00`;
    const keep = (r: PaymentRecord) => r.workspace === scope.workspace && r.tenant === scope.tenant && (!f.status || r.status === f.status)
      && (!f.account_holder_id || r.payer.account_holder_id === f.account_holder_id || r.payee.account_holder_id === f.account_holder_id)
      && (!f.created_after || r.created_at >= f.created_after) && (!f.created_before || r.created_at < f.created_before);
    return pageOf(this.o.cursors, await filteredWalk(this.o.store, PAYMENTS, prefix, after, limit, keep), limit, 'payments', scope.workspace, filters);
  }

  /** GET /payments/{id}/events: the payment's history, oldest first. */
  async events(scope: Scope, id: string, cursor: string | undefined, limit: number): Promise<PageResult<PaymentEventRecord>> {
    const p = await this.get(scope, id);
    const after = this.o.cursors.decode(cursor, 'payment_events', p.id, {});
    const items = await PAYMENT_EVENTS.in(this.o.store).byIndexAfter(`${p.id}\x00`, after, limit + 1);
    return pageOf(this.o.cursors, items, limit, 'payment_events', p.id, {});
  }

  // ── The batch member action ────────────────────────────────────────────────────────────────────────

  /**
   * The payment's authorizer, called by member-actions under the payment's lock (purposeLock) when a
   * batch action names the payment: the intents must be exactly the payment's transfers, in order, ERC-20
   * transfers from the payer's wallet with each transfer's idempotency key, and the member the payer
   * holder's. Returns the payment moved to `authorizing` with the action's id, and its history entry, for
   * the batch that stores the action. A payment already authorizing takes a new action only once its
   * action is over (expired or revoked) with nothing submitted.
   */
  async authorize(c: PurposeCheck): Promise<Op[]> {
    const p = PAYMENT_ID.test(c.purposeId) ? await PAYMENTS.in(this.o.store).get(c.purposeId) : undefined;
    if (!p || p.tenant !== c.tenant || p.workspace !== c.workspace || p.org !== c.org) throw new CustodyError('not_found', `no payment ${c.purposeId}`);
    if (p.payer.wallet_id !== c.walletId) throw invalid('wallet_id', 'the payment is paid from another wallet');
    const holder = await ACCOUNT_HOLDERS.in(this.o.store).get(p.payer.account_holder_id);
    if (!holder || holder.member_id === null || (holder.member_id !== c.memberId && !(holder.member_kind === 'hosted' && holder.member_id === c.subject))) {
      throw new CustodyError('member_subject_mismatch', 'only the payer account holder\'s member approves its payments');
    }
    if (p.status === 'authorizing' && !(await this.replaceable(p))) {
      throw new CustodyError('invalid_transition', `the payment is being approved by member action ${p.member_action_id}; it returns to requires_authorization if that action expires or is revoked unused`);
    }
    if (p.status !== 'requires_authorization' && p.status !== 'authorizing') throw new CustodyError('invalid_transition', `the payment is ${p.status}; only a payment that requires authorization is approved`);
    this.checkIntents(p, c.intents);
    const at = this.iso(c.now);
    const after: PaymentRecord = { ...p, status: 'authorizing', member_action_id: c.actionId, updated_at: at };
    return [this.putOp(p, after), this.historyOp(after, 'payment.authorizing', p.status, null, SYSTEM)];
  }

  /** Whether an authorizing payment's action is over without having moved anything (expired, revoked, or unknown). */
  private async replaceable(p: PaymentRecord): Promise<boolean> {
    const bt = p.member_action_id && this.actions ? await this.actions.batchTransactions(p.member_action_id) : undefined;
    if (!bt) return true;
    if (bt.intents.some((i) => i.transaction_id !== null)) return false;
    return bt.status === 'revoked' || Date.parse(bt.expires_at) <= this.o.clock();
  }

  /** Each intent is the transfer at its position: an ERC-20 transfer from the payer's wallet, exact recipient, amount and idempotency key. */
  private checkIntents(p: PaymentRecord, intents: Uint8Array[]): void {
    const errors: FieldError[] = [];
    if (intents.length !== p.transfers.length) throw invalid('intents', `the payment has ${p.transfers.length} transfers (${p.transfers.map((t) => t.role).join(', ')}): one intent each, in that order`);
    const token = p.asset.slice(p.asset.indexOf(':') + 1);
    intents.forEach((bytes, i) => {
      const t = p.transfers[i]!;
      let intent: Intent;
      try {
        intent = decodeIntent(bytes);
      } catch {
        errors.push({ field: `intents[${i}]`, reason: 'not an intent' });
        return;
      }
      const ok = intent.kind === 'evm.transfer' && intent.walletId === p.payer.wallet_id && `0x${bytesToHex(intent.from)}` === p.payer.address
        && intent.asset.kind === 'erc20' && `0x${bytesToHex(intent.asset.contract)}` === token && `0x${bytesToHex(intent.to)}` === t.to
        && intent.amount === BigInt(t.amount) && intent.data.length === 0 && intent.idempotencyKey === t.idempotency_key;
      if (!ok) errors.push({ field: `intents[${i}]`, reason: `not the ${t.role} transfer: ${t.amount} of ${t.asset} to ${t.to} from the payer's wallet, idempotency key ${t.idempotency_key}` });
    });
    if (errors.length) throw new FieldValidationError(errors);
  }

  // ── Cancel ─────────────────────────────────────────────────────────────────────────────────────────

  /**
   * POST /payments/{id}/cancel: from requires_authorization, or from authorizing by revoking the member
   * action (memberActions.revoke, under the organization's transaction lock): of a cancel and a
   * concurrent use of the action's signing session exactly one wins; the loser here is 409. A payment
   * with a transaction is never canceled.
   */
  async cancel(scope: Scope, actor: Actor, id: string): Promise<PaymentRecord> {
    const seen = await this.get(scope, id);
    const refuse = (status: PaymentStatus) => new CustodyError('invalid_transition', `the payment is ${status}: only a payment not yet submitted is canceled`);
    // Under the payment's lock, which a beginning member action holds around its authorizer and commit:
    // a cancel and a begin do not interleave. Lock order: the payment's, then the organization's.
    return this.o.store.exclusive(lockOf(seen.id), async () => {
      const p = (await PAYMENTS.in(this.o.store).get(seen.id))!;
      if (!paymentMayBecome(p.status, 'canceled')) throw refuse(p.status);
      const now = this.iso();
      const canceled = (unsent: boolean): { after: PaymentRecord; ops: Op[] } => {
        const after: PaymentRecord = { ...p, status: 'canceled', updated_at: now, completed_at: now, unsent_event: unsent ? 'payment.cancelled' : null };
        return { after, ops: [this.putOp(p, after), this.historyOp(after, 'payment.canceled', p.status, null, actor), this.o.audit.op(scope, actor, 'payment.cancel', p.id, { status: p.status }, { status: 'canceled' })] };
      };
      if (p.status === 'authorizing' && p.member_action_id) {
        if (!this.actions) throw new CustodyError('unavailable', 'member actions are not served here: the payment\'s action cannot be revoked');
        // Revoked under the organization's transaction lock, with the state and history in its batch: of
        // this cancel and a concurrent use of the action's signing session exactly one wins. The webhook
        // event goes through the delivery queue's own commit: it is recorded on the payment and sent next.
        const { usedAny } = await this.actions.revoke(p.org, p.member_action_id, async () => canceled(true).ops);
        if (usedAny) throw new CustodyError('invalid_transition', 'the payment\'s member action was already used for a transaction: the payment goes ahead');
        await this.sendUnsentLocked(p.id);
        return (await PAYMENTS.in(this.o.store).get(p.id))!;
      }
      const { after, ops } = canceled(false);
      const closed = await this.cases.close(p.id, 'canceled');
      await this.o.deliveries.emitAll(scope, [{ type: 'payment.cancelled', resource: { type: 'payment', id: p.id }, actor, data: this.eventData(after) }, ...closed.events], [...ops, ...closed.ops]);
      return after;
    });
  }

  // ── Transitions and the sweep ──────────────────────────────────────────────────────────────────────

  private putOp(before: PaymentRecord, after: PaymentRecord): Op {
    return PAYMENTS.putOp(after.id, after, { index: indexOf(after), unindex: indexOf(before).filter((i) => !indexOf(after).includes(i)) });
  }

  private historyOp(r: PaymentRecord, type: string, from: PaymentStatus | null, reason: string | null, actor: { type: string; id: string }): Op {
    const e: PaymentEventRecord = {
      v: 1, id: newId('pev', this.o.clock()), payment_id: r.id, tenant: r.tenant, workspace: r.workspace, type, from_status: from, to_status: r.status, reason,
      member_action_id: r.member_action_id, transaction_ids: r.transactions.map((t) => t.transaction_id), actor: { type: actor.type, id: actor.id }, created_at: this.iso(),
    };
    return PAYMENT_EVENTS.putOp(e.id, e, { index: [`${r.id}\x00${e.id}`] });
  }

  /** Ids, states and base-unit amounts only. */
  private eventData(r: PaymentRecord): Record<string, unknown> {
    const base = { payment_id: r.id, status: r.status, account_holder_id: r.payer.account_holder_id };
    if (r.status === 'failed') return { ...base, reason: r.failure_reason ?? 'transaction_failed' };
    if (r.status === 'canceled') return base;
    return { ...base, amount: r.amount, asset: r.asset, fees_total: r.fees.total };
  }

  /**
   * The one way the sweep changes a payment: under its lock, from the stored state, only along the
   * transition table; otherwise nothing is written. `moves` are the ledger postings of the transition,
   * one entry per transfer keyed by `<payment id>/<role>`.
   */
  private async transition(id: string, to: PaymentStatus, patch: (p: PaymentRecord) => Partial<PaymentRecord>, reason: string | null, moves: (p: PaymentRecord) => { role: TransferRole; postings: Posting[] }[] = () => [], when: (p: PaymentRecord) => boolean = () => true): Promise<boolean> {
    return this.o.store.exclusive(lockOf(id), async () => {
      const before = (await PAYMENTS.in(this.o.store).get(id))!;
      if (!paymentMayBecome(before.status, to) || !when(before)) return false;
      const now = this.iso();
      const after: PaymentRecord = { ...before, ...patch(before), status: to, updated_at: now, completed_at: PAYMENT_FINAL.includes(to) ? now : null };
      const scope = { tenant: after.tenant, workspace: after.workspace };
      const ops: Op[] = [this.putOp(before, after), this.historyOp(after, `payment.${to}`, before.status, reason, SYSTEM)];
      for (const m of moves(after)) ops.push(...(await this.o.ledger.entryOps(scope, `${after.id}/${m.role}`, after.id, m.postings)));
      const type = to === 'confirmed' ? 'payment.confirmed' : to === 'failed' ? 'payment.failed' : undefined;
      // The payment is decided once its approval took effect or it failed: its open compliance case closes.
      const closed = to === 'submitted' || to === 'failed' ? await this.cases.close(after.id, to === 'submitted' ? 'approved' : 'failed') : { ops: [], events: [] };
      const events = [...(type ? [{ type, resource: { type: 'payment', id: after.id }, actor: SYSTEM, data: this.eventData(after) }] : []), ...closed.events];
      if (events.length) await this.o.deliveries.emitAll(scope, events, [...ops, ...closed.ops]);
      else await this.o.store.batch(ops);
      return true;
    });
  }

  /** Sends the webhook event a state change recorded as unsent, and clears it, in one batch. */
  private async sendUnsent(id: string): Promise<void> {
    await this.o.store.exclusive(lockOf(id), () => this.sendUnsentLocked(id));
  }

  /** sendUnsent for a caller holding the payment's lock. */
  private async sendUnsentLocked(id: string): Promise<void> {
    const p = (await PAYMENTS.in(this.o.store).get(id))!;
    if (!p.unsent_event) return;
    const after: PaymentRecord = { ...p, unsent_event: null };
    const closed = p.unsent_event === 'payment.cancelled' ? await this.cases.close(p.id, 'canceled') : { ops: [], events: [] };
    await this.o.deliveries.emitAll({ tenant: p.tenant, workspace: p.workspace }, [{ type: p.unsent_event, resource: { type: 'payment', id: p.id }, actor: SYSTEM, data: this.eventData(p) }, ...closed.events], [this.putOp(p, after), ...closed.ops]);
  }

  /** The ledger entries of a confirmed payment: the principal to the payee, each fee to its collector's account, all from the payer. */
  private static settlement(p: PaymentRecord): { role: TransferRole; postings: Posting[] }[] {
    const from = holderStablecoin(p.payer.account_holder_id, p.asset);
    return p.transfers.map((t) => {
      const credit = t.role === 'principal'
        ? (p.payee.account_holder_id ? holderStablecoin(p.payee.account_holder_id, p.asset) : externalAddress(p.chain, t.to))
        : t.role === 'tenant_fee' ? tenantFees(p.workspace) : platformFees();
      return { role: t.role, postings: [{ debit: from, credit, asset: p.asset, amount: BigInt(t.amount) }] };
    });
  }

  /** Drives a payment as far as it goes now: follows its member action, then its transactions. Safe to repeat. */
  async advance(id: string): Promise<PaymentRecord> {
    let p = (await PAYMENTS.in(this.o.store).get(id))!;
    if (p.unsent_event) await this.sendUnsent(p.id);
    if (p.status === 'authorizing' && p.member_action_id) {
      const actionId = p.member_action_id;
      const bt = this.actions ? await this.actions.batchTransactions(actionId) : undefined;
      const same = (x: PaymentRecord) => x.member_action_id === actionId;
      // Back only while the payment still names this action (a new action may have replaced it meanwhile).
      const back = (reason: string) => this.transition(p.id, 'requires_authorization', (x) => (same(x) ? { member_action_id: null } : {}), reason, () => [], same);
      if (!bt) {
        if (this.actions) await back('authorization_not_begun');
      } else {
        const used = bt.intents.filter((i) => i.transaction_id !== null);
        const over = bt.status === 'revoked' || Date.parse(bt.expires_at) <= this.o.clock();
        if (used.length === p.transfers.length && bt.intents.length === p.transfers.length) {
          const txs: PaymentTransaction[] = [];
          for (const [i, x] of bt.intents.entries()) {
            const tx = await TRANSACTIONS.in(this.o.store).get(x.transaction_id!);
            txs.push({ role: p.transfers[i]!.role, transaction_id: x.transaction_id!, intent_sha256: x.intent_sha256, state: tx?.state ?? 'created', tx_hash: tx?.tx_hash ?? null });
          }
          await this.transition(p.id, 'submitted', () => ({ transactions: txs }), null, () => [], same);
        } else if (over && used.length === 0) {
          await back(bt.status === 'revoked' ? 'authorization_revoked' : 'authorization_expired');
        } else if (over) {
          await this.transition(p.id, 'failed', () => ({ failure_reason: 'authorization_incomplete' }), 'authorization_incomplete', () => [], same);
        }
      }
      p = (await PAYMENTS.in(this.o.store).get(id))!;
    }
    if (p.status === 'submitted') {
      const txs = await Promise.all(p.transactions.map((t) => TRANSACTIONS.in(this.o.store).get(t.transaction_id)));
      const refreshed = p.transactions.map((t, i) => ({ ...t, state: txs[i]?.state ?? t.state, tx_hash: txs[i]?.tx_hash ?? t.tx_hash }));
      const wrong = txs.findIndex((tx, i) => !tx || tx.org !== p.org || tx.wallet_id !== p.payer.wallet_id || tx.intent_sha256 !== p.transactions[i]!.intent_sha256);
      const ended = txs.find((tx) => tx && (tx.state === 'failed' || tx.state === 'rejected'));
      if (wrong >= 0) await this.transition(p.id, 'failed', () => ({ failure_reason: 'transaction_mismatch', transactions: refreshed }), 'transaction_mismatch');
      else if (ended) await this.transition(p.id, 'failed', () => ({ failure_reason: failureOf(ended), transactions: refreshed }), failureOf(ended));
      else if (txs.every((tx) => tx!.state === 'final')) await this.transition(p.id, 'confirmed', () => ({ transactions: refreshed }), null, PaymentService.settlement);
      p = (await PAYMENTS.in(this.o.store).get(id))!;
    }
    return p;
  }

  /** Advances every open payment once (the sweep), at most `batch`; returns how many it looked at. Errors leave a payment for the next run. */
  async runDue(batch = 500): Promise<number> {
    let n = 0;
    for (const p of await PAYMENTS.in(this.o.store).byIndex('open\x00', batch)) {
      n++;
      // Ids and error codes only: never an amount, an address or a message that could carry one.
      await this.advance(p.id).catch((err: unknown) => this.o.log?.warn({ payment_id: p.id, category: err instanceof CustodyError ? err.code : 'error' }, 'payment not advanced; the next sweep retries it'));
    }
    return n;
  }
}

