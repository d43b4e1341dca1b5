// A bounded memo for results that depend only on public inputs (derived keys, tweaks, prepared key
// packages): beyond `limit` entries the oldest is dropped and recomputed on its next use.
export class BoundedMemo<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly limit: number) {}

  get(key: string, compute: () => V): V {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const value = compute();
    if (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
    return value;
  }
}
