// The newest service-node roster this node accepted (docs/trust.md "Committees"). A roster carried
// with a DKG or reshare is verified under the node's operator keys and refused when it is older than
// the newest one accepted before, so whoever relays sessions cannot bring back a node the operator
// removed. The newest version and its hash are kept in one sealed record, so its AEAD also guards it
// against a disk rolled back or edited.
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import type { SealedStore } from '../../storage/sealed-store.ts';
import { SessionRefused } from '../session-host.ts';
import { RosterError, rosterHash, verifyRoster, type SignedRoster } from '../../../core/trust/roster.ts';

const RECORD = 'roster/newest';
const MAX_ROSTER = 64 * 1024;

interface NewestRoster {
  v: 1;
  version: number;
  hash: string;
}

export class RosterRegistry {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: SealedStore, private readonly operatorKeys: readonly string[]) {}

  /** The newest roster version accepted here, or undefined before the first. */
  async newest(): Promise<{ version: number; hash: string } | undefined> {
    const raw = await this.store.getSecret(RECORD);
    if (!raw) return undefined;
    const r = decodeBlob<NewestRoster>('newest-roster', raw);
    return { version: r.version, hash: r.hash };
  }

  /**
   * Verifies a carried roster (its signed bytes) and records it as the newest when it is newer. Refuses with
   * bad_roster (absent, malformed, not signed by an operator key of this node), stale_roster (older than
   * the newest accepted) or, for the same version with other contents, bad_roster.
   */
  accept(bytes: Uint8Array | undefined): Promise<SignedRoster> {
    const run = async () => {
      if (!(bytes instanceof Uint8Array) || bytes.length === 0) throw new SessionRefused('bad_roster', 'the session carries no service-node roster');
      if (bytes.length > MAX_ROSTER) throw new SessionRefused('bad_roster', 'the roster is at most 64 KiB');
      let roster: SignedRoster;
      try {
        roster = verifyRoster(bytes, this.operatorKeys);
      } catch (err) {
        if (err instanceof RosterError) throw new SessionRefused('bad_roster', err.message);
        throw err;
      }
      const hash = rosterHash(bytes);
      const newest = await this.newest();
      if (newest && roster.version < newest.version) {
        throw new SessionRefused('stale_roster', `roster version ${roster.version} is older than version ${newest.version} accepted before`);
      }
      if (newest && roster.version === newest.version && newest.hash !== hash) {
        throw new SessionRefused('bad_roster', `another roster was accepted as version ${roster.version}`);
      }
      if (!newest || roster.version > newest.version) {
        await this.store.putSecret(RECORD, encodeBlob('newest-roster', { v: 1, version: roster.version, hash } satisfies NewestRoster));
      }
      return roster;
    };
    // One at a time, so two sessions cannot both pass the check against the same stored version.
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }
}
