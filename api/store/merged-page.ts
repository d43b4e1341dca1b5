// One page over several sources, each read in an order a stored record never leaves (a time-ordered id, an
// index entry): the oldest head by `sortKey` first, each source's order kept, up to one more than the
// page (so has_more is known). The cursor keeps one position per source, and each moves past what its
// source gave, so a walk repeats nothing and misses nothing that existed when it began, whatever arrives
// in any source meanwhile. Used by an account holder's activity and a workspace's payment flows.

/** An item of one source, with where that source's walk resumes after it. */
export interface Head<S extends string, T> {
  source: S;
  position: string;
  item: T;
}

export type Positions<S extends string> = Partial<Record<S, string>>;

/** The page of `limit` items from `streams` (each at most limit + 1 long), and the positions after it. */
export function mergeHeads<S extends string, T>(streams: Head<S, T>[][], limit: number, sortKey: (item: T) => string, positions: Positions<S>) {
  const at = streams.map(() => 0);
  const taken: Head<S, T>[] = [];
  while (taken.length <= limit) {
    let best = -1;
    for (let i = 0; i < streams.length; i++) {
      const h = streams[i]![at[i]!];
      if (h && (best < 0 || sortKey(h.item) < sortKey(streams[best]![at[best]!]!.item))) best = i;
    }
    if (best < 0) break;
    taken.push(streams[best]![at[best]!++]!);
  }
  const data = taken.slice(0, limit);
  const next: Positions<S> = { ...positions };
  for (const h of data) next[h.source] = h.position;
  return { items: data.map((h) => h.item), hasMore: taken.length > limit, next };
}
