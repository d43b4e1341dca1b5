// Deleting single-use records that protect nothing any more (docs/storage.md "Pruning"): records whose
// names sort by the time after which they can never be needed again, so a pass deletes one key range,
// in synced batches of bounded size, without reading what the records hold. Each kind keeps the time
// below which it may have deleted records (`pruned/<kind>`), raised on disk before any deletion, so that
// what was pruned stays refused even if the node's clock is later set back.
import { KeyedMutex } from '../../common/keyed-mutex.ts';
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

/** The kinds of records a pass prunes by a time bound: session claims (ms), intent records (seconds). */
export type PruneBound = 'session-claims' | 'intent-records';

const floorKey = (kind: PruneBound) => `pruned/${kind}`;
const floorLocks = new WeakMap<SealedStore, KeyedMutex>();

/** The bound below which records of `kind` may have been deleted (0 when no pass ran). */
export async function prunedBelow(store: SealedStore, kind: PruneBound): Promise<bigint> {
  const raw = await store.get(floorKey(kind));
  return raw ? BigInt(new TextDecoder().decode(raw)) : 0n;
}

/**
 * Raises the bound of `kind` to `bound`, never lowering it, on disk before this resolves; returns the
 * bound now in force, which the caller deletes below. A clock set back cannot lower it.
 */
export async function raisePrunedBelow(store: SealedStore, kind: PruneBound, bound: bigint): Promise<bigint> {
  let locks = floorLocks.get(store);
  if (!locks) floorLocks.set(store, (locks = new KeyedMutex()));
  return locks.run(kind, async () => {
    const now = await prunedBelow(store, kind);
    if (bound <= now) return now;
    await store.put(floorKey(kind), new TextEncoder().encode(bound.toString()));
    return bound;
  });
}
