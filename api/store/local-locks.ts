// Named locks inside one process: what `RecordRepository.exclusive` is on the embedded store (one process
// holds LevelDB), and the first stage of the PostgreSQL advisory locks (postgres/advisory-locks.ts), which
// take a name here before they ask the database, so a process holds each name at most once.
export type TryResult<T> = { ran: true; value: T } | { ran: false };

export class LocalLocks {
  private readonly held = new Set<string>();
  private readonly waiters = new Map<string, (() => void)[]>();

  /** Waits until `name` is free, then holds it. */
  async acquire(name: string): Promise<void> {
    while (this.held.has(name)) {
      await new Promise<void>((wake) => {
        const list = this.waiters.get(name) ?? [];
        list.push(wake);
        this.waiters.set(name, list);
      });
    }
    this.held.add(name);
  }

  /** Holds `name` if it is free now. */
  tryAcquire(name: string): boolean {
    if (this.held.has(name)) return false;
    this.held.add(name);
    return true;
  }

  /** Frees `name` and wakes its waiters, who check again (the first to run takes it). */
  release(name: string): void {
    this.held.delete(name);
    const list = this.waiters.get(name);
    this.waiters.delete(name);
    for (const wake of list ?? []) wake();
  }

  async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    await this.acquire(name);
    try {
      return await fn();
    } finally {
      this.release(name);
    }
  }

  async tryRun<T>(name: string, fn: () => Promise<T>): Promise<TryResult<T>> {
    if (!this.tryAcquire(name)) return { ran: false };
    try {
      return { ran: true, value: await fn() };
    } finally {
      this.release(name);
    }
  }
}
