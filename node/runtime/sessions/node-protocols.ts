// Builds the protocol run for each session the coordinator opens: maps the session's protocol to its
// kind (one file per kind in this folder) and runs it through parse → preflight → authorize → run →
// commit (run-session.ts). Secrets are stored before a public result leaves.
import { Protocol } from '../../../proto/gen/mpc/v1/session_pb.ts';
import { SessionRefused, type ProtocolFactory, type SessionContext } from '../session-host.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { runSession } from './run-session.ts';
import { dkgSession } from './dkg.ts';
import { signSchnorrSessions } from './sign-schnorr.ts';
import { precommitFrostSession } from './precommit-frost.ts';
import { otSetupSession } from './ot-setup.ts';
import { signEcdsaSession } from './sign-ecdsa.ts';
import { presignEcdsaSession } from './presign-ecdsa.ts';
import { reshareSession } from './reshare.ts';
import { epochSession } from './epoch.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { OtPairLocks } from '../ot-pair-locks.ts';

export type { NodeProtocolDeps } from './session-deps.ts';

export function nodeProtocols(given: NodeProtocolDeps): ProtocolFactory {
  // The protocols run on the node's OpenSSL; they return the same bytes as on the noble reference.
  // One set of OT pair locks for every kind that presigns (signing and the presignature pool).
  const deps: NodeProtocolDeps = { ...given, primitives: given.primitives ?? nativePrimitives, otLocks: given.otLocks ?? new OtPairLocks() };
  const kinds = new Map<Protocol, (ctx: SessionContext) => Promise<PartyProtocol>>();
  const add = <P, L, G, O>(protocol: Protocol, kind: Parameters<typeof runSession<P, L, G, O>>[0]) => kinds.set(protocol, (ctx) => runSession(kind, ctx));
  add(Protocol.DKG, dkgSession(deps));
  // Two rounds, or one with precommitted nonces when the parameters name them.
  kinds.set(Protocol.SIGN_SCHNORR, signSchnorrSessions(deps));
  add(Protocol.OT_SETUP, otSetupSession(deps));
  add(Protocol.SIGN_ECDSA, signEcdsaSession(deps));
  add(Protocol.PRESIGN_ECDSA, presignEcdsaSession(deps));
  add(Protocol.PRECOMMIT_FROST, precommitFrostSession(deps));
  add(Protocol.RESHARE, reshareSession(deps));
  add(Protocol.COMMIT_EPOCH, epochSession(deps, 'commit'));
  add(Protocol.ABANDON_EPOCH, epochSession(deps, 'abandon'));

  return async (ctx): Promise<PartyProtocol> => {
    const run = kinds.get(ctx.open.protocol);
    if (!run) throw new SessionRefused('unsupported_protocol', `protocol ${ctx.open.protocol} is not supported by this node`);
    return run(ctx);
  };
}
