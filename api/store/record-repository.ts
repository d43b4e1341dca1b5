// The one interface behind which the API keeps its records (issue #18 items 1 and 3, docs/api-storage.md):
// JSON records in named collections, secondary keys as index entries walked in byte order, and
// multi-record changes applied atomically. Two implementations: LevelDB, embedded (record-store.ts), and
// PostgreSQL, shared by several API instances (postgres/postgres-record-store.ts). One contract test
// suite (test/store/repository-contract.ts) runs against both.
import type { EnqueueOptions } from '../jobs/job-queue.ts';
import type { TryResult } from './local-locks.ts';

export type Op =
  /** `unindex`: entries of the record to remove, written under a key that no longer holds (a state that changed). */
  | { type: 'put'; collection: string; id: string; value: unknown; index?: string[]; unindex?: string[] }
  | { type: 'del'; collection: string; id: string; index?: string[] }
  /**
   * A job for the durable queue (api/jobs/job-queue.ts), enqueued in the same change as the records that
   * create its work, so a crash never leaves the work without its job. A job its dedupe key already
   * names is not enqueued again. `out` is set once the batch is applied: the job's id, and whether this
   * operation created it.
   */
  | { type: 'enqueue'; kind: string; key: string; payload: unknown; opts?: EnqueueOptions; out?: { id: string; created: boolean } };

/** One index entry of a walk: its position (what follows the prefix) and its record, undefined when gone. */
export interface IndexEntry<T> {
  position: string;
  value: T | undefined;
}

/**
 * Ordering: ids and index entries compare as their UTF-8 bytes (LevelDB's bytewise order), and an index
 * entry sorts as `<index string> \x00 <id>`; an implementation that orders otherwise breaks cursors.
 */
export interface RecordRepository {
  get<T>(collection: string, id: string): Promise<T | undefined>;
  /** Applies every operation, in order, or none. */
  batch(ops: Op[]): Promise<void>;
  put(collection: string, id: string, value: unknown, index?: string[]): Promise<void>;
  /** Puts the record only when none is stored under its id; of concurrent calls for one id exactly one returns true. */
  insertIfAbsent(collection: string, id: string, value: unknown, index?: string[]): Promise<boolean>;
  /** Records whose index entry starts with `prefix`, in index order. */
  byIndex<T>(collection: string, prefix: string, limit?: number): Promise<T[]>;
  /** Up to `limit` records whose index entry starts with `prefix` and sorts strictly after `prefix + after`. */
  byIndexAfter<T>(collection: string, prefix: string, after: string | undefined, limit: number): Promise<T[]>;
  /** Index entries with their positions, ascending after `after`, or descending before it (`reverse`). */
  byIndexEntries<T>(collection: string, prefix: string, after: string | undefined, limit: number, reverse?: boolean): Promise<IndexEntry<T>[]>;
  /** Gives stored records the index entries `indexOf` names, once per `version`; how many it indexed. */
  reindex<T>(collection: string, version: number, indexOf: (record: T) => string[]): Promise<number>;
  /** Records of a collection in id order, starting after `after`, stopping at `lt`. */
  range<T>(collection: string, opts?: { after?: string; lt?: string }): AsyncGenerator<T>;
  /** Like `range`, with each record's id; at most `limit` records. */
  entries<T>(collection: string, opts?: { after?: string; lt?: string; limit?: number }): AsyncGenerator<{ id: string; value: T }>;
  all<T>(collection: string): AsyncGenerator<T>;
  count(collection: string): Promise<number>;
  /**
   * Runs `fn` holding the lock `name`, waiting for it: across every process that shares the store (an
   * advisory lock on PostgreSQL; in-process on LevelDB, which one process holds). Not re-entrant.
   */
  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` holding `name` when it is free now; `{ ran: false }` when another holds it. */
  tryExclusive<T>(name: string, fn: () => Promise<T>): Promise<TryResult<T>>;
  /** Throws when the store is closed or failing (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
