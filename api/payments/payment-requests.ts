// Payment requests (docs/platform/payment-requests.md): an account holder of the workspace (the requester,
// the payee) asks another holder (the payer) for an amount of an ERC-20 asset. Only `pending` moves:
// approve (the payer pays: a payment made by PaymentService.create with kind `payment_request` and the
// request as its reference), decline (the payer refuses), cancel (the requester withdraws); past
// `expires_at` a pending request is expired, seen on every read and transition. Every transition runs
// under the request's lock against the stored state, and writes the new state, its audit entry and its
// webhook event in one batch. A request makes at most one payment: that payment's Idempotency-Key is
// derived from the request's id, and every transition first looks for it (a crash between the payment
// and the approval is finished by the next transition, which then sees the request approved).
import { createHash } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine, Envelope } from '../webhooks/delivery-engine.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import { FieldValidationError, type FieldError } from '../validation.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS } from '../account-holders/collections.ts';
import { HOLDER_ID } from '../account-holders/account-holder-service.ts';
import type { AccountHolderRecord } from '../account-holders/account-holder-records.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { WALLETS } from '../vaults/collections.ts';
import { chainInfo } from '../vaults/wallet-address.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { MAX_UINT256, parseAsset, parseBaseUnits } from '../fees/base-units.ts';
import { PAYMENT_KEYS } from './collections.ts';
import type { PaymentRecord } from './payment-records.ts';
import type { CreatePaymentInput, PaymentService } from './payments.ts';
import {
  PAYMENT_REQUEST_KEYS, PAYMENT_REQUESTS, paymentRequestMayBecome,
  type DeclineReason, type PaymentRequestRecord, type PaymentRequestStatus,
} from './payment-request-records.ts';

export const PAYMENT_REQUEST_ID = /^prq_[0-9a-f]{26}$/;
const DAY_MS = 86_400_000;
/** The memo's length in characters (code points). */
export const MEMO_MAX = 280;
/** Without `expires_at`, a request expires after 7 days; it may ask for 1 minute to 30 days. */
export const DEFAULT_EXPIRY_MS = 7 * DAY_MS;
export const MIN_EXPIRY_MS = 60_000;
export const MAX_EXPIRY_MS = 30 * DAY_MS;
/** Reminders: one per 24 hours, three in all. */
export const REMINDER_INTERVAL_MS = DAY_MS;
export const MAX_REMINDERS = 3;

export interface CreatePaymentRequestInput {
  requester_account_holder_id: string;
  payer_account_holder_id: string;
  amount: string;
  asset: string;
  memo?: string | undefined;
  expires_at?: string | undefined;
}

/** What the payer pays with: the payment's source wallet, and what POST /payments takes beside it. */
export interface ApprovePaymentRequestInput {
  source_wallet_id: string;
  quote_id?: string | undefined;
  accept_review?: boolean | undefined;
}

export interface PaymentRequestFilters {
  status?: PaymentRequestStatus | undefined;
  account_holder_id?: string | undefined;
  created_after?: string | undefined;
  created_before?: string | undefined;
}

export interface PaymentRequestServiceOptions {
  /** The one store of both APIs (server.ts): holders, wallets, payments and the requests. */
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  deliveries: DeliveryEngine;
  links: CustomerLinks;
  payments: Pick<PaymentService, 'create' | 'get'>;
  clock: () => number;
}

/** 429 rate_limited: a reminder was sent less than 24 hours ago; `retryAfter` seconds until the next may go (Retry-After). */
export class ReminderLimitError extends CustodyError {
  constructor(readonly retryAfter: number) {
    super('rate_limited', `one reminder per 24 hours; the next may be sent in ${retryAfter} s`);
    this.name = 'ReminderLimitError';
  }
}

const lockOf = (id: string) => `payment-request:${id}`;
/** The Idempotency-Key of the one payment a request makes: a caller's key never holds a space (api/idempotency.ts), so none collides with it. */
export const paymentKeyOf = (requestId: string) => `payment_request ${requestId}`;
const invalid = (field: string, reason: string) => new FieldValidationError([{ field, reason }]);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** Control and format characters (line breaks, NUL, bidirectional overrides, zero-width marks): not plain text for a payer to read. */
const NOT_PLAIN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** The request's state now: a pending request past `expires_at` is expired. */
export function effectiveStatus(r: PaymentRequestRecord, now: number): PaymentRequestStatus {
  return r.status === 'pending' && now >= Date.parse(r.expires_at) ? 'expired' : r.status;
}

