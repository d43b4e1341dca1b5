// The vault share a session of an existing vault runs with: the epoch it names, its parties the
// committee pinned with the share.
import { SessionRefused, type SessionContext } from '../session-host.ts';
import type { StoredShare, VaultShareStore } from '../../storage/vault-shares.ts';
import { checkAgainstCommittee } from './committee-pinning.ts';

/** The share of `keyId` at `epoch`, with every session party checked against its pinned committee. */
export async function keyAtEpoch(vault: VaultShareStore, ctx: SessionContext, keyId: string, epoch: number): Promise<StoredShare> {
  const stored = await vault.current(keyId);
  // A pending epoch is promoted only by a commit carrying the new committee's receipts (epoch.ts), never
  // because a session names it: the coordinator sends that commit again when a node reports this.
  if ((!stored || stored.key.pkg.epoch < epoch) && (await vault.pending(keyId))?.key.pkg.epoch === epoch) {
    throw new SessionRefused('epoch_not_committed', `epoch ${epoch} of ${keyId} is pending here: its commit, with the new committee's receipts, has not reached this node`);
  }
  if (!stored) throw new SessionRefused('unknown_key', `no share of ${keyId} here`);
  if (stored.key.pkg.epoch !== epoch) throw new SessionRefused('epoch_mismatch', `this node holds epoch ${stored.key.pkg.epoch}, not ${epoch}`);
  checkAgainstCommittee(ctx, stored.committee, (x) => x.index);
  return stored;
}
