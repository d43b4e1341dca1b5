// Payments as stored (docs/platform/payments.md). Amounts are base units of the payment's asset, as
// decimal strings; the asset is `<chain>:0x<token contract>` in lower case.
import type { PaymentKind } from '../fees/fee-rule.ts';
import type { Check, ComplianceStatus } from './compliance.ts';
import type { PaymentFailureReason, PaymentStatus } from './payment-states.ts';

export const TRANSFER_ROLES = ['principal', 'tenant_fee', 'platform_fee'] as const;
export type TransferRole = (typeof TRANSFER_ROLES)[number];

/** One on-chain ERC-20 transfer of the payment, from the payer's wallet: one intent of the batch. */
export interface PaymentTransfer {
  role: TransferRole;
  /** The recipient's 0x address, lower case. */
  to: string;
  amount: string;
  asset: string;
  /** The idempotency key the transfer's intent must carry: `<payment id>:<role>`, so each transfer becomes at most one transaction. */
  idempotency_key: string;
}

export interface PaymentTransaction { role: TransferRole; transaction_id: string; intent_sha256: string; state: string; tx_hash: string | null }

export interface PaymentRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  /** The organization linked to the workspace, whose vault holds the payer's wallet. */
  org: string;
  kind: PaymentKind;
  status: PaymentStatus;
  payer: { account_holder_id: string; wallet_id: string; address: string };
  payee: { account_holder_id: string | null; wallet_id: string | null; address: string };
  chain: string;
  asset: string;
  amount: string;
  fees: { tenant: string; platform: string; total: string };
  total_debit: string;
  fee_schedule_id: string | null;
  /** The platform fee applied (configuration may change later). */
  platform_fee: { basis_points: number; fixed: string };
  quote_id: string | null;
  compliance: { status: ComplianceStatus; checks: Check[] };
  /** The caller accepted a `review` outcome (accept_review: true). */
  review_accepted: boolean;
  transfers: PaymentTransfer[];
  /** The batch member action approving the transfers, once one began. */
  member_action_id: string | null;
  /** One per transfer once every intent became a vault-API transaction. */
  transactions: PaymentTransaction[];
  failure_reason: PaymentFailureReason | null;
  /** What the payment was made for, when another resource made it (a payment request's approval). */
  reference: { type: 'payment_request'; id: string } | null;
  /** A webhook event committed with a state change that could not carry it (a cancel through the member action's revocation), sent by the next sweep. */
  unsent_event: 'payment.cancelled' | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

/** One entry of a payment's own history (GET /payments/{id}/events). */
export interface PaymentEventRecord {
  v: 1;
  id: string;
  payment_id: string;
  tenant: string;
  workspace: string;
  /** `payment.created`, or the state the payment moved to: `payment.authorizing`, `payment.submitted`, … */
  type: string;
  from_status: PaymentStatus | null;
  to_status: PaymentStatus;
  /** An enumerated reason (a failure reason; `authorization_expired`, `authorization_revoked`, `authorization_not_begun`), or null. */
  reason: string | null;
  member_action_id: string | null;
  transaction_ids: string[];
  actor: { type: string; id: string };
  created_at: string;
}

/** The Idempotency-Key that created a payment: `<workspace> NUL <operation> NUL <key>`. */
export interface PaymentKeyRecord { v: 1; id: string; fingerprint: string }
