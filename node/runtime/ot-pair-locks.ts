// One ECDSA run per OT pair at a time (DKLs23 over KOS). A peer that tampers with the extension learns
// whether this node's consistency check passed, which is one guess at one bit of Δ; the pair is retired
// after a failed check. Runs over the same pair at once would each answer a guess before any retirement
// lands, so a node lets a pair's material serve one run at a time, whatever the coordinator opens.
import { BusySet } from '../../common/busy-set.ts';
import { SessionRefused } from './session-host.ts';

export class OtPairLocks {
  private readonly pairs = new BusySet();

  /**
   * Takes every pair {me, peer} of `keyId` for one run, waiting up to `waitMs` for runs that hold some
   * of them to end (a coordinator's cancel can reach this node after the next session's open); then
   * refuses with `ot_busy`. The returned release is idempotent.
   */
  async acquire(keyId: string, peers: number[], waitMs: number): Promise<() => void> {
    const names = peers.map((p) => `${keyId}/${p}`);
    const held = await this.pairs.take(() => ({ value: undefined, names }), waitMs);
    if (!held) throw new SessionRefused('ot_busy', `an ECDSA run with parties ${peers.join(',')} of this key is still in progress`);
    return held.release;
  }

  /** Pairs held now (for tests and metrics). */
  get held(): number {
    return this.pairs.size;
  }
}
