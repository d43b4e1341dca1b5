// Named in-process locks of the BFF stores (bff-store.ts, bff-store-postgres.ts); not exported by the SDK.
import { BffError } from './bff-error.ts';

/**
 * Named in-process locks, first come first served: a waiter runs once the one before it settles, or
 * gives up with `lock_timeout` after `waitMs` (and whoever queued behind it then waits for the one
 * before it only). MemoryBffStore's whole lock; a shared store's first step, so that one process sends
 * at most one waiter per name to the shared lock. `fn` gets the milliseconds of `waitMs` left.
 */
export class LocalLockQueue {
  // The tail of each lock's queue: a waiter runs once the promise before it settles.
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(name: string, waitMs: number, fn: (leftMs: number) => Promise<T>): Promise<T> {
    const started = Date.now();
    const before = this.tails.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    const tail = before.then(() => mine);
    this.tails.set(name, tail);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        before,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(lockTimeout(name, waitMs)), waitMs);
        }),
      ]);
    } catch (err) {
      release();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    try {
      return await fn(Math.max(0, waitMs - (Date.now() - started)));
    } finally {
      release();
      if (this.tails.get(name) === tail) this.tails.delete(name);
    }
  }
}

/** The lock was not granted in time; the message names the lock's kind only, never the reference in it. */
export const lockTimeout = (name: string, waitMs: number) => new BffError('lock_timeout', `the lock of ${name.split(':')[0]} was not granted within ${waitMs} ms`);
