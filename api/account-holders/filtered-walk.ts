// A page of a platform-API list read through an index whose positions are record ids, keeping only the
// records a filter accepts (docs/platform/pagination.md): batches are read until one more than a page
// matched, or the index ends, so a sparse filter still answers full pages.
import type { CollectionName } from '../store/collection.ts';
import type { RecordRepository } from '../store/record-repository.ts';

const BATCH = 100;

export async function filteredWalk<T extends { id: string }>(store: RecordRepository, c: CollectionName<T>, prefix: string, after: string | undefined, limit: number, keep: (r: T) => boolean): Promise<T[]> {
  const out: T[] = [];
  const size = Math.max(limit + 1, BATCH);
  let from = after;
  for (;;) {
    const batch = await c.in(store).byIndexAfter(prefix, from, size);
    for (const r of batch) {
      if (keep(r)) out.push(r);
      if (out.length > limit) return out;
    }
    if (batch.length < size) return out;
    from = batch[batch.length - 1]!.id;
  }
}
