// Threshold ECDSA signing session (DKLs23 over node/protocols/ecdsa/). Two ways to one online round:
// - full: the presignature phase, then the online phase, in one session. The OT pairs it uses are held
//   by this node for the whole presigning run, re-checked before anything derived from them leaves, and
//   retired after an abort (ot-pair-locks.ts, ../protocols/ot-guarded.ts). Presigning runs on the node's
//   protocol workers when it has them (long-run.ts); the guard wraps it on this thread either way, so
//   its checks stand between the worker's messages and the wire. The online round runs here;
// - pooled: the parameters name one presignature entry per digest (docs/protocols/pools.md). Preflight
//   checks every entry is held here, unused, unexpired and bound to this key epoch, signer set and path;
//   `authorize` runs the customer's checks exactly as for the full protocol, then takes the entries
//   (deleted and marked used on disk); only then does the online round start.
// Both end in the same re-randomized online phase (online.ts).
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { signParams, signResult } from '../../../core/session/session-contract.ts';
import { keyShareParam } from '../../protocols/keys/key-package.ts';
import type { EcdsaOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import { ecdsaPresignWith } from '../../protocols/ecdsa/presign.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { ecdsaOnlineWith, type EcdsaSignature } from '../../protocols/ecdsa/online.ts';
import type { Presignature } from '../../protocols/ecdsa/presignature.ts';
import { SessionRefused } from '../session-host.ts';
import type { SignGrant } from '../authorization/sign-authorizer.ts';
import { inSequence, readParams, runProtocol, type Finish } from '../protocols/run-protocol.ts';
import { runLong } from './long-run.ts';
import { otGuarded, pairIdsOf } from '../protocols/ot-guarded.ts';
import { OtPairLocks } from '../ot-pair-locks.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { PresignatureBinding, PresignatureStore } from '../../storage/presignature-store.ts';
import type { SignSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';
import { sessionDigest } from './session-digest.ts';
import { authorizeSigning, SIGNING_AUTHORIZATION } from './sign-authorization.ts';
import { holdOtPairs } from './ecdsa-ot-pairs.ts';
import { presignatureBinding } from './presign-ecdsa.ts';

/** What preflight holds for the run: the share and, for the full protocol, the OT pairs and their material. */
export interface EcdsaLocal {
  stored: StoredShare;
  peers: number[];
  ot?: EcdsaOtSetup;
  release: () => void;
  /** A pooled signing: the entries named, what they must be bound to, and, once authorized, the taken presignatures. */
  pooled?: { pool: PresignatureStore; entryIds: string[]; binding: PresignatureBinding; taken?: Presignature[] };
}

export function signEcdsaSession(deps: NodeProtocolDeps): SessionKind<SignSessionParams, EcdsaLocal, SignGrant, never> {
  const { vault } = deps;
  const otLocks = deps.otLocks ?? new OtPairLocks();
  const ecdsaPresign = ecdsaPresignWith(deps.primitives ?? nativePrimitives);
  const ecdsaOnline = ecdsaOnlineWith(deps.primitives ?? nativePrimitives);
  return {
    authorization: SIGNING_AUTHORIZATION,
    parse: (ctx) => readParams(signParams, ctx.open.params),
    async preflight(ctx, p) {
      const stored = await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
      if (p.scheme !== 'ecdsa') throw new SessionRefused('wrong_scheme', 'ECDSA sessions sign ecdsa');
      const peers = ctx.parties.map((x) => x.index).filter((i) => i !== ctx.myIndex);
      if (p.presignatures) {
        const pool = deps.presignatures;
        if (!pool) throw new SessionRefused('presignature_pool_unavailable', 'this node keeps no presignature store');
        const binding = presignatureBinding(stored, ctx, p.epoch, p.path);
        // Nothing is taken before the customer's authorization: this only refuses early.
        await pool.check(p.keyId, p.presignatures, binding);
        return { stored, peers, release: () => undefined, pooled: { pool, entryIds: p.presignatures, binding } };
      }
      const held = await holdOtPairs(vault, otLocks, ctx, p.keyId);
      return { stored, ...held };
    },
    // The ledger and session claims are on disk before the first presigning message leaves; a pooled
    // signing's entries are deleted and marked used in the same synced write, before the online round starts.
    async authorize({ ctx, params, local }) {
      const pooled = local.pooled;
      const { grant, taken } = await authorizeSigning(deps, ctx, params, local.stored, pooled && (() => pooled.pool.reserve(params.keyId, pooled.entryIds, pooled.binding)));
      if (pooled) pooled.taken = taken;
      return grant;
    },
    release: (local) => local.release(),
    run({ ctx, params: p, local: { stored, peers, ot, release, pooled } }) {
      const me = ctx.myIndex;
      const signers = ctx.parties.map((x) => x.index);
      const online = (presigs: Presignature[]) =>
        runProtocol(ecdsaOnline, me, presigs.map((presignature, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), presignature, digest: bytesToHex(p.digests[i]!) })), (sigs: EcdsaSignature[]): Finish => ({
          result: signResult.encode({ signatures: sigs.map((s) => hexToBytes(s.compact)), recoveryIds: sigs.map((s) => s.recovery), publicKey: hexToBytes(sigs[0]!.publicKey) }),
        }));
      if (pooled) {
        if (!pooled.taken || pooled.taken.length !== p.digests.length) throw new Error('a pooled signing ran before its entries were taken');
        return online(pooled.taken);
      }
      if (!ot) throw new Error('a full ECDSA signing ran without its OT material');
      let presigs: Presignature[] = [];
      const key = keyShareParam(stored.key);
      const presign = runLong(deps, 'ecdsa-presign', ecdsaPresign, me, p.digests.map((_, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), signers, me, key, path: p.path, ot })), (ps: Presignature[]) => {
        presigs = ps;
        // The OT material is done with once the presignatures exist: the pairs serve the next run.
        release();
        return { result: new Uint8Array() };
      });
      const run = otGuarded(presign, { vault, keyId: p.keyId, me, peers, pairIds: pairIdsOf(ot, peers) });
      const guarded: PartyProtocol = { ...run, dispose: () => (run.dispose(), release()) };
      return inSequence(guarded, () => online(presigs));
    },
  };
}
