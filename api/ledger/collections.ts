// The platform ledger's collection (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { LedgerEntryRecord } from './platform-ledger.ts';

/** Key `ple_<source>`; indexes `account/<account>/<id>` and `workspace/<workspace>/<id>`. Append-only. */
export const LEDGER_ENTRIES = collection<LedgerEntryRecord>('platform_ledger_entries');
