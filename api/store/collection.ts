// A typed view of one collection of a RecordRepository: the name and the record type bound once, so a
// call site reads `vaults.get(id)` instead of `store.get<VaultRecord>('vaults', id)` (docs/api-storage.md,
// "Rewiring the call sites"). Changes spanning collections are built with `putOp`/`delOp` and applied
// together by the repository's `batch`.
import type { IndexEntry, Op, RecordRepository } from './record-repository.ts';

export class Collection<T> {
  constructor(
    readonly store: RecordRepository,
    readonly name: string,
  ) {}

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

  putOp(id: string, value: T, entries: { index?: string[]; unindex?: string[] } = {}): Op {
    return { type: 'put', collection: this.name, id, value, ...entries };
  }

  delOp(id: string, index?: string[]): Op {
    return { type: 'del', collection: this.name, id, ...(index ? { index } : {}) };
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
