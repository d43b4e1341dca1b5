// FROST signing (RFC 9591 §5): `secp256k1` for plain RFC signatures and `bip340`/`taproot` for 64-byte
// BIP-340 signatures, on the arithmetic of frost-core.ts with its products through the injected
// `Primitives`. This module adds what a networked signer needs around it: session binding, derivation
// and Taproot tweaks applied before signing, checks of every received commitment and share with the
// culprit named, and single-use nonces: the nonce pair lives in the run state until round 2 consumes it,
// and a run cannot reach round 2 twice.
//
// Rounds: 1 broadcast {hiding, binding commitments}; 2 broadcast {signature share}; every signer
// aggregates and verifies the signature before returning it. The group commitment computed in round 2
// is kept in the state for the aggregation (it is public), so it is computed once per signer.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { exposeScalar, parseScalar, pointHex, scalarHex, secretScalar } from '../math/curve.ts';
import { noblePrimitives, type Primitives } from '../math/primitives.ts';
import { aggregate, nonceGenerate, shareVerifies, signatureShare, signatureVerifies, signingContext, type Ciphersuite, type CommitmentEntry, type SigningContext } from './frost-core.ts';
import { taggedHashHex } from '../../../core/codec/transcript.ts';
import { InputError, ProtocolAbort, ProtocolBug, blame } from '../../../core/errors/protocol-errors.ts';
import { checkParties, checkSessionId, readPayload, type Protocol, type Rng } from '../round/machine.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import type { SecretBytes } from '../../../core/codec/secret.ts';
import type { KeyShare, KeyShareParam } from '../keys/key-package.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { preparedKeyShare } from './prepared-key.ts';

/**
 * `secp256k1`: RFC 9591 FROST(secp256k1, SHA-256). `bip340`: 64-byte BIP-340 signatures under the
 * (even-y) key itself. `taproot`: BIP-340 under the BIP-341 key-path output key (tweak applied here).
 */
export type FrostSuite = 'secp256k1' | 'bip340' | 'taproot';

export interface FrostSignParams {
  sessionId: string;
  suite: FrostSuite;
  /** Message hex: for Taproot the 32-byte sighash. */
  message: string;
  signers: number[];
  me: number;
  /** The untweaked key share, as stored. */
  key: KeyShareParam;
  /** Non-hardened derivation path applied before signing. */
  path: number[];
  /** Taproot only: 32-byte script tree root hex, or '' for a key-path-only output (BIP-86). */
  merkleRoot?: string;
}

/** A signer's public nonce commitments (D_i, E_i), compressed points in hex. */
export interface Commit {
  hiding: string;
  binding: string;
}

/** The signer's nonce pair (RFC 9591 §5.1), secret and single-use. */
export interface Nonces {
  hiding: SecretBytes;
  binding: SecretBytes;
}

export interface FrostSignState {
  params: FrostSignParams;
  context: string;
  /** Tweaked share used for this signature (secret); zeroed and dropped when round 2 uses it. */
  share: SecretBytes | null;
  pkg: KeyPackage;
  /** Nonce pair (secret); zeroed and dropped when round 2 consumes it. */
  nonces: Nonces | null;
  commits: Record<string, Commit>;
  sigShares: Record<string, string>;
  /** The group commitment R (compressed hex), public, once round 2 has computed it. */
  groupCommitment?: string;
}

export interface FrostSignature {
  signature: string;
  /** Compressed (secp256k1) or x-only (taproot) key the signature verifies under. */
  publicKey: string;
}

/** The ciphersuite of a signature suite: BIP-340 signatures (plain or Taproot) are FROST's `tr`. */
export const ciphersuiteOf = (s: FrostSuite): Ciphersuite => (s === 'secp256k1' ? 'secp256k1' : 'tr');

/**
 * RFC 9591 §5.1 commit: a nonce pair hedged with the signing share (nonce_generate) and its commitments
 * (d·G, e·G through `prims`, constant time). The rng gives 32 bytes for the hiding nonce, then 32 for the
 * binding one, as the RFC's vectors inject them.
 */
