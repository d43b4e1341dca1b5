// DKG session (node/protocols/dkg/): a new vault's share, generated only for a creation request the
// owner signed, by a committee this node verifies itself (docs/trust.md "Committees").
import { bytesToHex } from '@noble/hashes/utils.js';
import { dkgParams, dkgResult } from '../../../core/session/session-contract.ts';
import { dkg } from '../../protocols/dkg/dkg.ts';
import type { KeyShare } from '../../protocols/keys/key-package.ts';
import { SessionRefused } from '../session-host.ts';
import { authorizeKeyCreation, type KeyCreationGrant } from '../authorization/key-creation.ts';
import { checkCommittee } from '../authorization/committee-check.ts';
import { readParams } from '../protocols/run-protocol.ts';
import { runLong } from './long-run.ts';
import type { DkgSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { acceptRoster } from './accept-roster.ts';
import { pinCommittee } from './committee-pinning.ts';

export function dkgSession(deps: NodeProtocolDeps): SessionKind<DkgSessionParams, void, KeyCreationGrant, KeyShare> {
  const { vault } = deps;
  return {
    authorization: { by: 'customer', evidence: "the owner's signed creation request (POST /v1/vaults) for this tier and committee, under a key of its trust log" },
    parse: (ctx) => readParams(dkgParams, ctx.open.params),
    async preflight(_ctx, p) {
      if (await vault.current(p.keyId)) throw new SessionRefused('key_exists', `key ${p.keyId} already exists on this node`);
    },
    // The committee check needs what the signed creation request shows (tier, customer node, members),
    // so it runs once that request verified.
    async authorize({ ctx, params: p }) {
      const grant = await authorizeKeyCreation(deps.trust, p);
      // Every member is one this node verifies itself, in the tier's shape (docs/trust.md "Committees").
      checkCommittee({
        tier: grant.tier, threshold: p.threshold, members: ctx.parties, roster: await acceptRoster(deps, p.roster), org: await deps.trust.state(p.owner),
        customerNode: grant.customerNode, shown: grant.committee,
      });
      const used = grant.creationHash ? await vault.creationBinding(grant.creationHash) : undefined;
      if (used !== undefined && used !== p.keyId) throw new SessionRefused('bad_creation_request', 'this creation request already created another key');
      return grant;
    },
    run({ ctx, params: p }, keep) {
      const me = ctx.myIndex;
      const params = { sessionId: bytesToHex(ctx.open.sessionId), keyId: p.keyId, epoch: p.epoch, threshold: p.threshold, parties: ctx.parties.map((x) => x.index), me };
      return runLong(deps, 'dkg', dkg, me, [params], ([k]: KeyShare[]) => keep(dkgResult.encode({ pkg: k!.pkg }), k!));
    },
    commit({ ctx, params: p, grant }, key) {
      const meta = { owner: p.owner, tier: grant.tier, ...(grant.endUser ? { endUser: grant.endUser } : {}) };
      return vault.putNew(p.keyId, { key, ...meta, committee: pinCommittee(ctx.parties, (x) => x.index) }, grant.creationHash);
    },
  };
}
