// ECDSA OT setup session (docs/protocols/ecdsa.md): pairwise base OTs and zero-sharing seeds among two or
// more members of a vault epoch's pinned committee, merged into the setup stored sealed with that epoch
// (only the pairs of this run change).
import { bytesToHex } from '@noble/hashes/utils.js';
import { otParams, otResult } from '../../../core/session/session-contract.ts';
import { ecdsaOtSetupWith, type EcdsaOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { SessionRefused } from '../session-host.ts';
import { readParams } from '../protocols/run-protocol.ts';
import { runLong } from './long-run.ts';
import type { EpochSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';

export function otSetupSession(deps: NodeProtocolDeps): SessionKind<EpochSessionParams, void, void, EcdsaOtSetup> {
  const { vault } = deps;
  const ecdsaOtSetup = ecdsaOtSetupWith(deps.primitives ?? nativePrimitives);
  return {
    authorization: { by: 'records', evidence: 'the committee pinned with the share of this key epoch: every party (two or more) is that member; only pairs among them change', adds: ['key/{key}/current/ot', 'key/{key}/current/ot-retired'] },
    parse: (ctx) => readParams(otParams, ctx.open.params),
    async preflight(ctx, p) {
      // Every party is checked against the pinned committee: a run adds material among members only.
      await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
      if (ctx.parties.length < 2) throw new SessionRefused('bad_parties', 'an OT setup needs at least two committee members');
    },
    // Nothing a customer asked for: material among the vault's pinned committee, which signs nothing
    // until a signing session is authorized on its own.
    async authorize() {},
    run({ ctx, params: p }, keep) {
      const me = ctx.myIndex;
      const params = { sessionId: bytesToHex(ctx.open.sessionId), keyId: p.keyId, epoch: p.epoch, parties: ctx.parties.map((x) => x.index), me };
      return runLong(deps, 'ecdsa-ot-setup', ecdsaOtSetup, me, [params], ([setup]: EcdsaOtSetup[]) => keep(otResult.encode({ keyId: p.keyId, epoch: p.epoch }), setup!));
    },
    commit: async ({ params: p }, setup) => {
      await vault.putOt(p.keyId, setup);
    },
  };
}
