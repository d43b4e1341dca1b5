// POST /member-auth/proof/challenges (platform-api.md "Confidential exchange rules" 1 and 8): a one-time
// nonce, 256 random bits, bound to the tenant, workspace and application of the caller, that the BFF
// puts in its OpenID authentication request, so the ID token that comes back carries it and can be
// accepted for this application once. Only its SHA-256 is stored. A challenge, used or not, is kept
// until its replay window ends, so a late replay is told "already used" or "expired" precisely; the
// sweep retires challenges, accepted proofs and exchange records only after that.
import type { RecordRepository, Op } from '../store/record-repository.ts';
import type { CollectionName } from '../store/collection.ts';
import type { ApplicationRecord } from './member-auth-records.ts';
import { LIFETIMES, SESSION_COLLECTIONS as S, newSecret, retireIndex, sha256hex, type ChallengeRecord } from './member-session-records.ts';

export interface IssuedChallenge { nonce: string; expires_at: string; application_id: string }

/** How many retired records one sweep removes at most, per collection (it runs beside each new challenge). */
export const SWEEP_BATCH = 50;

export class ProofChallenges {
  constructor(private readonly store: RecordRepository, private readonly clock: () => number) {}

  async issue(app: ApplicationRecord): Promise<IssuedChallenge> {
    const now = this.clock();
    const nonce = newSecret('');
    const expires = now + LIFETIMES.challenge * 1000;
    const retire = new Date(expires + LIFETIMES.replayWindow * 1000).toISOString();
    const r: ChallengeRecord = {
      v: 1, nonce_sha256: sha256hex(nonce), tenant: app.tenant, workspace: app.workspace, application: app.id,
      created_at: new Date(now).toISOString(), expires_at: new Date(expires).toISOString(), consumed_at: null, retire_after: retire,
    };
    // 256 random bits do not collide; insertIfAbsent makes that an invariant rather than a hope.
    if (!(await S.challenges.in(this.store).insertIfAbsent(r.nonce_sha256, r, retireIndex(retire)))) return this.issue(app);
    await this.sweep();
    return { nonce, expires_at: r.expires_at, application_id: app.id };
  }

  /**
   * Removes challenges, accepted proofs and exchange records whose replay or recovery window has ended
   * (rule 8: never earlier). Each is indexed by its retire_after, so this reads only what is due.
   */
  async sweep(limit = SWEEP_BATCH): Promise<number> {
    const now = new Date(this.clock()).toISOString();
    let removed = 0;
    const retiring: CollectionName<{ retire_after: string; id?: string; nonce_sha256?: string }>[] = [S.challenges, S.acceptedProofs, S.exchanges];
    for (const collection of retiring) {
      const due = (await collection.in(this.store).byIndex('', limit)).filter((r) => r.retire_after < now);
      if (due.length === 0) continue;
      const ops: Op[] = due.map((r) => collection.delOp((r.id ?? r.nonce_sha256)!, retireIndex(r.retire_after)));
      await this.store.batch(ops);
      removed += ops.length;
    }
    return removed;
  }
}
