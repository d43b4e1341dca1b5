// The states of funding and off-ramp requests and the transitions between them (docs/platform/funding.md
// "States"). Every change goes through `mayBecome`, checked under the request's lock against the stored
// state (compare-and-set), so a duplicate callback or a second worker finds the state moved and changes
// nothing.

export const FUNDING_STATUSES = ['pending', 'fiat_settling', 'minting', 'completed', 'failed', 'returned'] as const;
export type FundingStatus = (typeof FUNDING_STATUSES)[number];

/**
 *   pending        -> fiat_settling   the rail accepted the pull
 *   pending        -> failed          the rail refused the pull at submission
 *   fiat_settling  -> minting         the rail settled the fiat (ledger: rail clearing -> holder fiat)
 *   fiat_settling  -> failed          the rail failed the pull
 *   fiat_settling  -> returned        the rail returned the fiat before minting
 *   minting        -> completed       the mint is final on chain (ledger: holder fiat -> reserve; supply -> holder stablecoin)
 *   minting        -> failed          the mint reverted
 */
export const FUNDING_TRANSITIONS: Readonly<Record<FundingStatus, readonly FundingStatus[]>> = {
  pending: ['fiat_settling', 'failed'],
  fiat_settling: ['minting', 'failed', 'returned'],
  minting: ['completed', 'failed'],
  completed: [],
  failed: [],
  returned: [],
};

export const FUNDING_FAILURE_REASONS = ['insufficient_funds', 'account_closed', 'account_invalid', 'rejected_by_bank', 'limit_exceeded', 'mint_reverted'] as const;
export type FundingFailureReason = (typeof FUNDING_FAILURE_REASONS)[number];

export const OFF_RAMP_STATUSES = ['awaiting_transfer', 'transfer_confirmed', 'payout_pending', 'completed', 'failed', 'returned', 'expired'] as const;
export type OffRampStatus = (typeof OFF_RAMP_STATUSES)[number];

/**
 *   awaiting_transfer   -> transfer_confirmed   the holder's exact transfer to the burn address is final on chain
 *                                               (ledger: holder stablecoin -> supply; reserve -> holder fiat)
 *   awaiting_transfer   -> expired              no such transfer within the window
 *   transfer_confirmed  -> payout_pending       the rail accepted the push (ledger: holder fiat -> rail in flight)
 *   transfer_confirmed  -> failed               the rail refused the push at submission (nothing moved: the fiat stays the holder's)
 *   payout_pending      -> completed            the rail settled the payout (ledger: in flight -> rail clearing)
 *   payout_pending      -> failed               the rail failed the payout (ledger: in flight -> holder fiat)
 *   payout_pending      -> returned             the bank returned the payout (ledger: in flight -> holder fiat)
 */
export const OFF_RAMP_TRANSITIONS: Readonly<Record<OffRampStatus, readonly OffRampStatus[]>> = {
  awaiting_transfer: ['transfer_confirmed', 'expired'],
  transfer_confirmed: ['payout_pending', 'failed'],
  payout_pending: ['completed', 'failed', 'returned'],
  completed: [],
  failed: [],
  returned: [],
  expired: [],
};

export const OFF_RAMP_FAILURE_REASONS = ['insufficient_funds', 'account_closed', 'account_invalid', 'rejected_by_bank', 'limit_exceeded'] as const;
export type OffRampFailureReason = (typeof OFF_RAMP_FAILURE_REASONS)[number];

export function fundingMayBecome(from: FundingStatus, to: FundingStatus): boolean {
  return FUNDING_TRANSITIONS[from].includes(to);
}

export function offRampMayBecome(from: OffRampStatus, to: OffRampStatus): boolean {
  return OFF_RAMP_TRANSITIONS[from].includes(to);
}
