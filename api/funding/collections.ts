// The funding area's collections (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { FundingRequestRecord, OffRampRequestRecord, TransferClaimRecord } from './funding-records.ts';

/** Indexes `<workspace> NUL all NUL <id>`, `<workspace> NUL holder NUL <holder id> NUL <id>`, and `open NUL <id>` while not final. */
export const FUNDING_REQUESTS = collection<FundingRequestRecord>('funding_requests');
/** Indexes as funding requests'. */
export const OFF_RAMP_REQUESTS = collection<OffRampRequestRecord>('off_ramp_requests');
/** `<chain>/<tx hash>` → the off-ramp request the transfer paid: one transfer pays one request. */
export const TRANSFER_CLAIMS = collection<TransferClaimRecord>('off_ramp_transfer_claims');
/**
 * `<workspace> NUL <operation> NUL <Idempotency-Key>` → the request it created, written in the batch that
 * stores the request: a retry after a crash between the request and the idempotency record finds it.
 */
export const REQUEST_KEYS = collection<{ v: 1; id: string; fingerprint: string }>('funding_request_keys');
