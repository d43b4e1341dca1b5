// Payment requests as stored, their states and transitions, and their collections
// (docs/platform/payment-requests.md). Amounts are base units of the request's asset, as decimal strings;
// the asset is `<chain>:0x<token contract>` in lower case.
import { collection } from '../store/collection.ts';

export const PAYMENT_REQUEST_STATUSES = ['pending', 'approved', 'declined', 'canceled', 'expired'] as const;
export type PaymentRequestStatus = (typeof PAYMENT_REQUEST_STATUSES)[number];

/**
 *   pending -> approved   POST /payment-requests/{id}/approve made its payment (PaymentService.create)
 *   pending -> declined   POST /payment-requests/{id}/decline (the payer refuses)
 *   pending -> canceled   POST /payment-requests/{id}/cancel (the requester withdraws)
 *   pending -> expired    `expires_at` passed: never written, seen on every read and transition
 * Only `pending` moves; every other state is final.
 */
export const PAYMENT_REQUEST_TRANSITIONS: Readonly<Record<PaymentRequestStatus, readonly PaymentRequestStatus[]>> = {
  pending: ['approved', 'declined', 'canceled', 'expired'],
  approved: [],
  declined: [],
  canceled: [],
  expired: [],
};

export function paymentRequestMayBecome(from: PaymentRequestStatus, to: PaymentRequestStatus): boolean {
  return PAYMENT_REQUEST_TRANSITIONS[from].includes(to);
}

/** Why the payer declined, when it says. */
export const DECLINE_REASONS = ['not_recognized', 'incorrect_amount', 'duplicate', 'already_paid', 'other'] as const;
export type DeclineReason = (typeof DECLINE_REASONS)[number];

export interface PaymentRequestRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  /** Stored `pending` until a transition; `expired` is derived from `expires_at` (payment-requests.ts `effectiveStatus`). */
  status: Exclude<PaymentRequestStatus, 'expired'>;
  /** The payee: an account holder of the workspace and its wallet on the asset's chain, where the payment goes. */
  requester: { account_holder_id: string; wallet_id: string; address: string };
  payer: { account_holder_id: string };
  chain: string;
  asset: string;
  amount: string;
  /** Plain text for the payer, at most MEMO_MAX characters, no control or format characters; never in an event. */
  memo: string | null;
  expires_at: string;
  /** The payment the approval made. */
  payment_id: string | null;
  decline_reason: DeclineReason | null;
  reminders: { count: number; last_at: string | null };
  /** SHA-256 of the Idempotency-Key the approval came with, so its retry answers the same payment (never shown). */
  approval_key: string | null;
  created_at: string;
  updated_at: string;
  /** When it left `pending` (for `expired`, `expires_at`). */
  completed_at: string | null;
}

/**
 * Indexes `<workspace> NUL all NUL <id>` and `<workspace> NUL holder NUL <holder> NUL <id>` for the requester
 * and the payer. The indexes never change: a transition rewrites the record under the same entries.
 */
export const PAYMENT_REQUESTS = collection<PaymentRequestRecord>('payment_requests');
/** `<workspace> NUL create_payment_request NUL <Idempotency-Key>` → the request it created, written in the request's batch. */
export const PAYMENT_REQUEST_KEYS = collection<{ v: 1; id: string; fingerprint: string }>('payment_request_keys');
