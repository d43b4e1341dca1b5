// One ECDSA run per OT pair at a time (DKLs23 over KOS). A peer that tampers with the extension learns
// whether this node's consistency check passed, which is one guess at one bit of Δ; the pair is retired
// after a failed check. Runs over the same pair at once would each answer a guess before any retirement
// lands, so a node lets a pair's material serve one run at a time, whatever the coordinator opens.
import { SessionRefused } from './session-host.ts';

type Release = () => void;

export class OtPairLocks {
  private readonly busy = new Set<string>();
  private waiters: (() => void)[] = [];

  /**
   * Takes every pair {me, peer} of `keyId` for one run, waiting up to `waitMs` for runs that hold some
   * of them to end (a coordinator's cancel can reach this node after the next session's open); then
   * refuses with `ot_busy`. The returned release is idempotent.
   */
  async acquire(keyId: string, peers: number[], waitMs: number): Promise<Release> {
    const names = peers.map((p) => `${keyId}/${p}`);
    const deadline = Date.now() + waitMs;
    while (names.some((n) => this.busy.has(n))) {
      const left = deadline - Date.now();
      if (left <= 0) throw new SessionRefused('ot_busy', `an ECDSA run with parties ${peers.join(',')} of this key is still in progress`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.push(done);
      });
    }
    for (const n of names) this.busy.add(n);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const n of names) this.busy.delete(n);
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    };
  }

  /** Pairs held now (for tests and metrics). */
  get held(): number {
    return this.busy.size;
  }
}
