// The escrow area's collections (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { EscrowActionRecord, EscrowEventRecord, EscrowRecord } from './escrow-records.ts';

/** Indexes `<workspace> NUL all NUL <id>`, `<workspace> NUL payer NUL <holder> NUL <id>`, `<workspace> NUL payee NUL <holder> NUL <id>`, and `open NUL <id>` while not final. */
export const ESCROWS = collection<EscrowRecord>('escrows');
/** Key the event id; index `escrow/<escrow id>/<event id>`. Append-only. */
export const ESCROW_EVENTS = collection<EscrowEventRecord>('escrow_events');
/** Key `<escrow id>/<member action id>`; index `escrow/<escrow id>/`. */
export const ESCROW_ACTIONS = collection<EscrowActionRecord>('escrow_member_actions');
/** `<workspace> NUL <operation> NUL <Idempotency-Key>` → the escrow, written in the batch that stores it. */
export const ESCROW_KEYS = collection<{ v: 1; id: string; fingerprint: string }>('escrow_request_keys');
