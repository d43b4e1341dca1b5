// The collections of distributions and corporate actions (docs/api-storage.md, "The interface").
import { collection } from '../../store/collection.ts';
import type { CorporateActionRecord, DistributionRecord } from './records.ts';

/** Index `<token id> NUL <id>`. */
export const DISTRIBUTIONS = collection<DistributionRecord>('rwa_distributions');
/** Index `<token id> NUL <id>`. */
export const CORPORATE_ACTIONS = collection<CorporateActionRecord>('rwa_corporate_actions');
/** `<workspace> NUL <operation> NUL <Idempotency-Key>` → the record made, written in the batch that stores it. */
export const ACTION_KEYS = collection<{ v: 1; id: string; fingerprint: string }>('rwa_action_request_keys');
