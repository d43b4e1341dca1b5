// FROST with precommitted nonces (RFC 9591 §5.1 done ahead; docs/protocols/pools.md "FROST"). Round 1's
// nonce pairs and commitments do not depend on the message, so a node may draw them before a request
// exists (`frostPrecommit`) and keep the secret pairs sealed until a signing names one. The signing run
// (`frostSignPrecommitted`) then starts from that pair and the full commitment list and goes straight
// to round 2: the binding factor ρ_i = H1(group key ‖ H4(msg) ‖ H5(commitment list) ‖ i) is computed by
// frost-core.ts over the (Taproot-tweaked) key, the message and every signer's (D, E) exactly as in the two-round
// run, and the aggregation with its cheater detection is the two-round run's own (frost-sign.ts).
//
// Rounds: 1 broadcast {signature share, context}; every signer aggregates and verifies.
import { exposeScalar, parseScalar, pointHex, secretScalar } from '../math/curve.ts';
import { noblePrimitives, type Primitives } from '../math/primitives.ts';
import { taggedHashHex, transcript } from '../../../core/codec/transcript.ts';
import { InputError, ProtocolAbort, blame } from '../../../core/errors/protocol-errors.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import type { SecretBytes } from '../../../core/codec/secret.ts';
import { readPayload, type Protocol, type Rng } from '../round/machine.ts';
import { aggregateSignature, checkParams, commitNonces, signOwnShare, signingKeyShare, type Commit, type FrostSignParams, type FrostSignState, type FrostSignature, type FrostSuite, type Nonces } from './frost-sign.ts';
import type { KeyShareParam } from '../keys/key-package.ts';

export type { Commit, Nonces } from './frost-sign.ts';

/** What a batch of nonce pairs is drawn for: the signer, its key share, the path and the suite's tweak. */
export interface FrostPrecommitParams {
  suite: FrostSuite;
  me: number;
  key: KeyShareParam;
  path: number[];
  merkleRoot?: string;
}

/** One precommitted nonce pair: the secret pair (single use) and its public commitments. */
export interface FrostPrecommitment {
  nonces: Nonces;
  commitment: Commit;
}

/** Most nonce pairs drawn in one call. */
export const MAX_PRECOMMITS = 64;

/**
 * Draws `count` nonce pairs with their commitments (RFC 9591 §5.1 `commit`, nonces hedged with the
 * signing share as the RFC's nonce_generate does). The share is the one that will sign: derived for
 * `path` and, for Taproot, tweaked.
 */
export function frostPrecommit(p: FrostPrecommitParams, count: number, rng: Rng, prims: Primitives = noblePrimitives): FrostPrecommitment[] {
  if (!Number.isInteger(count) || count < 1 || count > MAX_PRECOMMITS) throw new InputError('bad_params', `between 1 and ${MAX_PRECOMMITS} nonce pairs at a time`);
  if (p.key.id !== p.me) throw new InputError('bad_key', 'the key share belongs to another party');
  if (!['secp256k1', 'bip340', 'taproot'].includes(p.suite)) throw new InputError('bad_suite', 'unknown signature suite');
  if (p.merkleRoot && !/^[0-9a-f]{64}$/.test(p.merkleRoot)) throw new InputError('bad_merkle_root', 'merkle root is 32 bytes of hex');
  const k = signingKeyShare({ sessionId: '', message: '', signers: [p.me], ...p });
  const share = secretScalar(k.share.scalar());
  const out: FrostPrecommitment[] = [];
  try {
    for (let i = 0; i < count; i++) out.push(commitNonces(prims, p.suite, share, rng));
  } finally {
    share.zeroize();
  }
  return out;
}

/** The commitments of a nonce pair, recomputed: D = d·G, E = e·G. */
export function commitmentOf(nonces: Nonces, prims: Primitives = noblePrimitives): Commit {
  const point = (s: SecretBytes) => pointHex(prims.mulBase(exposeScalar(s, 'nonce')));
  return { hiding: point(nonces.hiding), binding: point(nonces.binding) };
}

/** Checks a received commitment: both are points on the curve (not the identity). */
export function checkCommit(c: Commit, what: string, prims: Primitives = noblePrimitives): Commit {
  if (typeof c?.hiding !== 'string' || typeof c?.binding !== 'string') throw new InputError('bad_commitment', `${what}: a commitment is two points`);
  try {
    prims.point(c.hiding, `${what} hiding commitment`);
    prims.point(c.binding, `${what} binding commitment`);
  } catch (err) {
    throw new InputError('bad_commitment', (err as Error).message);
  }
  return { hiding: c.hiding, binding: c.binding };
}

