// Funding and off-ramp requests as stored (docs/platform/funding.md). Amounts are base-unit integers as
// decimal strings: fiat in the currency's minor unit (cents), stablecoin in token units.
import type { FundingFailureReason, FundingStatus, OffRampFailureReason, OffRampStatus } from './funding-states.ts';

/** What a funding and an off-ramp request both hold: the holder's wallet, the amounts and the rail transfer. */
interface RequestRecord<Status, Failure> {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  account_holder_id: string;
  wallet_id: string;
  chain: string;
  /** The wallet's address: where the stablecoin is minted, or where the off-ramp's transfer must come from. */
  address: string;
  /** `<chain>:<token contract>`. */
  asset: string;
  status: Status;
  fiat_amount: string;
  currency: string;
  /** Token units: minted, or to be sent exactly. */
  stablecoin_amount: string;
  rail: string;
  rail_transfer_id: string | null;
  failure_reason: Failure | null;
  return_reason: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

export interface FundingRequestRecord extends RequestRecord<FundingStatus, FundingFailureReason> {
  /** The issuer's signed mint, stored before it is broadcast so a retry sends the same bytes, never a second mint. */
  mint: { tx_hash: string; raw_tx: string; nonce: number; block_number: number | null } | null;
}

export interface OffRampRequestRecord extends RequestRecord<OffRampStatus, OffRampFailureReason> {
  /** Where the holder sends the stablecoin (the rail's redemption address). */
  burn_address: string;
  /** The vault-API transaction that carried the transfer, and its hash, once matched. */
  transaction_id: string | null;
  tx_hash: string | null;
  block_number: number | null;
  expires_at: string;
}

/** A vault-API transaction (or on-chain transfer) claimed by one off-ramp: key the transaction hash. */
export interface TransferClaimRecord { v: 1; off_ramp_request_id: string }