/** The request as the API answers it, in its state at `now`. */
export function paymentRequestView(r: PaymentRequestRecord, now: number) {
  const { v: _v, tenant: _t, workspace: _w, approval_key: _k, ...rest } = r;
  const status = effectiveStatus(r, now);
  return { ...rest, status, completed_at: status === 'expired' ? r.expires_at : r.completed_at };
}

const indexOf = (r: PaymentRequestRecord): string[] => [
  `${r.workspace}\x00all\x00${r.id}`,
  `${r.workspace}\x00holder\x00${r.requester.account_holder_id}\x00${r.id}`,
  `${r.workspace}\x00holder\x00${r.payer.account_holder_id}\x00${r.id}`,
];

/** Ids, states and base-unit amounts only: never the memo. */
function eventData(r: PaymentRequestRecord, status: PaymentRequestStatus): Record<string, string | number> {
  return {
    payment_request_id: r.id, status, requester_account_holder_id: r.requester.account_holder_id, payer_account_holder_id: r.payer.account_holder_id,
    amount: r.amount, asset: r.asset,
  };
}

const SYSTEM: Envelope['actor'] = { type: 'system', id: 'payment_requests' };

export class PaymentRequestService {
  constructor(private readonly o: PaymentRequestServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  view(r: PaymentRequestRecord) {
    return paymentRequestView(r, this.o.clock());
  }

  // ── Create ─────────────────────────────────────────────────────────────────────────────────────────

  /** A holder of this workspace named in the body (422 naming the field otherwise). */
  private async holderOf(scope: Scope, field: string, id: string): Promise<AccountHolderRecord> {
    const h = HOLDER_ID.test(id) ? await ACCOUNT_HOLDERS.in(this.o.store).get(id) : undefined;
    if (!h || h.workspace !== scope.workspace || h.tenant !== scope.tenant) throw invalid(field, 'no such account holder in this workspace');
    return h;
  }

  /**
   * POST /payment-requests. Checks in this order: the form (422, every rejected field), the two holders
   * (422), the requester active (409 account_holder_closed, account_holder_not_active), the payer not
   * closed (409), the requester's active wallet on the asset's chain (422). Stores the request, its key
   * and its audit entry, and emits `payment_request.created`, in one batch. The same key and body answer
   * the same request; another body is 409 idempotency_key_reused.
   */
  async create(scope: Scope, actor: Actor, input: CreatePaymentRequestInput, idempotencyKey: string): Promise<PaymentRequestRecord> {
    return this.o.store.exclusive(`payment-request-key:${scope.workspace}:${idempotencyKey}`, async () => {
      const keyId = `${scope.workspace}\x00create_payment_request\x00${idempotencyKey}`;
      const prior = await PAYMENT_REQUEST_KEYS.in(this.o.store).get(keyId);
      if (prior) {
        if (prior.fingerprint !== bodyFingerprint(input)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
        return this.get(scope, prior.id);
      }
      const now = this.o.clock();
      const errors: FieldError[] = [];
      const amount = parseBaseUnits(input.amount);
      if (amount === undefined || amount === 0n || amount > MAX_UINT256) errors.push({ field: 'amount', reason: 'base units from 1 to 2^256 - 1: decimal digits without leading zeros' });
      const asset = parseAsset(input.asset);
      if (!asset || asset.token === 'native' || chainInfo(asset.chain)?.family !== 'evm') errors.push({ field: 'asset', reason: 'an ERC-20 token of an EVM chain: <chain>:0x<token contract>' });
      if (input.memo !== undefined && ([...input.memo].length > MEMO_MAX || input.memo.trim() === '' || NOT_PLAIN.test(input.memo))) {
        errors.push({ field: 'memo', reason: `plain text of 1 to ${MEMO_MAX} characters, one line, without control or format characters` });
      }
      let expires = now + DEFAULT_EXPIRY_MS;
      if (input.expires_at !== undefined) {
        expires = ISO_UTC.test(input.expires_at) ? Date.parse(input.expires_at) : NaN;
        if (!(expires >= now + MIN_EXPIRY_MS && expires <= now + MAX_EXPIRY_MS)) errors.push({ field: 'expires_at', reason: 'an ISO 8601 UTC time from 1 minute to 30 days ahead' });
      }
      if (input.payer_account_holder_id === input.requester_account_holder_id) errors.push({ field: 'payer_account_holder_id', reason: 'the requester itself: a request asks another holder' });
      if (errors.length) throw new FieldValidationError(errors);

      const requester = await this.holderOf(scope, 'requester_account_holder_id', input.requester_account_holder_id);
      const payer = await this.holderOf(scope, 'payer_account_holder_id', input.payer_account_holder_id);
      if (requester.status === 'closed') throw new CustodyError('account_holder_closed', 'the requester is closed');
      if (requester.status !== 'active') throw new CustodyError('account_holder_not_active', `the requester is ${requester.status}; money moves for active (verified) holders only`);
      if (payer.status === 'closed') throw new CustodyError('account_holder_closed', 'the payer is closed');
      const wallet = await this.holderWallet(scope, requester, asset!.chain);
      if (!wallet) throw invalid('requester_account_holder_id', `the requester has no active wallet on ${asset!.chain}: the payment would have nowhere to go`);

      const r: PaymentRequestRecord = {
        v: 1, id: newId('prq', now), tenant: scope.tenant, workspace: scope.workspace, status: 'pending',
        requester: { account_holder_id: requester.id, wallet_id: wallet.id, address: wallet.address.toLowerCase() }, payer: { account_holder_id: payer.id },
        chain: asset!.chain, asset: asset!.id, amount: amount!.toString(), memo: input.memo ?? null, expires_at: this.iso(expires),
        payment_id: null, decline_reason: null, reminders: { count: 0, last_at: null }, approval_key: null,
        created_at: this.iso(now), updated_at: this.iso(now), completed_at: null,
      };
      const ops: Op[] = [
        PAYMENT_REQUESTS.putOp(r.id, r, { index: indexOf(r) }),
        PAYMENT_REQUEST_KEYS.putOp(keyId, { v: 1, id: r.id, fingerprint: bodyFingerprint(input) }),
        this.o.audit.op(scope, actor, 'payment_request.create', r.id, null, paymentRequestView(r, now)),
      ];
      await this.o.deliveries.emitAll(scope, [{ type: 'payment_request.created', resource: { type: 'payment_request', id: r.id }, actor, data: eventData(r, 'pending') }], ops);
      return r;
    });
  }

  /** The holder's active wallet on `chain` of its linked vault (the one a payment to the holder reaches: payment-quotes.ts), or undefined. */
  private async holderWallet(scope: Scope, h: AccountHolderRecord, chain: string) {
    const org = await this.o.links.orgOfWorkspace(scope);
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(h.id);
    if (org === undefined || !link || link.workspace !== scope.workspace || link.org !== org) return undefined;
    const ref = link.wallets.find((w) => w.chain === chain);
    const wallet = ref ? await WALLETS.in(this.o.store).get(ref.wallet_id) : undefined;
    return wallet && wallet.org === org && wallet.address_type === 'evm' && walletState(wallet) === 'active' ? wallet : undefined;
  }

  // ── Reads ──────────────────────────────────────────────────────────────────────────────────────────

  async get(scope: Scope, id: string): Promise<PaymentRequestRecord> {
    const r = PAYMENT_REQUEST_ID.test(id) ? await PAYMENT_REQUESTS.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no payment request ${id}`);
    return r;
  }

  /** GET /payment-requests: oldest first; by state (as of now), a holder as requester or payer, and a creation range. The cursor is bound to the filters. */
  async list(scope: Scope, f: PaymentRequestFilters, cursor: string | undefined, limit: number): Promise<PageResult<PaymentRequestRecord>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, 'payment_requests', scope.workspace, filters);
    const prefix = f.account_holder_id ? `${scope.workspace}\x00holder\x00${f.account_holder_id}\x00` : `${scope.workspace}\x00all\x00`;
    const now = this.o.clock();
    const keep = (r: PaymentRequestRecord) => r.workspace === scope.workspace && r.tenant === scope.tenant && (!f.status || effectiveStatus(r, now) === f.status)
      && (!f.account_holder_id || r.requester.account_holder_id === f.account_holder_id || r.payer.account_holder_id === f.account_holder_id)
      && (!f.created_after || r.created_at >= f.created_after) && (!f.created_before || r.created_at < f.created_before);
    return pageOf(this.o.cursors, await filteredWalk(this.o.store, PAYMENT_REQUESTS, prefix, after, limit, keep), limit, 'payment_requests', scope.workspace, filters);
  }

  // ── Transitions ────────────────────────────────────────────────────────────────────────────────────

  /** The payment made for the request, if any: the one stored under the request's payment key. */
  private async madePayment(r: PaymentRequestRecord): Promise<PaymentRecord | undefined> {
    const key = await PAYMENT_KEYS.in(this.o.store).get(`${r.workspace}\x00create_payment\x00${paymentKeyOf(r.id)}`);
    if (!key) return undefined;
    return this.o.payments.get({ tenant: r.tenant, workspace: r.workspace }, key.id);
  }

  /** 409 invalid_transition naming the state, unless the request is pending now. */
  private mustBePending(r: PaymentRequestRecord, verb: string): void {
    const status = effectiveStatus(r, this.o.clock());
    if (status === 'pending') return;
    const paid = status === 'approved' ? ` (payment ${r.payment_id})` : '';
    throw new CustodyError('invalid_transition', `the payment request is ${status}${paid}: only a pending request is ${verb}`);
  }

  /** Writes pending → approved with its payment, audit entry and event; the caller holds the request's lock. */
  private async approved(r: PaymentRequestRecord, payment: PaymentRecord, actor: Actor, approvalKey: string | null, recovered = false): Promise<PaymentRequestRecord> {
    if (!paymentRequestMayBecome(r.status, 'approved')) throw new CustodyError('bug', `payment request ${r.id} is ${r.status}`);
    const now = this.iso();
    const after: PaymentRequestRecord = { ...r, status: 'approved', payment_id: payment.id, approval_key: approvalKey, updated_at: now, completed_at: now };
    const scope = { tenant: r.tenant, workspace: r.workspace };
    const ops: Op[] = [
      PAYMENT_REQUESTS.putOp(after.id, after, { index: indexOf(after) }),
      this.o.audit.op(scope, actor, 'payment_request.approve', r.id, { status: r.status }, { status: after.status, payment_id: payment.id, ...(recovered ? { recovered: true } : {}) }),
    ];
    await this.o.deliveries.emitAll(scope, [{ type: 'payment_request.approved', resource: { type: 'payment_request', id: r.id }, actor: recovered ? SYSTEM : actor, data: { ...eventData(after, 'approved'), payment_id: payment.id } }], ops);
    return after;
  }

  /**
   * The request under its lock, with an approval a crash left half done finished first: a payment made
   * for a request still pending approves it (the payment exists; the request must say so). The audit
   * entry names the caller that found it, marked `recovered`.
   */
  private async current(id: string, actor: Actor): Promise<PaymentRequestRecord> {
    const r = (await PAYMENT_REQUESTS.in(this.o.store).get(id))!;
    if (r.status !== 'pending') return r;
    const made = await this.madePayment(r);
    return made ? this.approved(r, made, actor, null, true) : r;
  }

  /**
   * POST /payment-requests/{id}/approve: the payer pays from `source_wallet_id`, one of its linked wallets
   * (422 otherwise). Under the request's lock: a retry under the same Idempotency-Key answers the same
   * payment; a request not pending is 409; the payment is made by PaymentService.create (kind
   * `payment_request`, the request as reference, the request's own payment key), whose refusal is answered
   * unchanged with the request left pending; then the request is approved.
   */
  async approve(scope: Scope, actor: Actor, id: string, input: ApprovePaymentRequestInput, idempotencyKey: string): Promise<{ request: PaymentRequestRecord; payment: PaymentRecord }> {
    await this.get(scope, id);
    const approvalKey = sha256(`${scope.workspace}\x00${idempotencyKey}`);
    return this.o.store.exclusive(lockOf(id), async () => {
      const stored = (await PAYMENT_REQUESTS.in(this.o.store).get(id))!;
      if (stored.status === 'approved' && stored.approval_key === approvalKey) return { request: stored, payment: await this.o.payments.get(scope, stored.payment_id!) };
      const made = stored.status === 'pending' ? await this.madePayment(stored) : undefined;
      if (made) return { request: await this.approved(stored, made, actor, approvalKey, true), payment: made };
      this.mustBePending(stored, 'approved');
      const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(stored.payer.account_holder_id);
      if (!link || link.workspace !== scope.workspace || !link.wallets.some((w) => w.wallet_id === input.source_wallet_id)) {
        throw invalid('source_wallet_id', 'not a wallet of the payer account holder');
      }
      const paymentInput: CreatePaymentInput = {
        source_wallet_id: input.source_wallet_id, destination: { account_holder_id: stored.requester.account_holder_id }, amount: stored.amount, asset: stored.asset,
        ...(input.quote_id !== undefined ? { quote_id: input.quote_id } : {}), ...(input.accept_review !== undefined ? { accept_review: input.accept_review } : {}),
      };
      const payment = await this.o.payments.create(scope, actor, paymentInput, paymentKeyOf(stored.id), { kind: 'payment_request', reference: { type: 'payment_request', id: stored.id } });
      return { request: await this.approved(stored, payment, actor, approvalKey), payment };
    });
  }

  /** Moves a pending request to a final state other than approved, with its audit entry and event, under its lock. */
  private async close(scope: Scope, actor: Actor, id: string, to: 'declined' | 'canceled', reason: DeclineReason | null): Promise<PaymentRequestRecord> {
    await this.get(scope, id);
    return this.o.store.exclusive(lockOf(id), async () => {
      const r = await this.current(id, actor);
      this.mustBePending(r, to);
      const now = this.iso();
      const after: PaymentRequestRecord = { ...r, status: to, decline_reason: to === 'declined' ? reason : null, updated_at: now, completed_at: now };
      const ops: Op[] = [
        PAYMENT_REQUESTS.putOp(after.id, after, { index: indexOf(after) }),
        this.o.audit.op(scope, actor, to === 'declined' ? 'payment_request.decline' : 'payment_request.cancel', r.id, { status: r.status }, { status: to, ...(to === 'declined' ? { decline_reason: reason } : {}) }),
      ];
      const data = { ...eventData(after, to), ...(to === 'declined' && reason ? { reason } : {}) };
      await this.o.deliveries.emitAll(scope, [{ type: to === 'declined' ? 'payment_request.declined' : 'payment_request.cancelled', resource: { type: 'payment_request', id: r.id }, actor, data }], ops);
      return after;
    });
  }

  /** POST /payment-requests/{id}/decline: the payer refuses, with an optional enumerated reason. */
  decline(scope: Scope, actor: Actor, id: string, reason: DeclineReason | null): Promise<PaymentRequestRecord> {
    return this.close(scope, actor, id, 'declined', reason);
  }

  /** POST /payment-requests/{id}/cancel: the requester withdraws. */
  cancel(scope: Scope, actor: Actor, id: string): Promise<PaymentRequestRecord> {
    return this.close(scope, actor, id, 'canceled', null);
  }

  /**
   * POST /payment-requests/{id}/remind: records a reminder and emits `payment_request.reminded` for the
   * payer. Pending only (409); three in all (409 conflict once sent); one per 24 hours (429 rate_limited
   * with Retry-After).
   */
  async remind(scope: Scope, actor: Actor, id: string): Promise<PaymentRequestRecord> {
    await this.get(scope, id);
    return this.o.store.exclusive(lockOf(id), async () => {
      const r = await this.current(id, actor);
      this.mustBePending(r, 'reminded');
      if (r.reminders.count >= MAX_REMINDERS) throw new CustodyError('conflict', `all ${MAX_REMINDERS} reminders of the payment request were sent`);
      const now = this.o.clock();
      if (r.reminders.last_at !== null) {
        const next = Date.parse(r.reminders.last_at) + REMINDER_INTERVAL_MS;
        if (now < next) throw new ReminderLimitError(Math.max(1, Math.ceil((next - now) / 1000)));
      }
      const after: PaymentRequestRecord = { ...r, reminders: { count: r.reminders.count + 1, last_at: this.iso(now) }, updated_at: this.iso(now) };
      const ops: Op[] = [
        PAYMENT_REQUESTS.putOp(after.id, after, { index: indexOf(after) }),
        this.o.audit.op(scope, actor, 'payment_request.remind', r.id, { reminders: r.reminders }, { reminders: after.reminders }),
      ];
      await this.o.deliveries.emitAll(scope, [{ type: 'payment_request.reminded', resource: { type: 'payment_request', id: r.id }, actor, data: { ...eventData(after, 'pending'), reminder_count: after.reminders.count } }], ops);
      return after;
    });
  }
}
