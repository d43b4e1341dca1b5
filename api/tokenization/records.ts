// Tokenization records as stored (docs/platform/tokenization.md "The API model"). Addresses lower case;
// amounts and big integers decimal strings. Types only: collections and services import these.
import type { DeployPlan } from './chain/deploy-plan.ts';
import type { TokenKind } from './chain/artifacts.ts';
import type { TokenStatus } from './token-states.ts';
import type { OperationState } from './operation-states.ts';
import type { RelayState } from './relay-states.ts';

/** An address an authority proved it controls: EIP-191 for an account without code, ERC-1271 for a contract account. */
export interface ProvenAddress {
  address: string;
  chain: string;
  /** How the proof verified: a plain signature (`eoa`) or the contract's isValidSignature (`contract`). */
  kind: 'eoa' | 'contract';
  proven_at: string;
}

/** A Safe owned by an authority's proven addresses, checked on chain. */
export interface ControlSafe {
  address: string;
  chain: string;
  owners: string[];
  threshold: number;
  /** `deployed` by this service through the chain layer, or an existing Safe `registered` after reading it. */
  origin: 'deployed' | 'registered';
  added_at: string;
}

/** The issuer behind tokens: a name and the addresses and Safes it proved it controls. */
export interface AuthorityRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  name: string;
  addresses: ProvenAddress[];
  control_safes: ControlSafe[];
  created_at: string;
  updated_at: string;
}

/** A one-use, expiring message an address signs to prove control; key: the challenge id. */
export interface ProofChallengeRecord {
  v: 1;
  id: string;
  authority_id: string;
  workspace: string;
  address: string;
  chain: string;
  /** The exact text signed (EIP-191 personal_sign): names the authority, address, chain, challenge and expiry. */
  message: string;
  expires_at: string;
  used_at: string | null;
}

/** One owner of a token's admin Safe: one of the customer's own vault wallets, or an outside signer. */
export interface SafeOwner {
  address: string;
  kind: 'vault' | 'outside';
  /** The vault API's wallet id for a vault owner; null for an outside signer. */
  wallet_id: string | null;
}

/** A deploy step's progress: `sent` is recorded before the step is sent, `done` once the chain shows it. */
export interface DeployStepRecord { name: string; address: string; status: 'pending' | 'sent' | 'done' }

/** Why a deploy stopped: the chain refused a step (`revert`) or could not be reached or answer (`engine`). */
export interface DeployFailure { reason: 'revert' | 'engine'; step: string; message: string; error_name: string | null; at: string }

export interface TokenRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  /** The vault API organization whose wallets own the Safe. */
  org: string;
  kind: TokenKind;
  chain: string;
  chain_id: number;
  name: string | null;
  symbol: string | null;
  decimals: number | null;
  base_uri: string | null;
  uri: string | null;
  authority_id: string | null;
  owners: SafeOwner[];
  threshold: number;
  /** Computed before anything is sent (CREATE2): the token, its admin Safe and the chain's forwarder. */
  address: string;
  safe: string;
  forwarder: string;
  status: TokenStatus;
  /** The recorded plan (api/tokenization/chain/deploy-plan.ts): what resuming continues. */
  plan: DeployPlan;
  steps: DeployStepRecord[];
  failure: DeployFailure | null;
  deploy_attempts: number;
  created_at: string;
  updated_at: string;
  deployed_at: string | null;
}

/** A Safe transaction as stored: every EIP-712 field, integers as decimal strings, addresses lower case. */
export interface StoredSafeTx {
  to: string;
  value: string;
  data: string;
  operation: 0 | 1;
  safe_tx_gas: string;
  base_gas: string;
  gas_price: string;
  gas_token: string;
  refund_receiver: string;
  nonce: string;
}

/** An owner's signature collected for an operation, and how it came. */
export interface OperationSignature {
  owner: string;
  /** `vault_intent`: a customer-signed kind-3 intent submitted here; `vault_transaction`: a signed vault transaction named by id; `eip712`: an outside owner's signature. */
  how: 'vault_intent' | 'vault_transaction' | 'eip712';
  wallet_id: string | null;
  transaction_id: string | null;
  signature: string;
  at: string;
}

/**
 * An operation run through the token's roles module instead of the Safe's signatures: a role member's call
 * `execTransactionWithRole(to, value, data, operation, role_key, true)` on the modifier, sent as the member
 * vault wallet's own transaction (a customer-signed kind-1 intent on the vault transaction path).
 */
export interface ModuleExecution {
  /** The token's Zodiac Roles modifier. */
  module: string;
  role_key: number;
  /** The member wallet's address (the transaction's sender). */
  member: string;
  wallet_id: string;
  /** The vault transaction that carries the call, and its intent's idempotency key (a retry answers the same). */
  transaction_id: string;
  idempotency_key: string;
  at: string;
}

