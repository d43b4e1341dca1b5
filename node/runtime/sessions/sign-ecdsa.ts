// Threshold ECDSA signing session (DKLs23 over node/protocols/ecdsa/): the presignature phase, then
// the online phase, in one session. The OT pairs it uses are held by this node for the whole
// presigning run, re-checked before anything derived from them leaves, and retired after an abort
// (ot-pair-locks.ts, ../protocols/ot-guarded.ts).
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { signParams, signResult } from '../../../core/session/session-contract.ts';
import { keyShareParam } from '../../protocols/keys/key-package.ts';
import type { EcdsaOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import { ecdsaPresignWith } from '../../protocols/ecdsa/presign.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { ecdsaOnline, type EcdsaSignature } from '../../protocols/ecdsa/online.ts';
import type { Presignature } from '../../protocols/ecdsa/presignature.ts';
import { SessionRefused } from '../session-host.ts';
import type { SignGrant } from '../authorization/sign-authorizer.ts';
import { inSequence, readParams, runProtocol } from '../protocols/run-protocol.ts';
import { otGuarded } from '../protocols/ot-guarded.ts';
import { OtPairLocks } from '../ot-pair-locks.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { SignSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';
import { sessionDigest } from './session-digest.ts';
import { authorizeSigning } from './sign-authorization.ts';

/** How long an ECDSA session waits for a run over the same OT pair to end before refusing. */
const OT_PAIR_WAIT_MS = 3_000;

/** What preflight holds for the run: the share, the OT pairs with every peer and their material. */
export interface EcdsaLocal {
  stored: StoredShare;
  peers: number[];
  ot: EcdsaOtSetup;
  release: () => void;
}

export function signEcdsaSession(deps: NodeProtocolDeps): SessionKind<SignSessionParams, EcdsaLocal, SignGrant, never> {
  const { vault } = deps;
  const otLocks = deps.otLocks ?? new OtPairLocks();
  const ecdsaPresign = ecdsaPresignWith(deps.primitives ?? nativePrimitives);
  return {
    parse: (ctx) => readParams(signParams, ctx.open.params),
    async preflight(ctx, p) {
      const stored = await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
      if (p.scheme !== 'ecdsa') throw new SessionRefused('wrong_scheme', 'ECDSA sessions sign ecdsa');
      // One run per OT pair at a time on this node; the material is read after the pairs are held,
      // so every retirement that landed before is seen.
      const peers = ctx.parties.map((x) => x.index).filter((i) => i !== ctx.myIndex);
      const release = await otLocks.acquire(p.keyId, peers, OT_PAIR_WAIT_MS);
      try {
        const ot = await vault.ot(p.keyId);
        if (!ot) throw new SessionRefused('no_ot_setup', 'no OT setup for this key epoch yet');
        const retired = peers.filter((i) => ot.retired.includes(i));
        if (retired.length) throw new SessionRefused('ot_retired', `OT material with parties ${retired.join(',')} was retired after an abort; a new setup is needed`);
        return { stored, peers, ot, release };
      } catch (err) {
        release();
        throw err;
      }
    },
    // The ledger and session claims are on disk before the first presigning message leaves.
    authorize: ({ ctx, params, local }) => authorizeSigning(deps, ctx, params, local.stored),
    release: (local) => local.release(),
    run({ ctx, params: p, local: { stored, peers, ot, release } }) {
      const me = ctx.myIndex;
      const signers = ctx.parties.map((x) => x.index);
      let presigs: Presignature[] = [];
      const key = keyShareParam(stored.key);
      const presign = runProtocol(ecdsaPresign, me, p.digests.map((_, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), signers, me, key, path: p.path, ot })), (ps) => {
        presigs = ps;
        // The OT material is done with once the presignatures exist: the pairs serve the next run.
        release();
        return { result: new Uint8Array() };
      });
      const run = otGuarded(presign, { vault, keyId: p.keyId, setupId: ot.setupId, me, peers });
      const guarded: PartyProtocol = { ...run, dispose: () => (run.dispose(), release()) };
      return inSequence(guarded, () =>
        runProtocol(ecdsaOnline, me, presigs.map((presignature, i) => ({ presignature, digest: bytesToHex(p.digests[i]!) })), (sigs: EcdsaSignature[]) => ({
          result: signResult.encode({ signatures: sigs.map((s) => hexToBytes(s.compact)), recoveryIds: sigs.map((s) => s.recovery), publicKey: hexToBytes(sigs[0]!.publicKey) }),
        })),
      );
    },
  };
}
