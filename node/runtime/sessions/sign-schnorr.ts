// FROST signing session (RFC 9591; taproot or BIP-340 over node/protocols/frost/). Two ways:
// - two rounds: fresh nonce commitments, independent of the message (RFC 9591 §5.1), go out while the
//   request is authorized; no signature share is made before authorization passed;
// - precommitted (docs/protocols/pools.md "FROST"): the parameters name, per digest, every signer's
//   nonce entry and commitments, each signed by that signer's identity key. Preflight checks every
//   commitment is a point and every other signer's statement signature against its pinned key, and that
//   this node's own entry is held, unused, bound to this key epoch, signer set, suite and path, and
//   behind exactly the commitments named for it (nothing taken). `authorize` runs the customer's checks
//   exactly as for two rounds, then takes the entries (deleted and marked used on disk, in the same synced write as the claims); only then is
//   the share computed and sent, in the session's one round.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { signParams, signResult } from '../../../core/session/session-contract.ts';
import { frostSignWith, type FrostSignature, type FrostSuite } from '../../protocols/frost/frost-sign.ts';
import { checkCommit, frostSignPrecommittedWith, precommitStatement, type Commit, type Nonces } from '../../protocols/frost/frost-precommit.ts';
import { keyShareParam } from '../../protocols/keys/key-package.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { verifyEd25519 } from '../../../common/ed25519.ts';
import { SessionRefused, type SessionContext } from '../session-host.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { SignGrant } from '../authorization/sign-authorizer.ts';
import { readParams, runProtocol, type Finish } from '../protocols/run-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { FrostNonceBinding, FrostNonceStore } from '../../storage/frost-nonce-store.ts';
import type { SignSessionParams } from '../../../core/session/session-params.ts';
import type { Authorization, SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';
import { sessionDigest } from './session-digest.ts';
import { authorizeSigning, SIGNING_AUTHORIZATION } from './sign-authorization.ts';
import { runSession } from './run-session.ts';
import { frostNonceBinding, statementBinding } from './precommit-frost.ts';

const finish = (sigs: FrostSignature[]): Finish => ({ result: signResult.encode({ signatures: sigs.map((s) => hexToBytes(s.signature)), publicKey: hexToBytes(sigs[0]!.publicKey) }) });

function checkScheme(p: SignSessionParams): void {
  if (p.scheme !== 'taproot' && p.scheme !== 'bip340') throw new SessionRefused('wrong_scheme', 'Schnorr sessions sign taproot or bip340');
}

export function signSchnorrSession(deps: NodeProtocolDeps): SessionKind<SignSessionParams, StoredShare, SignGrant, never> {
  return {
    authorization: SIGNING_AUTHORIZATION,
    firstRoundIndependent: true,
    parse: (ctx) => readParams(signParams, ctx.open.params),
    async preflight(ctx, p) {
      const stored = await keyAtEpoch(deps.vault, ctx, p.keyId, p.epoch);
      checkScheme(p);
      if (p.precommitted) throw new SessionRefused('bad_params', 'a precommitted signing runs in one round');
      return stored;
    },
    authorize: async ({ ctx, params, local }) => (await authorizeSigning(deps, ctx, params, local)).grant,
    run({ ctx, params: p, local: stored }) {
      const me = ctx.myIndex;
      const signers = ctx.parties.map((x) => x.index);
      const key = keyShareParam(stored.key);
      const suite: FrostSuite = p.scheme as FrostSuite;
      // The protocol takes its message and gives its signature in hex, as it owns them.
      const params = p.digests.map((digest, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), suite, message: bytesToHex(digest), signers, me, key, path: p.path }));
      return runProtocol(frostSignWith(deps.primitives ?? nativePrimitives), me, params, finish);
    },
  };
}

/** What preflight holds for a precommitted signing: the share, every digest's commitments, this node's entries. */
export interface PrecommittedLocal {
  stored: StoredShare;
  pool: FrostNonceStore;
  binding: FrostNonceBinding;
  /** Per digest, every signer's commitments by party index. */
  commitments: Record<string, Commit>[];
  entryIds: string[];
  own: Commit[];
  /** Once authorized: the taken nonce pairs, one per digest. */
  taken?: Nonces[];
}

