// The records of distributions and corporate actions (docs/platform/rwa.md "Distributions and corporate
// actions"). Amounts and units are decimal strings of base units; addresses lower-case.
import type { ActionState, DistributionState } from './action-states.ts';

/** One holder's line of a plan: its units at the record block and what it gets (payout, or units minted). */
export interface PlanEntry { holder: string; units: string; amount: string }

/** A failed attempt of a batch: its operation failed and its Safe nonce passed without it, so it never executes. */
export interface BatchFailure { operation_id: string; message: string; at: string }

/**
 * One Safe transaction of a plan: a MultiSendCallOnly batch of `calls`, recorded before anything is proposed.
 *   planned  -> proposed   its operation proposed (Idempotency-Key `rwa_<id>_b<index>_a<attempt>`)
 *   proposed -> confirmed  the operation confirmed: every line of it paid, once
 *   proposed -> planned    the operation failed and the Safe's nonce passed it without it executing: attempt + 1
 *   proposed -> confirmed  the failed operation's SafeTx was executed after all by a holder of its signatures
 * A failed operation whose nonce the Safe has not passed stays: it could still execute (`waiting` says so).
 */
export interface PayoutBatch {
  index: number;
  entries: PlanEntry[];
  calls: { to: string; data: string }[];
  state: 'planned' | 'proposed' | 'confirmed';
  attempt: number;
  operation_id: string | null;
  tx_hash: string | null;
  failures: BatchFailure[];
  /** Why the batch cannot go on yet (its failed operation can still execute), or null. */
  waiting: string | null;
  /** How many of `entries` are appended to the token's log as payouts. */
  logged: number;
}

/** What a plan does, as recorded when it was made from the cap table. */
export interface Plan {
  record_block: string;
  /** The units counted at the record block (the admin Safe's own left out). */
  supply: string;
  holders: number;
  /** Paid (or minted) in all. */
  total: string;
  /** What the floors leave: never sent, it stays in the admin Safe (a split: never minted). */
  remainder: string;
  batches: PayoutBatch[];
}

export interface DistributionRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  token_id: string;
  asset: string;
  amount: string;
  record_block: string;
  batch_size: number;
  state: DistributionState;
  plan: Plan;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

export const ACTION_TYPES = ['split', 'redemption', 'dividend'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

export interface ActionParams {
  /** split: new units per old (numerator:denominator, numerator above denominator). */
  numerator: string | null;
  denominator: string | null;
  /** dividend, redemption: the ERC-20 paid. */
  asset: string | null;
  /** dividend: the total paid pro rata. */
  amount: string | null;
  /** redemption: base units of the asset paid per unit redeemed. */
  price_per_unit: string | null;
}

export interface Transition { from: ActionState | null; to: ActionState; at: string; by: string }

export interface CorporateActionRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  token_id: string;
  type: ActionType;
  params: ActionParams;
  record_block: string;
  batch_size: number;
  state: ActionState;
  plan: Plan | null;
  transitions: Transition[];
  created_at: string;
  updated_at: string;
}