export function commitNonces(prims: Primitives, suite: FrostSuite, share: SecretBytes, rng: Rng): { nonces: Nonces; commitment: Commit } {
  const cs = ciphersuiteOf(suite);
  const s = exposeScalar(share, 'share');
  const d = nonceGenerate(cs, rng(32), s);
  const e = nonceGenerate(cs, rng(32), s);
  return {
    nonces: { hiding: secretScalar(d), binding: secretScalar(e) },
    commitment: { hiding: pointHex(prims.mulBase(d)), binding: pointHex(prims.mulBase(e)) },
  };
}

function commitmentList(prims: Primitives, s: FrostSignState): CommitmentEntry[] {
  return s.params.signers.map((p) => ({ id: BigInt(p), hiding: prims.point(s.commits[String(p)]!.hiding, 'hiding commitment'), binding: prims.point(s.commits[String(p)]!.binding, 'binding commitment') }));
}

/**
 * The signing context over the state's commitment list. `known` reuses the group commitment round 2 kept
 * (the aggregation only: a share is always computed over a group commitment computed here, so nothing
 * in a state handed back can change what this signer signs).
 */
function contextOf(prims: Primitives, s: FrostSignState, list: CommitmentEntry[], known?: string): SigningContext {
  const R = known === undefined ? undefined : prims.point(known, 'group commitment');
  return signingContext(prims, ciphersuiteOf(s.params.suite), prims.point(s.pkg.groupKey, 'group key'), list, messageBytes(s), R);
}

/** The message as signed: bound to nothing else, as RFC 9591 and BIP-340 define it. */
const messageBytes = (s: FrostSignState) => hexToBytes(s.params.message);

export function signingKeyShare(p: FrostSignParams): KeyShare {
  return preparedKeyShare(p.key.id, exposeScalar(p.key.share, 'share'), p.key.pkg, p.path, p.suite === 'taproot', p.merkleRoot);
}

export function checkParams(p: FrostSignParams): void {
  checkSessionId(p.sessionId);
  checkParties(p.signers, p.me);
  if (p.key.id !== p.me) throw new InputError('bad_key', 'the key share belongs to another party');
  if (p.signers.length < p.key.pkg.threshold) throw new InputError('not_enough_signers', `need ${p.key.pkg.threshold} signers`);
  if (p.signers.some((s) => !p.key.pkg.parties.includes(s))) throw new InputError('bad_parties', 'a signer does not hold a share of this key');
  if (!['secp256k1', 'bip340', 'taproot'].includes(p.suite)) throw new InputError('bad_suite', 'unknown signature suite');
  if (!/^([0-9a-f]{2})*$/.test(p.message)) throw new InputError('bad_message', 'message is hex');
  if (p.suite === 'taproot' && p.message.length !== 64) throw new InputError('bad_message', 'a Taproot signature signs a 32-byte sighash');
  if (p.merkleRoot && !/^[0-9a-f]{64}$/.test(p.merkleRoot)) throw new InputError('bad_merkle_root', 'merkle root is 32 bytes of hex');
}

