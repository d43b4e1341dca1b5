// The states of a payment and the transitions between them (docs/platform/payments.md "States"). Every
// change goes through `paymentMayBecome`, checked under the payment's lock against the stored state
// (compare-and-set), so a second worker, a repeated sweep or a late callback finds the state moved and
// changes nothing.

export const PAYMENT_STATUSES = ['requires_authorization', 'authorizing', 'submitted', 'confirmed', 'failed', 'canceled'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/**
 *   requires_authorization -> authorizing             a batch member action for the payment began
 *   requires_authorization -> canceled                POST /payments/{id}/cancel
 *   authorizing            -> requires_authorization  the action expired or was revoked before any intent was used
 *   authorizing            -> submitted               every intent of the batch became a vault-API transaction
 *   authorizing            -> failed                  the action ended with some intents used, not all (authorization_incomplete)
 *   authorizing            -> canceled                POST /payments/{id}/cancel revoked the unused action
 *   submitted              -> confirmed               every transaction is final on chain (ledger: principal and fees)
 *   submitted              -> failed                  a transaction failed, was rejected or dropped
 */
export const PAYMENT_TRANSITIONS: Readonly<Record<PaymentStatus, readonly PaymentStatus[]>> = {
  requires_authorization: ['authorizing', 'canceled'],
  authorizing: ['requires_authorization', 'submitted', 'failed', 'canceled'],
  submitted: ['confirmed', 'failed'],
  confirmed: [],
  failed: [],
  canceled: [],
};

export const PAYMENT_FINAL: readonly PaymentStatus[] = ['confirmed', 'failed', 'canceled'];

export const PAYMENT_FAILURE_REASONS = ['transaction_failed', 'transaction_rejected', 'transaction_dropped', 'transaction_reverted', 'authorization_incomplete', 'transaction_mismatch'] as const;
export type PaymentFailureReason = (typeof PAYMENT_FAILURE_REASONS)[number];

export function paymentMayBecome(from: PaymentStatus, to: PaymentStatus): boolean {
  return PAYMENT_TRANSITIONS[from].includes(to);
}
