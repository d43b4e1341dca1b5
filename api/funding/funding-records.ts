// Funding and off-ramp requests as stored (docs/platform/funding.md). Amounts are base-unit integers as
// decimal strings: fiat in the currency's minor unit (cents), stablecoin in token units.
import type { FundingFailureReason, FundingStatus, OffRampFailureReason, OffRampStatus } from './funding-states.ts';

export interface FundingRequestRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  account_holder_id: string;
  wallet_id: string;
  chain: string;
  /** The wallet's address, where the stablecoin is minted. */
  address: string;
  /** `<chain>:<token contract>`. */
  asset: string;
  status: FundingStatus;
  fiat_amount: string;
  currency: string;
  stablecoin_amount: string;
  rail: string;
  rail_transfer_id: string | null;
  failure_reason: FundingFailureReason | null;
  return_reason: string | null;
  /** The issuer's signed mint, stored before it is broadcast so a retry sends the same bytes, never a second mint. */
  mint: { tx_hash: string; raw_tx: string; nonce: number; block_number: number | null } | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

export interface OffRampRequestRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  account_holder_id: string;
  wallet_id: string;
  chain: string;
  /** The holder's wallet address the transfer must come from. */
  address: string;
  asset: string;
  /** Where the holder sends the stablecoin (the rail's redemption address). */
  burn_address: string;
  status: OffRampStatus;
  /** Token units the holder must send, exactly. */
  stablecoin_amount: string;
  fiat_amount: string;
  currency: string;
  /** The vault-API transaction that carried the transfer, and its hash, once matched. */
  transaction_id: string | null;
  tx_hash: string | null;
  block_number: number | null;
  rail: string;
  rail_transfer_id: string | null;
  failure_reason: OffRampFailureReason | null;
  return_reason: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

/** A vault-API transaction (or on-chain transfer) claimed by one off-ramp: key the transaction hash. */
export interface TransferClaimRecord { v: 1; off_ramp_request_id: string }
