// The states of an escrow and the transitions between them (docs/platform/escrows.md "States"). The chain
// drives them: the sweep reads the escrow contract at finality. Every change goes through
// `escrowMayBecome`, checked under the escrow's lock against the stored state (compare-and-set).

export const ESCROW_STATUSES = ['awaiting_funding', 'funded', 'released', 'refunded', 'canceled', 'expired'] as const;
export type EscrowStatus = (typeof ESCROW_STATUSES)[number];

/**
 *   awaiting_funding -> funded     the payer's deposit is final on chain (ledger: payer stablecoin -> escrow)
 *   awaiting_funding -> canceled   POST /escrows/{id}/cancel, while nothing was deposited or submitted
 *   awaiting_funding -> expired    no deposit by `funding_deadline`
 *   funded           -> released   the payer's release is final (ledger: escrow -> payee stablecoin)
 *   funded           -> refunded   a refund (by the payee, or by the payer after refundable_after) is final (ledger: escrow -> payer stablecoin)
 */
export const ESCROW_TRANSITIONS: Readonly<Record<EscrowStatus, readonly EscrowStatus[]>> = {
  awaiting_funding: ['funded', 'canceled', 'expired'],
  funded: ['released', 'refunded'],
  released: [],
  refunded: [],
  canceled: [],
  expired: [],
};

export const ESCROW_FINAL: readonly EscrowStatus[] = ['released', 'refunded', 'canceled', 'expired'];

export function escrowMayBecome(from: EscrowStatus, to: EscrowStatus): boolean {
  return ESCROW_TRANSITIONS[from].includes(to);
}
