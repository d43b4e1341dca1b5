// The BFF store contract (platform-api.md "BFF helper and browser rules"; docs/platform/bff.md "The
// store contract"): where a BFF keeps its member sessions and sign-in transactions, and the lock that
// serializes refresh and sign-out of one session reference across every BFF instance. Values are opaque
// sealed strings (BffSessions encrypts them before they get here), so a store sees no secret.
//
// A store shared by several instances (Redis, PostgreSQL, a key-value service) implements the same five
// calls: durable writes, per-key expiry, and a mutual-exclusion lease per name. MemoryBffStore is the
// single-process implementation: it serializes within one process only.
import { BffError } from './bff-error.ts';

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
  // The tail of each lock's queue: a waiter runs once the promise before it settles.
  private readonly locks = new Map<string, Promise<void>>();
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

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    if ((await this.get(key)) !== undefined) return false;
    await this.set(key, value, ttlMs);
    return true;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async withLock<T>(name: string, o: BffLockOptions, fn: () => Promise<T>): Promise<T> {
    const before = this.locks.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    const tail = before.then(() => mine);
    this.locks.set(name, tail);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        before,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new BffError('lock_timeout', `the lock of ${name.split(':')[0]} was not granted within ${o.waitMs} ms`)), o.waitMs);
        }),
      ]);
    } catch (err) {
      // Whoever queued behind this waiter waits for `before` only, not for work that will never run.
      release();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    try {
      return await fn();
    } finally {
      release();
      if (this.locks.get(name) === tail) this.locks.delete(name);
    }
  }

  private sweep(): void {
    const now = this.now();
    for (const [k, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(k);
  }
}
