// The collections of the token logs: entries by `<token>/<12-digit index>` (indexed the same way under
// `<token> NUL <index>` for the last one), witnesses by id (indexed per token), cosignatures by
// `<token>/<witness>/<12-digit size>` (indexed per token and witness for the latest).
import { collection } from '../../store/collection.ts';
import type { CosignatureRecord, LogEntryRecord, WitnessRecord } from './records.ts';

export const LOG_ENTRIES = collection<LogEntryRecord>('rwa_log_entries');
export const LOG_WITNESSES = collection<WitnessRecord>('rwa_log_witnesses');
export const LOG_COSIGNATURES = collection<CosignatureRecord>('rwa_log_cosignatures');

export const pad = (n: number) => String(n).padStart(12, '0');
export const entryId = (token: string, index: number) => `${token}/${pad(index)}`;
export const entryIndex = (token: string, index: number) => `${token}\x00${pad(index)}`;
export const witnessIndex = (token: string, id: string) => `${token}\x00${id}`;
export const cosignatureId = (token: string, witness: string, size: number) => `${token}/${witness}/${pad(size)}`;
export const cosignatureIndex = (token: string, witness: string, size: number) => `${token}\x00${witness}\x00${pad(size)}`;
