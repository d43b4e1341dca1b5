// The tokenization area's collections (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { AuthorityRecord, ProofChallengeRecord, RelayRecord, TokenOperationRecord, TokenRecord } from './records.ts';

/** Index `<workspace> NUL <id>`. */
export const AUTHORITIES = collection<AuthorityRecord>('token_authorities');
/** Key the challenge id; index `authority/<authority id>/<challenge id>`. */
export const PROOF_CHALLENGES = collection<ProofChallengeRecord>('token_authority_challenges');
/** Indexes `<workspace> NUL all NUL <id>`, `<workspace> NUL kind NUL <kind> NUL <id>`. */
export const TOKENS = collection<TokenRecord>('tokens');
/** `<workspace> NUL <operation> NUL <Idempotency-Key>` → the record made, written in the batch that stores it. */
export const TOKENIZATION_KEYS = collection<{ v: 1; id: string; fingerprint: string }>('tokenization_request_keys');
/**
 * Indexes `<token id> NUL all NUL <id>` (oldest first), for every record; `safe NUL <safe> NUL <id>` (a Safe's
 * operations) for Safe operations only; `vtx NUL <vault transaction id>` for vault calls only.
 */
export const OPERATIONS = collection<TokenOperationRecord>('token_operations');
/**
 * Indexes `<token id> NUL all NUL <id>` (a token's relays, oldest first), `spend NUL <tenant> NUL <chain> NUL
 * <created_at>` (what counts against the tenant's relay cap, walked from the rolling period's start) and
 * `request NUL <chain> NUL <forwarder> NUL <from> NUL <nonce>` (a holder's forward request relayed already).
 */
export const RELAYS = collection<RelayRecord>('token_relays');