/** Checks the named commitments: one per signer and digest, points, and signed by the signer they are named for. */
function readPrecommitted(ctx: SessionContext, p: SignSessionParams, binding: FrostNonceBinding): { commitments: Record<string, Commit>[]; entryIds: string[]; own: Commit[] } {
  const lists = p.precommitted!;
  const signers = ctx.parties.map((x) => x.index).sort((a, b) => a - b);
  const statement = statementBinding(p.keyId, binding);
  const commitments: Record<string, Commit>[] = [];
  const entryIds: string[] = [];
  const own: Commit[] = [];
  const seen = new Set<string>();
  for (const list of lists) {
    const byParty: Record<string, Commit> = {};
    for (const e of list) {
      if (byParty[String(e.party)]) throw new SessionRefused('bad_params', `signer ${e.party} is named twice for one digest`);
      const party = ctx.parties.find((x) => x.index === e.party);
      if (!party) throw new SessionRefused('bad_params', `party ${e.party} is not a signer of this session`);
      const entryKey = `${e.party}/${e.entryId}`;
      if (seen.has(entryKey)) throw new SessionRefused('nonce_used', `entry ${e.entryId} of signer ${e.party} is named twice`);
      seen.add(entryKey);
      let c: Commit;
      try {
        c = checkCommit({ hiding: e.hiding, binding: e.binding }, `signer ${e.party}`, nativePrimitives);
      } catch (err) {
        throw new SessionRefused('bad_commitment', (err as Error).message);
      }
      // Another signer's entry counts only with its own signature: the coordinator cannot invent one.
      if (!verifyEd25519(e.signature, precommitStatement(statement, e.party, e.entryId, c), party.signingKey)) {
        throw new SessionRefused('wrong_commitment', `the commitments named for signer ${e.party} are not signed by it for this key epoch, signer set, suite and path`);
      }
      byParty[String(e.party)] = c;
      if (e.party === ctx.myIndex) {
        entryIds.push(e.entryId);
        own.push(c);
      }
    }
    if (Object.keys(byParty).length !== signers.length) throw new SessionRefused('bad_params', 'every signer is named once for every digest');
    commitments.push(byParty);
  }
  return { commitments, entryIds, own };
}

export function signSchnorrPrecommittedSession(deps: NodeProtocolDeps): SessionKind<SignSessionParams, PrecommittedLocal, SignGrant, never> {
  return {
    authorization: SIGNING_AUTHORIZATION,
    parse: (ctx) => readParams(signParams, ctx.open.params),
    async preflight(ctx, p) {
      const stored = await keyAtEpoch(deps.vault, ctx, p.keyId, p.epoch);
      checkScheme(p);
      if (!p.precommitted) throw new SessionRefused('bad_params', 'a precommitted signing names its commitments');
      const pool = deps.frostNonces;
      if (!pool) throw new SessionRefused('nonce_pool_unavailable', 'this node keeps no FROST nonce store');
      const binding = frostNonceBinding(stored, ctx, p.epoch, p.path, p.scheme as 'taproot' | 'bip340');
      const named = readPrecommitted(ctx, p, binding);
      // Nothing is taken before the customer's authorization: this only refuses early.
      await pool.check(p.keyId, named.entryIds, binding, named.own);
      return { stored, pool, binding, ...named };
    },
    // The ledger and session claims and the pairs' deletion and used marks go to disk in one synced
    // write; only then does the run (which computes the share) start.
    async authorize({ ctx, params, local }) {
      const { grant, taken } = await authorizeSigning(deps, ctx, params, local.stored, () => local.pool.reserve(params.keyId, local.entryIds, local.binding, local.own));
      local.taken = taken;
      return grant;
    },
    release(local) {
      for (const n of local.taken ?? []) {
        n.hiding.zeroize();
        n.binding.zeroize();
      }
    },
    run({ ctx, params: p, local }) {
      const { stored, commitments, taken } = local;
      if (!taken || taken.length !== p.digests.length) throw new Error('a precommitted signing ran before its entries were taken');
      const me = ctx.myIndex;
      const signers = ctx.parties.map((x) => x.index);
      const key = keyShareParam(stored.key);
      const suite = p.scheme as FrostSuite;
      const params = p.digests.map((digest, i) => ({
        sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), suite, message: bytesToHex(digest), signers, me, key, path: p.path,
        commitments: commitments[i]!, nonces: taken[i]!,
      }));
      return runProtocol(frostSignPrecommittedWith(deps.primitives ?? nativePrimitives), me, params, finish);
    },
  };
}

/** SIGN_SCHNORR: the precommitted kind when the parameters name commitments, two rounds otherwise. */
export function signSchnorrSessions(deps: NodeProtocolDeps): { kinds: readonly { authorization: Authorization }[]; run: (ctx: SessionContext) => Promise<PartyProtocol> } {
  const twoRounds = signSchnorrSession(deps);
  const precommitted = signSchnorrPrecommittedSession(deps);
  return {
    kinds: [twoRounds, precommitted],
    run: (ctx) => {
      let pooled = false;
      try {
        pooled = signParams.decode(ctx.open.params).precommitted !== undefined;
      } catch {
        // Malformed parameters: the two-round kind's parse refuses them as it always did.
      }
      return pooled ? runSession(precommitted, ctx) : runSession(twoRounds, ctx);
    },
  };
}
