// Transactions as stored (docs/transactions.md). The end-user token (or member-action proof) never lives
// here: it stays in the transaction's job until the signature is made, then goes.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { MemberActionBinding } from '../../core/session/member-action-binding.ts';
import type { SafeTxIntent } from '../../core/intents/intent.ts';
import type { Approval } from '../../core/policy/policy-approval.ts';
import { safeTxHash } from '../../core/chains/evm/safe-tx.ts';

export type TransactionState = 'awaiting_approval' | 'created' | 'checks' | 'signed' | 'broadcast' | 'confirmed' | 'final' | 'failed' | 'rejected';

export interface TransferRecord {
  recipient: string;
  /** `<chain>:native` or `<chain>:<token contract>`. */
  asset: string;
  amount: string;
}

/** A Safe transaction the wallet signs as an owner (intent kind 3): what the signature is for. */
export interface SafeTxRecord {
  /** The Safe, 0x lower case. */
  safe: string;
  chain_id: string;
  /** The Safe's nonce, base 10. */
  nonce: string;
  to: string;
  operation: number;
  /** The EIP-712 SafeTx digest (`Safe.getTransactionHash`), 0x hex: what the nodes sign. */
  safe_tx_hash: string;
}

export function safeTxView(intent: SafeTxIntent): SafeTxRecord {
  return {
    safe: `0x${bytesToHex(intent.safe)}`, chain_id: intent.chainId.toString(), nonce: intent.safeNonce.toString(), to: `0x${bytesToHex(intent.to)}`, operation: intent.operation,
    safe_tx_hash: `0x${bytesToHex(safeTxHash(intent))}`,
  };
}

export interface TransactionRecord {
  id: string;
  /**
   * `safe_tx`: a Safe owner's signature (intent kind 3), whose last state is `signed` with `signature`;
   * absent for a transfer.
   */
  kind?: 'safe_tx';
  org: string;
  vault_id: string;
  wallet_id: string;
  chain: string;
  family: 'evm' | 'bitcoin';
  state: TransactionState;
  idempotency_key: string;
  /** SHA-256 of the request's describing fields, for idempotent retries. */
  request_hash: string;
  intent: string;
  intent_signature: string;
  api_key_id: string;
  intent_sha256: string;
  transfers: TransferRecord[];
  tx_hash: string | null;
  reason: string | null;
  /**
   * EVM: the nonce its intent names (version 3), held for it from submission (evm-nonces.ts); Bitcoin:
   * the outpoints it spends (`txid:vout`), as its intent names them.
   */
  nonce?: number;
  /**
   * While not signed: why it waits (EVM: a lower nonce of the wallet not yet used) or signs again (a
   * signature from the cluster that did not verify, `bad_signature: ...`).
   */
  waiting?: string | undefined;
  /**
   * Bitcoin: set when the transaction followed is another signing of the intent found on chain, not the
   * one this service signed last (docs/transactions.md "Adopted transactions"): why it was adopted.
   */
  adopted?: string;
  /** Bitcoin, once adopted after its first broadcast: the fee the wallet ledger held then, which its release undoes. */
  fee_held?: string;
  inputs?: string[];
  /** A Safe transaction's fields and digest. */
  safe_tx?: SafeTxRecord;
  /** A Safe transaction, once signed: the owner's 65-byte signature r || s || v (v 27 or 28), 0x hex, as Safe's `checkSignatures` takes it. */
  signature?: string;
  fee: string | null;
  /** EVM, once included: what the inclusion cost (gas used x effective gas price), for the wallet ledger. */
  fee_paid?: string;
  raw_tx?: string;
  block_number?: number;
  confirmations?: number;
  /** A vault under a policy (docs/policies.md): the version it was admitted under, its chain position, the approvals collected and each quorum's progress. */
  policy?: { version: number; chain_seq: number; approvals: Approval[]; quorums: { k: number; approvers: string[]; approved_by: string[] }[] };
  created_at: string;
  updated_at: string;
}

export interface TransactionJob {
  id: string;
  attempts: number;
  next_at: number;
  end_user_token?: string;
  /**
   * With a member-action proof as end_user_token: the binding the nodes recompute its nonce from (salt in
   * hex), and for a passkey proof the assertion (hex), end_user_token then being the member credential.
   */
  member_action?: MemberActionJob;
  last_error?: string;
  /**
   * The W3C `traceparent` of the request that submitted it, when tracing was on: its signing joins that
   * request's trace (docs/operations.md "Traces"). Ids only.
   */
  traceparent?: string;
}

/** A member-action binding as a job keeps it: bytes in hex. */
export interface MemberActionJob {
  action_id: string;
  salt: string;
  passkey?: { credential_id: string; authenticator_data: string; client_data_json: string; signature: string };
  /** A batch action's intent digests, hex, in order. */
  batch?: string[];
}

export function memberActionJob(b: MemberActionBinding): MemberActionJob {
  const p = b.passkey;
  return {
    action_id: b.actionId, salt: bytesToHex(b.salt), ...(b.batch ? { batch: b.batch.map((d) => bytesToHex(d)) } : {}),
    ...(p ? { passkey: { credential_id: bytesToHex(p.credentialId), authenticator_data: bytesToHex(p.authenticatorData), client_data_json: bytesToHex(p.clientDataJson), signature: bytesToHex(p.signature) } } : {}),
  };
}

export function memberActionOfJob(j: MemberActionJob): MemberActionBinding {
  const p = j.passkey;
  return {
    actionId: j.action_id, salt: hexToBytes(j.salt), ...(j.batch ? { batch: j.batch.map((d) => hexToBytes(d)) } : {}),
    ...(p ? { passkey: { credentialId: hexToBytes(p.credential_id), authenticatorData: hexToBytes(p.authenticator_data), clientDataJson: hexToBytes(p.client_data_json), signature: hexToBytes(p.signature) } } : {}),
  };
}
