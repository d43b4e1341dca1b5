// FROST signing (RFC 9591 §5) through @noble/curves: `secp256k1_FROST` for plain RFC signatures and
// `schnorr_FROST` for 64-byte BIP-340 signatures. This module adds what a networked signer needs around
// noble's functions: session binding, derivation and Taproot tweaks applied before signing, checks of
// every received commitment and share with the culprit named, and single-use nonces: the nonce pair
// lives in the run state until round 2 consumes it, and a run cannot reach round 2 twice.
//
// Rounds: 1 broadcast {hiding, binding commitments}; 2 broadcast {signature share}; every signer
// aggregates and verifies the signature before returning it.
import { schnorr, schnorr_FROST, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { exposeScalar, parsePoint, parseScalar, secretScalar } from '../math/curve.ts';
import { taggedHashHex } from '../../../core/codec/transcript.ts';
import { InputError, ProtocolAbort, ProtocolBug, blame } from '../../../core/errors/protocol-errors.ts';
import { checkParties, checkSessionId, readPayload, type Protocol } from '../round/machine.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
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
}

export interface FrostSignature {
  signature: string;
  /** Compressed (secp256k1) or x-only (taproot) key the signature verifies under. */
  publicKey: string;
}

export const suiteOf = (s: FrostSuite) => (s === 'secp256k1' ? secp256k1_FROST : schnorr_FROST);
export const idOf = (n: number) => secp256k1_FROST.Identifier.fromNumber(n);

function frostPublic(pkg: KeyPackage, signers: number[]) {
  const verifyingShares: Record<string, Uint8Array> = {};
  for (const p of signers) verifyingShares[idOf(p)] = hexToBytes(pkg.verificationShares[String(p)]!);
  return { signers: { min: pkg.threshold, max: Math.max(pkg.threshold, pkg.parties.length) }, commitments: pkg.groupCommitment.map(hexToBytes), verifyingShares };
}

function commitmentList(s: FrostSignState) {
  return [...s.params.signers].sort((a, b) => a - b).map((p) => ({ identifier: idOf(p), hiding: hexToBytes(s.commits[String(p)]!.hiding), binding: hexToBytes(s.commits[String(p)]!.binding) }));
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

export const frostSign: Protocol<FrostSignParams, FrostSignState, FrostSignature> = {
  name: 'frost-sign/v1',

  start(params, rng) {
    checkParams(params);
    const k = signingKeyShare(params);
    const suite = suiteOf(params.suite);
    const share = secretScalar(k.share.scalar());
    const secret = { identifier: idOf(params.me), signingShare: share.expose() };
    const { nonces, commitments } = suite.commit(secret, (n?: number) => rng(n ?? 32) as Uint8Array<ArrayBuffer>);
    const own: Commit = { hiding: bytesToHex(commitments.hiding), binding: bytesToHex(commitments.binding) };
    const context = taggedHashHex('custody/frost/context/v1', [params.sessionId, params.suite, params.message, [...params.signers].sort((a, b) => a - b).join(','), k.pkg.groupKey]);
    // The state owns noble's nonce bytes: nothing else holds them.
    const state: FrostSignState = {
      params, context, share, pkg: k.pkg,
      nonces: { hiding: new SecretBytes(nonces.hiding), binding: new SecretBytes(nonces.binding) },
      commits: { [params.me]: own }, sigShares: {},
    };
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
        parsePoint(c.hiding, 'hiding commitment');
        parsePoint(c.binding, 'binding commitment');
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
      const { state, share } = signOwnShare(s);
      return { kind: 'next', state, out: [{ from: s.params.me, to: 'all', round: 2, payload: encodeBlob('frost/r2', { share }) }] };
    }
    return { kind: 'done', state: { ...s, sigShares: {} }, result: aggregateSignature(s) };
  },
};

/**
 * Round 2 for this signer (RFC 9591 §5.2): its signature share over the full commitment list, with its
 * nonce pair and tweaked share zeroed and dropped from the state, so a run signs once.
 */
export function signOwnShare(s: FrostSignState): { state: FrostSignState; share: string } {
  if (!s.nonces || !s.share) throw new ProtocolBug('nonce already consumed: a run signs once');
  const suite = suiteOf(s.params.suite);
  const pub = frostPublic(s.pkg, s.params.signers);
  const nonces = { hiding: s.nonces.hiding.expose(), binding: s.nonces.binding.expose() };
  const secret = { identifier: idOf(s.params.me), signingShare: s.share.expose() };
  const share = bytesToHex(suite.signShare(secret, pub, nonces, commitmentList(s), messageBytes(s)));
  // Consumed (noble also zeroes the nonces): a copy of this state that tried again would throw.
  s.nonces.hiding.zeroize();
  s.nonces.binding.zeroize();
  s.share.zeroize();
  return { state: { ...s, nonces: null, share: null, sigShares: { [s.params.me]: share } }, share };
}

/** Aggregates every signer's share (RFC 9591 §5.3) and verifies; failing shares are named (§5.4). */
export function aggregateSignature(s: FrostSignState): FrostSignature {
  const suite = suiteOf(s.params.suite);
  const pub = frostPublic(s.pkg, s.params.signers);
  const shares: Record<string, Uint8Array> = {};
  for (const p of s.params.signers) shares[idOf(p)] = hexToBytes(s.sigShares[String(p)]!);
  let sig: Uint8Array;
  try {
    sig = suite.aggregate(pub, commitmentList(s), messageBytes(s), shares);
  } catch (err) {
    const cheaters = ((err as { cheaters?: string[] }).cheaters ?? []).map((id) => s.params.signers.find((p) => idOf(p) === id)!);
    if (cheaters.length) throw new ProtocolAbort('bad_signature_share', cheaters, `signature share of ${cheaters.join(', ')} does not verify`);
    throw new ProtocolAbort('aggregation_failed', [], `aggregation failed: ${(err as Error).message}`);
  }
  const xOnly = s.params.suite !== 'secp256k1';
  const publicKey = xOnly ? bytesToHex(hexToBytes(s.pkg.groupKey).slice(1)) : s.pkg.groupKey;
  const valid = xOnly ? schnorr.verify(sig, messageBytes(s), hexToBytes(publicKey)) : secp256k1_FROST.verify(sig, messageBytes(s), hexToBytes(publicKey));
  if (!valid) throw new ProtocolAbort('invalid_signature', [], 'aggregated signature does not verify');
  return { signature: bytesToHex(sig), publicKey };
}
