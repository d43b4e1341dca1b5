// The authorize step of both signing kinds: the customer's intent (sign-authorizer.ts), then the intent
// ledger's claim and the session id's claim, both on disk before anything made with the nonces leaves.
import { bytesToHex } from '@noble/hashes/utils.js';
import { SessionRefused, type SessionContext } from '../session-host.ts';
import { enrolledNode } from '../authorization/trust-state.ts';
import type { SignGrant } from '../authorization/sign-authorizer.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { SignSessionParams } from '../../../core/session/session-params.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import type { ReservedTake } from '../../storage/single-use-pool.ts';
import type { Authorization } from './session-kind.ts';

/** Both signing kinds act on the customer's signed intent, and nothing else. */
export const SIGNING_AUTHORIZATION: Authorization = {
  by: 'customer',
  evidence: "the owner's signed intent under an active key of its trust log, the digests recomputed from it and the template, a hosted key's end-user token",
};

/**
 * Authorizes a signing and claims it on disk. `take` (a pooled signing) reserves the entries the
 * session names once the customer's checks passed; their write goes into the claims' synced batch, and
 * their values come back with the grant only after that batch landed. A refusal writes nothing and
 * releases them.
 */
export async function authorizeSigning<V = never>(
  deps: NodeProtocolDeps, ctx: SessionContext, p: SignSessionParams, stored: StoredShare, take?: () => Promise<ReservedTake<V>>,
): Promise<{ grant: SignGrant; taken?: V[] }> {
  const grant = await deps.authorizer.authorize({ ...p, owner: stored.owner, groupKey: stored.key.pkg.groupKey, chainCode: stored.key.pkg.chainCode, endUser: stored.endUser });
  // A customer node whose enrolment the owner revoked (the log above applied) signs nothing more: a
  // stolen self node cannot sign with the service nodes. Its shares can still be dealt away by a reshare.
  const org = await deps.trust.state(stored.owner);
  for (const party of ctx.parties) {
    if (enrolledNode(org, party.nodeId)?.revoked) throw new SessionRefused('node_revoked', `party ${party.nodeId}: ${stored.owner} revoked this node's enrolment`);
  }
  // Both on disk, in one synced write, before any signature share or presigning message of this intent
  // leaves: the intent's record, and the session id's claim (its nonces are single-use from here on,
  // across restarts). A session id used before is refused first; a refused intent writes neither.
  const sessionClaim = await deps.vault.reserveSession(bytesToHex(ctx.open.sessionId));
  const held = take ? await take() : undefined;
  try {
    await deps.ledger.claim(grant, [...sessionClaim, ...(held?.ops ?? [])]);
  } catch (err) {
    held?.release();
    throw err;
  }
  return held ? { grant, taken: await held.finish() } : { grant };
}
