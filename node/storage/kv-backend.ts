// What the sealed store needs of the bytes under it (docs/storage.md "Backends"): string keys, byte
// values, one atomic batch synced to disk, and ordered iteration. LevelKvBackend (a LevelDB directory)
// is the default; tee/host-store/ serves one to an enclave from its untrusted parent. A backend is
// trusted for nothing: the store checks whatever it answers against its authenticated head.

export type KvOp = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string };

/** Keys `gte` ≤ k < `lt`, compared as UTF-8 bytes (LevelDB's order). */
export interface KvRange {
  gte: string;
  lt: string;
}

export interface KvBackend {
  open(): Promise<void>;
  /** The value of `key`, or undefined when there is none. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** Applies every operation or none; with `sync`, on disk before this resolves. */
  batch(ops: readonly KvOp[], opts: { sync: boolean }): Promise<void>;
  /** Every entry, in key order. */
  entries(): AsyncIterable<[string, Uint8Array]>;
  /** The keys in `range`, in key order. */
  keys(range: KvRange): AsyncIterable<string>;
  close(): Promise<void>;
}

const utf8 = new TextEncoder();

/** LevelDB's key order: the UTF-8 bytes, compared as unsigned bytes (not JavaScript's UTF-16 order). */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(utf8.encode(a), utf8.encode(b));
}

export function inRange(key: string, range: KvRange): boolean {
  return compareKeys(key, range.gte) >= 0 && compareKeys(key, range.lt) < 0;
}
