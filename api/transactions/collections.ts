// The transactions' collections (docs/vault-api.md), each declared once with its record type
// (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { TransactionJob, TransactionRecord } from './records.ts';

/** Index: `txIndex` (transaction-service.ts). */
export const TRANSACTIONS = collection<TransactionRecord>('transactions');
/** A transaction's attempts while it is driven to a final state, under the transaction's id. */
export const TX_JOBS = collection<TransactionJob>('tx_jobs');
/** `<chain>/<address, lower case>` → the next EVM nonce to use from that address. */
export const EVM_NONCES = collection<number>('evm_nonces');
