// ECDSA presigning session (docs/protocols/pools.md): DKLs23 presigning (Protocol 3.6, steps 1-3) run
// ahead of any signing request, one run per entry id the coordinator names, for the key epoch, the
// signer set (the session's parties) and the derivation path of the parameters. Each node seals its
// presignatures in its pool (storage/presignature-store.ts) before it reports success.
//
// A presignature signs nothing, so no customer authorization is asked for; the node checks what a
// signing session would (the key and epoch held, every party the pinned committee member, the OT pairs
// held and usable), refuses when it keeps no pool (no rollback anchor) or would hold more entries for
// the key than its bound, and refuses entry ids it made or used before. Its presigning runs under the
// same OT pair locks and retirement guard as a signing session's, and like it on the node's protocol
// workers when it has them (long-run.ts), the guard on this thread.
import { bytesToHex } from '@noble/hashes/utils.js';
import { presignParams, presignResult } from '../../../core/session/session-contract.ts';
import { keyShareParam } from '../../protocols/keys/key-package.ts';
import { ecdsaPresignWith } from '../../protocols/ecdsa/presign.ts';
import { derive } from '../../protocols/derive/bip32.ts';
import type { Presignature } from '../../protocols/ecdsa/presignature.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { SessionRefused, type SessionContext } from '../session-host.ts';
import { readParams } from '../protocols/run-protocol.ts';
import { runLong } from './long-run.ts';
import { otGuarded, pairIdsOf } from '../protocols/ot-guarded.ts';
import { OtPairLocks } from '../ot-pair-locks.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { PresignatureBinding, PresignatureStore } from '../../storage/presignature-store.ts';
import type { PresignSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';
import { sessionDigest } from './session-digest.ts';
import { holdOtPairs, type HeldOtPairs } from './ecdsa-ot-pairs.ts';

/** What an entry made or used in this session is bound to: the epoch, the session's parties, the path and its key. */
export function presignatureBinding(stored: StoredShare, ctx: SessionContext, epoch: number, path: number[]): PresignatureBinding {
  const pkg = stored.key.pkg;
  let publicKey: string;
  try {
    publicKey = path.length ? derive(pkg.groupKey, pkg.chainCode, path).publicKey.toHex(true) : pkg.groupKey;
  } catch {
    throw new SessionRefused('bad_params', 'the derivation path cannot be derived from a shared key');
  }
  return { epoch, signers: ctx.parties.map((x) => x.index).sort((a, b) => a - b), path: [...path], publicKey };
}

interface PresignLocal extends HeldOtPairs {
  stored: StoredShare;
  pool: PresignatureStore;
  binding: PresignatureBinding;
}

export function presignEcdsaSession(deps: NodeProtocolDeps): SessionKind<PresignSessionParams, PresignLocal, void, Presignature[]> {
  const { vault } = deps;
  const otLocks = deps.otLocks ?? new OtPairLocks();
  const ecdsaPresign = ecdsaPresignWith(deps.primitives ?? nativePrimitives);
  return {
    authorization: { by: 'records', evidence: 'the committee pinned with the share of this key epoch, and a pool within its limits', adds: ['presig/{key}/'] },
    parse: (ctx) => readParams(presignParams, ctx.open.params),
    async preflight(ctx, p) {
      const pool = deps.presignatures;
      if (!pool) throw new SessionRefused('presignature_pool_unavailable', 'this node keeps no presignature store');
      const stored = await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
      if (ctx.parties.length < stored.key.pkg.threshold) throw new SessionRefused('bad_parties', `presignatures need at least ${stored.key.pkg.threshold} signers`);
      const binding = presignatureBinding(stored, ctx, p.epoch, p.path);
      // Refuses without an anchor, over the bound, or for an id made or used before.
      await pool.admit(p.keyId, p.epoch, p.entryIds);
      const held = await holdOtPairs(vault, otLocks, ctx, p.keyId);
      return { ...held, stored, pool, binding };
    },
    // Nothing a customer asked for: a presignature signs nothing until a signing session is authorized
    // on its own and takes it.
    async authorize() {},
    release: (local) => local.release(),
    run({ ctx, params: p, local: { stored, peers, ot, release } }, keep) {
      const me = ctx.myIndex;
      const signers = ctx.parties.map((x) => x.index);
      const key = keyShareParam(stored.key);
      const presign = runLong(deps, 'ecdsa-presign', ecdsaPresign, me, p.entryIds.map((_, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), signers, me, key, path: p.path, ot })), (ps: Presignature[]) => {
        release();
        return keep(presignResult.encode({ keyId: p.keyId, epoch: p.epoch, entryIds: p.entryIds }), ps);
      });
      const run = otGuarded(presign, { vault, keyId: p.keyId, me, peers, pairIds: pairIdsOf(ot, peers) });
      const guarded: PartyProtocol = { ...run, dispose: () => (run.dispose(), release()) };
      return guarded;
    },
    // Sealed and synced before the result leaves: a coordinator told of an entry can count on it.
    commit: ({ params: p, local: { pool, binding } }, presigs) => pool.put(p.keyId, binding, presigs.map((presignature, i) => ({ entryId: p.entryIds[i]!, presignature }))),
  };
}