/** What a node's precommitment is bound to, and what its identity key signs (`precommitStatement`). */
export interface PrecommitBinding {
  keyId: string;
  epoch: number;
  suite: FrostSuite;
  /** Sorted party indices of the signer set. */
  signers: number[];
  path: number[];
  /** Taproot only: the script tree root, '' for a key-path-only output. */
  merkleRoot: string;
}

/**
 * The bytes a node signs with its identity key for one precommitted entry, so that nobody can attribute
 * to it commitments it did not make: domain-separated and length-prefixed (core/codec/transcript.ts).
 */
export function precommitStatement(b: PrecommitBinding, party: number, entryId: string, c: Commit): Uint8Array {
  return transcript('custody/frost/precommit/v1', [b.keyId, String(b.epoch), b.suite, [...b.signers].sort((x, y) => x - y).join(','), b.path.join('/'), b.merkleRoot, String(party), entryId, c.hiding, c.binding]);
}

export interface FrostPrecommittedParams extends FrostSignParams {
  /** Every signer's commitments for this signature, by party index (the caller's own included). */
  commitments: Record<string, Commit>;
  /** This signer's nonce pair for its own commitments, taken from its store; zeroed once used. */
  nonces: Nonces;
}

const listHash = (signers: number[], commits: Record<string, Commit>) =>
  [...signers].sort((a, b) => a - b).map((p) => `${p}:${commits[String(p)]!.hiding}:${commits[String(p)]!.binding}`).join(',');

/** The precommitted signing on the given primitives (the node passes its native ones). */
export function frostSignPrecommittedWith(prims: Primitives): Protocol<FrostPrecommittedParams, FrostSignState, FrostSignature> {
  return {
    name: 'frost-sign-precommitted/v1',

    start({ commitments, nonces, ...params }) {
      checkParams(params);
      const named = Object.keys(commitments ?? {});
      if (named.length !== params.signers.length || params.signers.some((p) => !commitments[String(p)])) throw new InputError('bad_commitment', 'one commitment pair per signer, for every signer');
      const commits: Record<string, Commit> = {};
      for (const p of params.signers) commits[String(p)] = checkCommit(commitments[String(p)]!, `signer ${p}`, prims);
      // The pair must be the one behind the commitments named for this signer: signing with other
      // commitments than its own would not verify, and a mismatch means the list or the store is wrong.
      const own = commitmentOf(nonces, prims);
      if (own.hiding !== commits[String(params.me)]!.hiding || own.binding !== commits[String(params.me)]!.binding) {
        throw new InputError('wrong_commitment', 'the commitments named for this signer are not its own');
      }
      const k = signingKeyShare(params);
      const context = taggedHashHex('custody/frost/precommitted-context/v1', [params.sessionId, params.suite, params.message, [...params.signers].sort((a, b) => a - b).join(','), k.pkg.groupKey, listHash(params.signers, commits)]);
      const state: FrostSignState = { params, context, share: secretScalar(k.share.scalar()), pkg: k.pkg, nonces, commits, sigShares: {} };
      const signed = signOwnShare(prims, state);
      // The context binds session, signer set, key and the whole commitment list: signers handed
      // different lists abort at once rather than aggregate shares over different lists.
      return { state: signed.state, out: [{ from: params.me, to: 'all', round: 1, payload: encodeBlob('frost/pc1', { share: signed.share, context }) }] };
    },

    verify(s, round, msg) {
      const from = msg.from;
      if (round !== 1) throw new ProtocolAbort('bad_message', [from], 'a precommitted signing has one round');
      if (!s.params.signers.includes(from) || from === s.params.me) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not a signer here`);
      if (msg.to !== 'all') throw new ProtocolAbort('bad_message', [from], 'FROST rounds are broadcasts');
      const m = readPayload<{ share: string; context: string }>('frost/pc1', msg);
      if (m.context !== s.context) throw new ProtocolAbort('wrong_session', [from], `party ${from}: share is for another session, signer set or commitment list`);
      blame(from, 'bad_signature_share', () => parseScalar(m.share, 'signature share', true));
      return m.share;
    },

    store(s, _round, msg, parsed) {
      return { ...s, sigShares: { ...s.sigShares, [msg.from]: parsed as string } };
    },

    ready(s) {
      return s.params.signers.every((p) => s.sigShares[String(p)]);
    },

    finalize(s) {
      return { kind: 'done', state: { ...s, sigShares: {} }, result: aggregateSignature(prims, s) };
    },
  };
}

/** The precommitted signing on the reference primitives. */
export const frostSignPrecommitted = frostSignPrecommittedWith(noblePrimitives);
