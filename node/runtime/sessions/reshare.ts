// Reshare session (node/protocols/reshare/, docs/sessions.md "Reshare, two phases"): the current
// committee deals the vault to a new one; each receiver stores its new share as the pending epoch.
import { bytesToHex } from '@noble/hashes/utils.js';
import { reshareParams, reshareResult } from '../../../core/session/session-contract.ts';
import { reshare, type ReshareResult } from '../../protocols/reshare/reshare.ts';
import { keyShareParam, type KeyShare } from '../../protocols/keys/key-package.ts';
import type { SecretBytes } from '../../../core/codec/secret.ts';
import { SessionRefused } from '../session-host.ts';
import { TIER_NAMES, type TierName } from '../../../core/tiers.ts';
import { authorizeReshareRequest, type ReshareGrant } from '../authorization/reshare-request.ts';
import { checkCommittee } from '../authorization/committee-check.ts';
import type { CommitteeBinding } from '../authorization/trust-state.ts';
import { readParams, runProtocol } from '../protocols/run-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { ReshareMember } from '../../../core/session/reshare-member.ts';
import type { ReshareSessionParams } from '../../../core/session/session-params.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { epochReceiptStatement } from '../../../core/session/epoch-receipt.ts';
import type { Party } from '../../../proto/gen/mpc/v1/session_pb.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { acceptRoster } from './accept-roster.ts';
import { checkAgainstCommittee, pinCommittee } from './committee-pinning.ts';

/** What preflight read: this node's share of the old epoch (if it deals) and what a receiver carries. */
export interface ReshareLocal {
  tier: TierName;
  held: StoredShare | undefined;
  receivers: Party[];
  carried: Pick<StoredShare, 'tier' | 'endUser'>;
  oldShare: { id: number; share: SecretBytes } | undefined;
  byParty: Map<number, ReshareMember>;
}

/**
 * A refresh (the same members, the same tier) runs on the node's own records. Anything else that moves
 * a vault to or from `hosted`, or changes the committee of a vault with a customer node, needs the
 * customer's signed request, made at this epoch and naming the target tier and committee
 * (docs/sessions.md "What authorizes each session"). A member that holds no share of the key cannot see
 * the old tier: it asks for a request whenever the new tier is not `hosted` (a customer's vault it
 * joins); the old members' own check stands for the rest.
 */
function requireCustomerRequest(held: StoredShare | undefined, tier: TierName, receivers: Party[], binding: ReshareGrant, fromEpoch: number): void {
  const oldTier = held ? ((held.tier ?? 'hosted') as TierName) : undefined;
  const sameMembers = held !== undefined && receivers.length === held.committee.length
    && receivers.every((r) => held.committee.some((m) => m.nodeId === r.nodeId && m.signingKey === bytesToHex(r.signingKey) && m.encryptionKey === bytesToHex(r.encryptionKey)));
  const needed = oldTier === undefined ? tier !== 'hosted' : oldTier !== tier || (oldTier !== 'hosted' && !sameMembers);
  if (!needed) return;
  const why = oldTier === undefined || oldTier === tier ? `a change of the committee of a ${tier} vault` : `a move from ${oldTier} to ${tier}`;
  if (!binding.requested) throw new SessionRefused('reshare_request_required', `${why} needs the customer's signed reshare request`);
  if (binding.rotation !== fromEpoch) throw new SessionRefused('reshare_request_required', `${why} needs a request made at the vault's rotation ${fromEpoch}`);
  if ((binding.targetTier ?? oldTier) !== tier) throw new SessionRefused('reshare_request_required', `${why} needs a request naming target tier ${tier}`);
  if (!binding.committee) throw new SessionRefused('reshare_request_required', `${why} needs a request naming the new committee`);
}

