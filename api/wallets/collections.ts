// The wallets' ledger collections (docs/api-storage.md, "The interface"); the wallets themselves are the
// vault API's (vaults/collections.ts).
import { collection } from '../store/collection.ts';
import type { LedgerEntryRecord } from './wallet-ledger.ts';

/** Index `wallet/<wallet id>/<sequence, 12 digits>`. */
export const LEDGER = collection<LedgerEntryRecord>('ledger');
/** The last sequence number given per wallet (`ledger_sequences/<wallet id>`). */
export const LEDGER_SEQUENCES = collection<number>('ledger_sequences');
