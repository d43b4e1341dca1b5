// Deleting single-use records that protect nothing any more (docs/storage.md "Pruning"): records whose
// names sort by the time after which they can never be needed again, so a pass deletes one key range,
// in synced batches of bounded size, without reading what the records hold.
import type { KvRange } from './kv-backend.ts';
import type { SealedStore } from './sealed-store.ts';

/**
 * How long past the moment a record stops protecting anything it is kept: room for a clock stepped back
 * (NTP, a VM restored) and for a session that was authorized just before that moment and claims after.
 */
export const PRUNE_MARGIN_MS = 60 * 60_000;

/**
 * Deletions per synced batch: as many as a remote backend takes in one (4,096 operations with the head,
 * tee/host-store/frame.ts), since a pass costs about one sync per batch.
 */
export const PRUNE_CHUNK_OPS = 4000;

/**
 * Deletes every record in `range`, and with each the records `with` names for it (an index entry's
 * record), in synced batches of at most PRUNE_CHUNK_OPS deletions. Returns how many records of the range
 * went (not counting `with`'s).
 */
export async function pruneRange(store: SealedStore, range: KvRange, withKeys: (key: string) => string[] = () => []): Promise<number> {
  let pruned = 0;
  let ops: { type: 'del'; key: string }[] = [];
  let inBatch = 0;
  const flush = async () => {
    if (ops.length === 0) return;
    await store.batch(ops);
    pruned += inBatch;
    ops = [];
    inBatch = 0;
  };
  // Deleting behind the listing is safe: keys() skips a record deleted while it runs.
  for await (const key of store.keys(range)) {
    ops.push({ type: 'del', key }, ...withKeys(key).map((k) => ({ type: 'del' as const, key: k })));
    inBatch++;
    if (ops.length >= PRUNE_CHUNK_OPS) await flush();
  }
  await flush();
  return pruned;
}