export function reshareSession(deps: NodeProtocolDeps): SessionKind<ReshareSessionParams, ReshareLocal, CommitteeBinding, { pkg: KeyPackage; key?: KeyShare }> {
  const { vault } = deps;
  return {
    authorization: {
      by: 'records',
      evidence: "a refresh among the committee pinned with the share, in its tier; another committee or tier needs the owner's signed reshare request",
      adds: ['key/{key}/pending/', 'key/{key}/dealt'],
    },
    parse: (ctx) => readParams(reshareParams, ctx.open.params),
    async preflight(ctx, p) {
      const me = ctx.myIndex;
      const mine = p.members.find((m) => m.party === me);
      if (!mine) throw new SessionRefused('not_a_party', 'this node is not a reshare member');
      // A member that held the key keeps its end-user binding while the key stays hosted; end-user
      // tokens gate the hosted tier only, so a move to another tier drops it (docs/trust.md).
      const held = await vault.current(p.keyId);
      const tier = typeof p.tier === 'string' ? p.tier : held?.tier;
      if (!TIER_NAMES.includes(tier as TierName)) throw new SessionRefused('bad_params', 'the reshare names no valid tier');
      const receivers = ctx.parties.filter((x) => p.members.some((m) => m.party === x.index && m.newId !== undefined));
      const carried: Pick<StoredShare, 'tier' | 'endUser'> = {
        ...(tier ? { tier } : {}),
        ...(held?.endUser && (tier === undefined || tier === 'hosted') ? { endUser: held.endUser } : {}),
      };
      const byParty = new Map(p.members.map((m) => [m.party, m]));
      let oldShare: { id: number; share: SecretBytes } | undefined;
      if (mine.oldId !== undefined) {
        if (!held) throw new SessionRefused('unknown_key', `no share of ${p.keyId} here`);
        if (JSON.stringify(held.key.pkg) !== JSON.stringify(p.oldPkg)) throw new SessionRefused('package_mismatch', 'the old package differs from the one stored here');
        if (held.key.share.id !== mine.oldId) throw new SessionRefused('bad_params', 'wrong old id for this node');
        checkAgainstCommittee(ctx, held.committee, (x) => byParty.get(x.index)?.oldId);
        const { id, share } = keyShareParam(held.key);
        oldShare = { id, share };
      }
      return { tier: tier as TierName, held, receivers, carried, oldShare, byParty };
    },
    // The new committee passes the same checks as a DKG's; a customer member is a node the owner
    // enrolled (the one its signed reshare request names, when it names one).
    async authorize({ params: p, local: { tier, receivers, held } }) {
      const binding = await authorizeReshareRequest(deps.trust, { owner: p.owner, keyId: p.keyId, tier, fromEpoch: p.oldPkg.epoch, trustLog: p.trustLog, reshareRequest: p.reshareRequest });
      requireCustomerRequest(held, tier, receivers, binding, p.oldPkg.epoch);
      checkCommittee({
        tier, threshold: p.newThreshold, members: receivers, roster: await acceptRoster(deps, p.roster), org: await deps.trust.state(p.owner),
        customerNode: binding.customerNode, shown: binding.committee,
      });
      return binding;
    },
    run({ ctx, params: p, local: { oldShare } }, keep) {
      const me = ctx.myIndex;
      const params = { sessionId: bytesToHex(ctx.open.sessionId), members: p.members, me, oldPkg: p.oldPkg, newThreshold: p.newThreshold, newEpoch: p.newEpoch, ...(oldShare ? { oldShare } : {}) };
      return runProtocol(reshare, me, [params], ([r]: ReshareResult[]) => {
        if (r!.kind !== 'receiver') return keep(reshareResult.encode({ pkg: r!.pkg }), { pkg: r!.pkg });
        // The receipt leaves with the result, so only after commit stored the pending share (the session
        // host awaits commit first): it says this node holds the new epoch.
        const receipt = deps.identity?.sign(epochReceiptStatement(r!.key.pkg));
        return keep(reshareResult.encode({ pkg: r!.key.pkg, ...(receipt ? { receipt } : {}) }), { pkg: r!.key.pkg, key: r!.key });
      });
    },
    // A receiver stores its new share as pending; a dealer that does not receive records what it dealt
    // (the new package and committee), to check the new committee's receipts at the commit.
    commit: ({ ctx, params: p, local: { carried, byParty, oldShare } }, { pkg, key }) => {
      const committee = pinCommittee(ctx.parties, (x) => byParty.get(x.index)?.newId);
      if (key) return vault.putPending(p.keyId, { key, owner: p.owner, ...carried, committee });
      return oldShare ? vault.recordDealt(p.keyId, { pkg, committee }) : Promise.resolve();
    },
  };
}
