// What a fiat payment rail offers the funding service (docs/platform/funding.md "The payment rail"): a pull
// (fiat in, from the holder's bank account) and a push (fiat out, to it), each submitted with the
// caller's idempotency reference, so submitting the same reference again answers the same transfer and
// moves nothing twice. Settlement is asynchronous: a transfer is `pending` when accepted and later
// `settled`, `failed` (with an enumerated reason) or `returned` (the receiving bank sent it back). The
// outcome is reported to listeners (the rail's callback) and can be read again at any time (polling), so
// a lost callback is recovered by a poll. A transfer the rail refuses at submission comes back `failed`
// in the submission's answer and is not called back. Amounts are integers in the currency's minor unit (cents).

/** Why a rail refused or failed a transfer. */
export const RAIL_FAILURE_REASONS = ['insufficient_funds', 'account_closed', 'account_invalid', 'rejected_by_bank', 'limit_exceeded'] as const;
export type RailFailureReason = (typeof RAIL_FAILURE_REASONS)[number];

/** Why a transfer was returned after the rail accepted it. */
export const RAIL_RETURN_REASONS = ['unauthorized_debit', 'account_closed', 'payment_stopped'] as const;
export type RailReturnReason = (typeof RAIL_RETURN_REASONS)[number];

export type RailDirection = 'pull' | 'push';
export type RailTransferStatus = 'pending' | 'settled' | 'failed' | 'returned';

export interface RailTransfer {
  /** The rail's id of the transfer. */
  id: string;
  /** The caller's idempotency reference: one transfer per reference, whatever else a resubmission says. */
  reference: string;
  direction: RailDirection;
  /** Minor units of `currency` (cents), a positive integer. */
  amount: bigint;
  /** ISO 4217, upper case. */
  currency: string;
  status: RailTransferStatus;
  /** Set when `failed` (a RailFailureReason) or `returned` (a RailReturnReason). */
  reason: RailFailureReason | RailReturnReason | null;
  /** Milliseconds since the epoch. */
  submitted_at: number;
  /** When the outcome was known; null while pending. */
  resolved_at: number | null;
}

export interface RailSubmission {
  reference: string;
  amount: bigint;
  currency: string;
  /** The account holder the money is for, where the rail needs to know whose bank account it is. */
  account_holder_id?: string;
}

/** A transfer whose status changed: what the rail's callback carries. */
export type RailListener = (transfer: RailTransfer) => Promise<void>;

export interface PaymentRail {
  /** The rail's name, as the ledger's clearing account and the resources name it. */
  readonly name: string;
  /** A double that moves no real money: the service serves it to sandbox workspaces only. */
  readonly sandbox: boolean;
  /** Currencies it moves (ISO 4217). */
  readonly currencies: readonly string[];
  /** Fiat in: debit the holder's bank account. Idempotent by `reference`. */
  submitPull(req: RailSubmission): Promise<RailTransfer>;
  /** Fiat out: credit the holder's bank account. Idempotent by `reference`. */
  submitPush(req: RailSubmission): Promise<RailTransfer>;
  /** The transfer as the rail knows it now (polling); undefined for an unknown id. */
  transfer(id: string): Promise<RailTransfer | undefined>;
  /** Registers the callback the rail calls when a transfer settles, fails or is returned; at least once. */
  onSettlement(listener: RailListener): void;
  /**
   * Where holders send stablecoin to redeem it for fiat (the issuer's redemption address) on `chain` for
   * `asset` (`<chain>:<contract>`); undefined where the rail redeems nothing.
   */
  redemptionAddress(chain: string, asset: string): string | undefined;
}
