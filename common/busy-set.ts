// Names held by running work (OT pairs of a vault, say), taken together and released together; a taker
// that finds what it needs busy waits for a release, up to a deadline. In one process, no I/O.

export interface Held<T> {
  value: T;
  /** Frees the names; a second call does nothing. */
  release: () => void;
}

export class BusySet {
  private readonly busy = new Set<string>();
  private waiters: (() => void)[] = [];

  isBusy(name: string): boolean {
    return this.busy.has(name);
  }

  get size(): number {
    return this.busy.size;
  }

  /**
   * Calls `choose` until it returns names none of which is busy (it sees the set through `isBusy`),
   * then holds them; waits for releases up to `waitMs`, and returns undefined if none came in time.
   */
  async take<T>(choose: () => { value: T; names: string[] } | undefined, waitMs: number): Promise<Held<T> | undefined> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const c = choose();
      if (c && !c.names.some((n) => this.busy.has(n))) {
        for (const n of c.names) this.busy.add(n);
        let released = false;
        return {
          value: c.value,
          release: () => {
            if (released) return;
            released = true;
            for (const n of c.names) this.busy.delete(n);
            const w = this.waiters;
            this.waiters = [];
            for (const f of w) f();
          },
        };
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.push(done);
      });
    }
  }
}
