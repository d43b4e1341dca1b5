// Escrows as stored (docs/platform/escrows.md). Amounts are token base units as decimal strings;
// addresses lower case.
import type { EscrowStatus } from './escrow-states.ts';

export interface EscrowRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  /** The organization of the payer's wallet (the vault API's). */
  org: string;
  chain: string;
  /** The escrow contract on `chain` (API_ESCROW_CONTRACTS). */
  contract: string;
  /** The id the contract keys the escrow by: keccak256("custody/escrow/v1:" ‖ id). */
  escrow_id: string;
  /** `<chain>:<token contract>`. */
  asset: string;
  token: string;
  payer_account_holder_id: string;
  payer_wallet_id: string;
  payer_address: string;
  payee_account_holder_id: string;
  payee_wallet_id: string;
  payee_address: string;
  amount: string;
  /** From when the payer may take the funds back on chain (the contract's refundableAfter). */
  refundable_after: string;
  /** An escrow not funded by then expires. */
  funding_deadline: string;
  status: EscrowStatus;
  deposit_tx_hash: string | null;
  deposit_block: number | null;
  /** The release's or refund's transaction. */
  settlement_tx_hash: string | null;
  settlement_block: number | null;
  /** Who refunded: the payee, or the payer after refundable_after. */
  refunded_by: 'payee' | 'payer' | null;
  description: string | null;
  /** The chain's latest block at creation: where the sweep's log reads of the escrow start (internal). */
  from_block: number;
  created_at: string;
  updated_at: string;
  funded_at: string | null;
  completed_at: string | null;
}

export type EscrowEventType = 'created' | 'funding_approved' | 'release_approved' | 'funded' | 'released' | 'refunded' | 'canceled' | 'expired';

/** One entry of an escrow's history (GET /escrows/{id}/events); append-only. */
export interface EscrowEventRecord {
  v: 1;
  id: string;
  escrow_id: string;
  workspace: string;
  type: EscrowEventType;
  status: EscrowStatus;
  actor: { type: string; id: string };
  tx_hash: string | null;
  block_number: number | null;
  /** A member approval: the member action's id. */
  member_action_id: string | null;
  at: string;
}

/** A member action approving an escrow's calls: key `<escrow id>/<action id>`. */
export interface EscrowActionRecord { v: 1; escrow_id: string; action_id: string; purpose: 'funding' | 'release'; org: string; created_at: string }
