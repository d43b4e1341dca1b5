// The BFF store contract (platform-api.md "BFF helper and browser rules"; docs/platform/bff.md "The
// store contract"): where a BFF keeps its member sessions and sign-in transactions, and the lock that
// serializes refresh and sign-out of one session reference across every BFF instance. Values are opaque
// sealed strings (BffSessions encrypts them before they get here), so a store sees no secret.
//
// A store shared by several instances (Redis, PostgreSQL, a key-value service) implements the same five
// calls: durable writes, per-key expiry, and a mutual-exclusion lease per name. MemoryBffStore is the
// single-process implementation: it serializes within one process only.
import { LocalLockQueue } from './bff-local-locks.ts';

export interface BffLockOptions {
  /**
   * How long the lock may be held before another instance may take it (a crashed holder must not block
   * the reference forever). Longer than the work under it: the API calls made there time out sooner.
   */
  leaseMs: number;
  /** How long to wait for the lock before failing with BffError `lock_timeout`. */
  waitMs: number;
}

export interface BffStore {
  /** The value stored under `key`, or undefined when none or expired. */
  get(key: string): Promise<string | undefined>;
  /** Stores `value` for `ttlMs`; resolves only once the write is durable (it is what recovery relies on). */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Stores `value` only when `key` holds nothing (unexpired); true when it was written. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  delete(key: string): Promise<void>;
  /**
   * Runs `fn` while holding the lock `name` exclusively among every BFF instance sharing the store, and
   * releases it after, whatever `fn` does.
   */
  withLock<T>(name: string, o: BffLockOptions, fn: () => Promise<T>): Promise<T>;
}

interface Entry { value: string; expiresAt: number }

/** The in-process BffStore: one process's instances share it; a multi-instance BFF needs a shared store. */
export class MemoryBffStore implements BffStore {
  private readonly entries = new Map<string, Entry>();
  private readonly queue = new LocalLockQueue();
  private writes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async get(key: string): Promise<string | undefined> {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0)) throw new RangeError('ttlMs must be positive');
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    // Expired entries would otherwise stay until read: a bounded sweep every 256 writes.
    if (++this.writes % 256 === 0) this.sweep();
  }

  // Checked and written with no await between: concurrent callers cannot both find the key absent.
  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    if (!(ttlMs > 0)) throw new RangeError('ttlMs must be positive');
    const e = this.entries.get(key);
    if (e && e.expiresAt > this.now()) return false;
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    if (++this.writes % 256 === 0) this.sweep();
    return true;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async withLock<T>(name: string, o: BffLockOptions, fn: () => Promise<T>): Promise<T> {
    return this.queue.run(name, o.waitMs, () => fn());
  }

  private sweep(): void {
    const now = this.now();
    for (const [k, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(k);
  }
}
