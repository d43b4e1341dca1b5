// Builds the protocol run for each session the coordinator opens: maps the session's protocol to its
// kind (one file per kind in this folder) and runs it through parse → preflight → authorize → run →
// commit (run-session.ts). Secrets are stored before a public result leaves.
import { Protocol } from '../../../proto/gen/mpc/v1/session_pb.ts';
import { SessionRefused, type ProtocolFactory, type SessionContext } from '../session-host.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import type { Authorization, SessionKind } from './session-kind.ts';
import { runSession } from './run-session.ts';
import { dkgSession } from './dkg.ts';
import { signSchnorrSessions } from './sign-schnorr.ts';
import { precommitFrostSession } from './precommit-frost.ts';
import { otSetupSession } from './ot-setup.ts';
import { signEcdsaSession } from './sign-ecdsa.ts';
import { presignEcdsaSession } from './presign-ecdsa.ts';
import { reshareSession } from './reshare.ts';
import { epochSession } from './epoch.ts';
import { exportShareSession } from './export-share.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { OtPairLocks } from '../ot-pair-locks.ts';

export type { NodeProtocolDeps } from './session-deps.ts';

/** The session kinds a node runs for one protocol, and the runner that picks among them. */
export interface RegisteredSessions {
  protocol: Protocol;
  /** What authorizes each kind (session-kind.ts `Authorization`); SIGN_SCHNORR has two kinds. */
  kinds: readonly { readonly authorization: Authorization }[];
  run: (ctx: SessionContext) => Promise<PartyProtocol>;
}

/** Every session kind of the node, by the protocol that opens it. */
export function nodeSessionKinds(given: NodeProtocolDeps): RegisteredSessions[] {
  // The protocols run on the node's OpenSSL; they return the same bytes as on the noble reference.
  // One set of OT pair locks for every kind that presigns (signing and the presignature pool).
  const deps: NodeProtocolDeps = { ...given, primitives: given.primitives ?? nativePrimitives, otLocks: given.otLocks ?? new OtPairLocks() };
  const one = <P, L, G, O>(protocol: Protocol, kind: SessionKind<P, L, G, O>): RegisteredSessions => ({ protocol, kinds: [kind], run: (ctx) => runSession(kind, ctx) });
  return [
    one(Protocol.DKG, dkgSession(deps)),
    // Two rounds, or one with precommitted nonces when the parameters name them.
    { protocol: Protocol.SIGN_SCHNORR, ...signSchnorrSessions(deps) },
    one(Protocol.OT_SETUP, otSetupSession(deps)),
    one(Protocol.SIGN_ECDSA, signEcdsaSession(deps)),
    one(Protocol.PRESIGN_ECDSA, presignEcdsaSession(deps)),
    one(Protocol.PRECOMMIT_FROST, precommitFrostSession(deps)),
    one(Protocol.RESHARE, reshareSession(deps)),
    one(Protocol.COMMIT_EPOCH, epochSession(deps, 'commit')),
    one(Protocol.ABANDON_EPOCH, epochSession(deps, 'abandon')),
    one(Protocol.EXPORT_SHARE, exportShareSession(deps)),
  ];
}

export function nodeProtocols(given: NodeProtocolDeps): ProtocolFactory {
  const kinds = new Map(nodeSessionKinds(given).map((r) => [r.protocol, r.run]));
  return async (ctx): Promise<PartyProtocol> => {
    const run = kinds.get(ctx.open.protocol);
    if (!run) throw new SessionRefused('unsupported_protocol', `protocol ${ctx.open.protocol} is not supported by this node`);
    return run(ctx);
  };
}