/** Why an operation failed: the chain refused it (`revert`, decoded) or could not run it (`engine`). */
export interface OperationFailure { reason: 'revert' | 'engine'; message: string; error_name: string | null; at: string }

interface OperationCommon {
  v: 1;
  id: string;
  token_id: string;
  tenant: string;
  workspace: string;
  /** What it does: mint, burn, pause, grant_role, raw_safe_tx, policy_mint, nft_transfer… */
  kind: string;
  /** The request's arguments as given (for display and the RWA log); never a credential. */
  params: Record<string, unknown>;
  chain: string;
  chain_id: number;
  state: OperationState;
  tx_hash: string | null;
  failure: OperationFailure | null;
  created_at: string;
  updated_at: string;
  executed_at: string | null;
  confirmed_at: string | null;
  /** Confirmed, and its listeners (the token's transparency log) have not all run yet (confirmed-operations.ts). */
  log_pending?: true;
}

/** One privileged call on a token: one Safe transaction of its admin Safe (docs/platform/tokenization.md "Operations"). */
export interface OperationRecord extends OperationCommon {
  /** Absent on records written before vault calls existed: every one of those is a Safe operation. */
  via?: 'safe';
  safe: string;
  safe_tx: StoredSafeTx;
  safe_tx_hash: string;
  threshold: number;
  signatures: OperationSignature[];
  /** How many times the operation was moved to a freed Safe nonce (its signatures then start again). */
  reproposals: number;
  /** Set when it went through the roles module (`module-signature`); absent or null for a Safe execution. */
  module_execution?: ModuleExecution | null;
}

/** What a vault call sends: one customer-signed kind-1 intent from the wallet to the token, value 0. */
export interface VaultCall {
  /** The vault API organization whose wallet sends it (the token's). */
  organization: string;
  wallet_id: string;
  /** The wallet's address: the transaction's sender (the minter, the holder). */
  from: string;
  /** The token. */
  to: string;
  /** The calldata the intent signs: the mint or the transfer. */
  data: string;
  /** The vault transaction (POST /v1/transactions) that carries it. */
  transaction_id: string;
  /** SHA-256 of the intent bytes the customer signed. */
  intent_sha256: string;
}

/**
 * A call a vault wallet of the customer makes on the token itself (`policy_mint`, `nft_transfer`;
 * docs/platform/tokenization.md "Calls by a vault wallet"): one vault transaction, no Safe transaction, so
 * it holds no Safe nonce and the Safe's operations never see it.
 */
export interface VaultCallRecord extends OperationCommon {
  via: 'vault_transaction';
  vault_call: VaultCall;
}

/** Every record of a token's operations list. */
export type TokenOperationRecord = OperationRecord | VaultCallRecord;
/** An ERC-2771 forward request as signed, integers as decimal strings (deadline: unix seconds), addresses lower case. */
export interface StoredForwardRequest {
  from: string;
  to: string;
  value: string;
  gas: string;
  nonce: string;
  deadline: number;
  data: string;
}

/** Why a relay failed: its execution reverted on chain (`revert`, gas spent) or its transaction never went out (`engine`). */
export interface RelayFailure { reason: 'revert' | 'engine'; message: string; error_name: string | null; at: string }

/** One holder's transfer relayed through the chain's forwarder, paid by the relayer (docs/platform/tokenization.md "Gasless transfers"). */
export interface RelayRecord {
  v: 1;
  id: string;
  token_id: string;
  tenant: string;
  workspace: string;
  chain: string;
  chain_id: number;
  forwarder: string;
  relayer: string;
  request: StoredForwardRequest;
  signature: string;
  /** The EIP-712 hash the holder signed. */
  request_hash: string;
  /** The transfer `request.data` carries, decoded. */
  transfer: { function: string; from: string; to: string; amount: string | null; token_id: string | null };
  state: RelayState;
  /** The relayer's `execute` transaction, signed and recorded before it is broadcast. */
  tx_hash: string;
  /** Its signed bytes, so a restart broadcasts the same transaction again rather than a second one. */
  raw_tx: string;
  relayer_nonce: number;
  gas_limit: string;
  max_fee_per_gas: string;
  max_priority_fee_per_gas: string;
  /** Counted against the tenant's cap while `sent`: gas_limit × max_fee_per_gas, wei. */
  reserved_wei: string;
  gas_used: string | null;
  effective_gas_price: string | null;
  /** What the relayer paid (gas_used × effective_gas_price), counted instead of the reservation once known; 0 when nothing went out. */
  cost_wei: string | null;
  block_number: string | null;
  failure: RelayFailure | null;
  created_at: string;
  updated_at: string;
  confirmed_at: string | null;
}
