// A collection of a RecordRepository declared once, with its name and record type (docs/api-storage.md,
// "The interface"): each area lists its collections in a `collections.ts`, and a call site reads
// `VAULTS.in(store).get(id)` instead of `store.get<VaultRecord>('vaults', id)`, so names and record types
// are not repeated where the records are used. Changes spanning collections are built with
// `putOp`/`delOp`, which need no store, and applied together by the repository's `batch`.
import type { IndexEntry, Op, RecordRepository } from './record-repository.ts';

type PutEntries = { index?: string[] | undefined; unindex?: string[] | undefined };
export type PutOp = Extract<Op, { type: 'put' }>;
export type DelOp = Extract<Op, { type: 'del' }>;

/** A collection's name and record type, without a store: what an area declares at import time. */
export class CollectionName<T> {
  constructor(readonly name: string) {}

  /** The collection in `store`. */
  in(store: RecordRepository): Collection<T> {
    return new Collection<T>(store, this.name);
  }

  /** `entries` are spread as given, so an op carries exactly the keys a literal op would. */
  putOp(id: string, value: T, entries: PutEntries = {}): PutOp {
    return { type: 'put', collection: this.name, id, value, ...entries };
  }

  delOp(id: string, index?: string[]): DelOp {
    return { type: 'del', collection: this.name, id, ...(index ? { index } : {}) };
  }
}

export function collection<T>(name: string): CollectionName<T> {
  return new CollectionName<T>(name);
}

/** A collection bound to a store: the repository's methods with the name and record type filled in. */
export class Collection<T> extends CollectionName<T> {
  constructor(
    readonly store: RecordRepository,
    name: string,
  ) {
    super(name);
  }

  get(id: string): Promise<T | undefined> {
    return this.store.get<T>(this.name, id);
  }

  put(id: string, value: T, index?: string[]): Promise<void> {
    return this.store.put(this.name, id, value, index);
  }

  insertIfAbsent(id: string, value: T, index?: string[]): Promise<boolean> {
    return this.store.insertIfAbsent(this.name, id, value, index);
  }

  delete(id: string, index?: string[]): Promise<void> {
    return this.store.batch([this.delOp(id, index)]);
  }

  byIndex(prefix: string, limit?: number): Promise<T[]> {
    return this.store.byIndex<T>(this.name, prefix, limit);
  }

  byIndexAfter(prefix: string, after: string | undefined, limit: number): Promise<T[]> {
    return this.store.byIndexAfter<T>(this.name, prefix, after, limit);
  }

  byIndexEntries(prefix: string, after: string | undefined, limit: number, reverse = false): Promise<IndexEntry<T>[]> {
    return this.store.byIndexEntries<T>(this.name, prefix, after, limit, reverse);
  }

  reindex(version: number, indexOf: (record: T) => string[]): Promise<number> {
    return this.store.reindex<T>(this.name, version, indexOf);
  }

  range(opts?: { after?: string; lt?: string }): AsyncGenerator<T> {
    return this.store.range<T>(this.name, opts);
  }

  entries(opts?: { after?: string; lt?: string; limit?: number }): AsyncGenerator<{ id: string; value: T }> {
    return this.store.entries<T>(this.name, opts);
  }

  all(): AsyncGenerator<T> {
    return this.store.all<T>(this.name);
  }

  count(): Promise<number> {
    return this.store.count(this.name);
  }
}
