// The committee pinned with each vault share (node ids and identity keys by index), so a coordinator
// cannot swap other nodes into a later session of the vault.
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Party } from '../../../proto/gen/mpc/v1/session_pb.ts';
import { SessionRefused, type SessionContext } from '../session-host.ts';
import type { PinnedMember } from '../../storage/vault-shares.ts';

/** The session parties that get an index under `indexOf`, as the committee to pin, by index. */
export const pinCommittee = (parties: Party[], indexOf: (p: Party) => number | undefined): PinnedMember[] =>
  parties
    .filter((p) => indexOf(p) !== undefined)
    .map((p) => ({ index: indexOf(p)!, nodeId: p.nodeId, signingKey: bytesToHex(p.signingKey), encryptionKey: bytesToHex(p.encryptionKey) }))
    .sort((a, b) => a.index - b.index);

/** Every session party must be the pinned committee member with the same index and keys. */
export function checkAgainstCommittee(ctx: SessionContext, committee: PinnedMember[], indexOf: (p: Party) => number | undefined): void {
  for (const p of ctx.parties) {
    const idx = indexOf(p);
    if (idx === undefined) continue;
    const m = committee.find((c) => c.index === idx);
    if (!m || m.nodeId !== p.nodeId || m.signingKey !== bytesToHex(p.signingKey) || m.encryptionKey !== bytesToHex(p.encryptionKey)) {
      throw new SessionRefused('committee_mismatch', `party ${p.nodeId} is not committee member ${idx} of this key`);
    }
  }
}