/** The two-round signing on the given primitives (the node passes its native ones). */
export function frostSignWith(prims: Primitives): Protocol<FrostSignParams, FrostSignState, FrostSignature> {
  return {
    name: 'frost-sign/v1',

    start(params, rng) {
      checkParams(params);
      const k = signingKeyShare(params);
      const share = secretScalar(k.share.scalar());
      const { nonces, commitment: own } = commitNonces(prims, params.suite, share, rng);
      const context = taggedHashHex('custody/frost/context/v1', [params.sessionId, params.suite, params.message, [...params.signers].sort((a, b) => a - b).join(','), k.pkg.groupKey]);
      // The state owns the nonce bytes: nothing else holds them.
      const state: FrostSignState = { params, context, share, pkg: k.pkg, nonces, commits: { [params.me]: own }, sigShares: {} };
      // The context hash binds session and signer set into round 1, so a commitment from another
      // session cannot be mixed into this one.
      return { state, out: [{ from: params.me, to: 'all', round: 1, payload: encodeBlob('frost/r1', { ...own, context }) }] };
    },

    verify(s, round, msg) {
      const from = msg.from;
      if (!s.params.signers.includes(from) || from === s.params.me) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not a signer here`);
      if (msg.to !== 'all') throw new ProtocolAbort('bad_message', [from], 'FROST rounds are broadcasts');
      if (round === 1) {
        const c = readPayload<Commit & { context: string }>('frost/r1', msg);
        if (c.context !== s.context) throw new ProtocolAbort('wrong_session', [from], `party ${from}: commitment is for another session or signer set`);
        return blame(from, 'bad_commitment', () => {
          prims.point(c.hiding, 'hiding commitment');
          prims.point(c.binding, 'binding commitment');
          return { hiding: c.hiding, binding: c.binding } satisfies Commit;
        });
      }
      // The share is parsed here and checked through the aggregate in finalize (RFC 9591 §5.3): when the
      // aggregate does not verify, every share is verified (§5.4) and the failing signers are named.
      const { share } = readPayload<{ share: string }>('frost/r2', msg);
      blame(from, 'bad_signature_share', () => parseScalar(share, 'signature share', true));
      return share;
    },

    store(s, round, msg, parsed) {
      if (round === 1) return { ...s, commits: { ...s.commits, [msg.from]: parsed as Commit } };
      return { ...s, sigShares: { ...s.sigShares, [msg.from]: parsed as string } };
    },

    ready(s, round) {
      const need = s.params.signers.map(String);
      return round === 1 ? need.every((p) => s.commits[p]) : need.filter((p) => p !== String(s.params.me)).every((p) => s.sigShares[p]);
    },

    finalize(s, round) {
      if (round === 1) {
        const { state, share } = signOwnShare(prims, s);
        return { kind: 'next', state, out: [{ from: s.params.me, to: 'all', round: 2, payload: encodeBlob('frost/r2', { share }) }] };
      }
      return { kind: 'done', state: { ...s, sigShares: {} }, result: aggregateSignature(prims, s) };
    },
  };
}

/** The two-round signing on the reference primitives. */
export const frostSign = frostSignWith(noblePrimitives);

/**
 * Round 2 for this signer (RFC 9591 §5.2): its signature share over the full commitment list, with its
 * nonce pair and tweaked share zeroed and dropped from the state, so a run signs once. The group
 * commitment stays in the state for the aggregation.
 */
export function signOwnShare(prims: Primitives, s: FrostSignState): { state: FrostSignState; share: string } {
  if (!s.nonces || !s.share) throw new ProtocolBug('nonce already consumed: a run signs once');
  const ctx = contextOf(prims, s, commitmentList(prims, s));
  const d = exposeScalar(s.nonces.hiding, 'hiding nonce');
  const e = exposeScalar(s.nonces.binding, 'binding nonce');
  const share = scalarHex(signatureShare(ctx, BigInt(s.params.me), exposeScalar(s.share, 'share'), d, e));
  // Consumed: a copy of this state that tried again would throw.
  s.nonces.hiding.zeroize();
  s.nonces.binding.zeroize();
  s.share.zeroize();
  return { state: { ...s, nonces: null, share: null, sigShares: { [s.params.me]: share }, groupCommitment: pointHex(ctx.R) }, share };
}

/** Aggregates every signer's share (RFC 9591 §5.3) and verifies; failing shares are named (§5.4). */
export function aggregateSignature(prims: Primitives, s: FrostSignState): FrostSignature {
  const list = commitmentList(prims, s);
  const ctx = contextOf(prims, s, list, s.groupCommitment);
  const shares = s.params.signers.map((p) => parseScalar(s.sigShares[String(p)], 'signature share', true));
  const sig = aggregate(ctx, shares);
  const xOnly = s.params.suite !== 'secp256k1';
  if (!signatureVerifies(prims, ctx.cs, sig, ctx.msg, prims.point(s.pkg.groupKey, 'group key'))) {
    const cheaters = s.params.signers.filter((p, i) => !shareVerifies(ctx, list[i]!, prims.point(s.pkg.verificationShares[String(p)] ?? '', 'verification share'), shares[i]!));
    if (cheaters.length) throw new ProtocolAbort('bad_signature_share', cheaters, `signature share of ${cheaters.join(', ')} does not verify`);
    throw new ProtocolAbort('aggregation_failed', [], 'the aggregated signature does not verify, though every share does');
  }
  return { signature: bytesToHex(sig), publicKey: xOnly ? s.pkg.groupKey.slice(2) : s.pkg.groupKey };
}
