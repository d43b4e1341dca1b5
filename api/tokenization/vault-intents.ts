// A customer-signed intent submitted through the vault transaction path (docs/transactions.md), as the
// tokenization area does it: a Safe owner's signature (kind 3, operations/{opId}/signatures), a role
// member's call on the token's roles module (kind 1, operations/{opId}/module-signature) and a call a vault
// wallet makes on a token (kind 1, policy-mint and nft-transfers). The submission is POST
// /v1/transactions as the organization, so every check of that path applies (the intent signature under an
// active API key, expiry, the nonce, the vault's policy, the end user), and the signer nodes then check the
// intent again themselves: what the API compares here is a courtesy to the caller, not the safety.
import { hexToBytes } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { httpStatusOfCode } from '../../core/errors/http-status.ts';
import { decodeIntent, type Intent } from '../../core/intents/intent.ts';
import type { TransactionService } from '../transactions/transaction-service.ts';
import type { TransactionRecord } from '../transactions/records.ts';

/** A customer-signed intent as a request carries it: hex (with or without 0x) and its Ed25519 signature. */
export interface SignedIntentInput {
  wallet_id: string;
  intent: string;
  intent_signature: string;
  /** A hosted vault with end-user authentication: the end user's token naming this intent. */
  end_user_token?: string | undefined;
}

const bare = (hex: string) => hex.replace(/^0x/, '');

/** The intent a request carries; 422 validation_failed when it does not parse. */
export function decodeIntentHex(hex: string): { intent: Intent; bytes: Uint8Array } {
  try {
    const bytes = hexToBytes(`0x${bare(hex)}`);
    return { intent: decodeIntent(bytes), bytes };
  } catch (err) {
    throw new CustodyError('validation_failed', `intent: does not parse: ${(err as Error).message}`);
  }
}

/** Submits the intent as the organization's vault transaction; a retry of the same intent answers the same transaction. */
export async function submitVaultIntent(transactions: TransactionService, org: string, input: SignedIntentInput, intent: Intent): Promise<TransactionRecord> {
  const { tx } = await transactions.submit(org, '', {
    wallet_id: input.wallet_id, intent: bare(input.intent), intent_signature: bare(input.intent_signature), idempotency_key: intent.idempotencyKey,
    ...(input.end_user_token !== undefined ? { end_user_token: input.end_user_token } : {}),
  });
  return tx;
}

/**
 * Runs `check`, the checks and the submission of a vault wallet's own kind-1 intent. When they refuse it (a
 * 4xx), the EVM nonce the intent's idempotency key reserved (SDK prepareNonce, POST
 * /v1/transactions/prepare) is let go, as POST /v1/transactions does: otherwise the wallet's later
 * transactions would wait on a nonce no transaction will use. A nonce already taken by a transaction stays.
 */
export async function releaseNonceOnRefusal<T>(transactions: TransactionService, org: string, walletId: string, intent: Intent, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (intent.kind === 'evm.transfer' && err instanceof CustodyError && httpStatusOfCode(err.code) < 500) await transactions.nonces.release(org, walletId, intent.idempotencyKey).catch(() => undefined);
    throw err;
  }
}
