// Distributed key generation: Pedersen/Feldman VSS with proofs of knowledge (the PedPop DKG of
// Komlo-Goldberg, as in RFC 9591's companion DKG and ZF frost keys::dkg), plus:
// - session binding: session id, key id, epoch, threshold and party list go into every hash;
// - echo-broadcast consistency: round 2 broadcasts a digest of every round-1 message as received, so a
//   party that sent different round-1 packages to different peers is caught and named;
// - a confirmation round: nobody outputs a key until every party confirmed the same group key and
//   verification shares;
// - a jointly random chain code: committed in round 1, revealed in round 3.
//
// Rounds: 1 broadcast {commitment, proof, chain-code commitment}; 2 direct {share} + broadcast {echo};
// 3 broadcast {confirmation, chain-code reveal}.
import { bytesToHex } from '@noble/hashes/utils.js';
import { G, evalCommitment, exposeScalar, parsePoint, parseScalar, pointHex, polyEval, randomScalar, scalarHex, secretScalar, Fn, type Point as P } from '../math/curve.ts';
import { taggedHashHex } from '../../../core/codec/transcript.ts';
import { hashToScalar } from '../math/hash-to-scalar.ts';
import { InputError, ProtocolAbort, blame } from '../../../core/errors/protocol-errors.ts';
import { checkParties, checkSessionId, readPayload, type Message, type Protocol } from '../round/machine.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import { checkEcho, echoDigest } from '../round/echo.ts';
import { SecretShare, type KeyShare } from '../keys/key-package.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { aggregateDealings } from '../keys/aggregate.ts';

export interface DkgParams {
  sessionId: string;
  keyId: string;
  epoch: number;
  threshold: number;
  parties: number[];
  me: number;
}

interface R1 {
  commitment: string[];
  pokR: string;
  pokZ: string;
  ccCommit: string;
}

interface R3 {
  confirm: string;
  chainCode: string;
}

export interface DkgState {
  params: DkgParams;
  context: string;
  /** Secret polynomial coefficients; zeroed and dropped once the shares are dealt. */
  coeffs: SecretBytes[];
  /** f_me(me), secret; dropped once the shares are summed. */
  ownShare: SecretBytes | null;
  /** This party's chain-code contribution, committed in round 1 and revealed in round 3; dropped at the end. */
  ccSecret: SecretBytes | null;
  r1: Record<string, R1>;
  /** The shares dealt to this party (secret), by dealer; dropped once summed. */
  shares: Record<string, SecretBytes>;
  echoes: Record<string, Record<string, string>>;
  confirm: string;
  r3: Record<string, R3>;
  /** The summed share between rounds 2 and 3 (secret); handed out in the SecretShare. */
  secretShare: SecretBytes | null;
  pkg?: KeyPackage;
}

export const MAX_PARTIES = 16;

function context(p: DkgParams): string {
  return taggedHashHex('custody/dkg/context/v1', [p.sessionId, p.keyId, p.epoch, p.threshold, [...p.parties].sort((a, b) => a - b).join(',')]);
}

function pokChallenge(ctx: string, from: number, C0: P, R: P): bigint {
  return hashToScalar('custody/dkg/pok/v1', [ctx, from, pointHex(C0), pointHex(R)]);
}

function r1Digest(ctx: string, from: number, r: R1): string {
  return echoDigest('custody/dkg/echo/v1', ctx, from, [r.commitment.join(','), r.pokR, r.pokZ, r.ccCommit]);
}

function r1Echo(s: DkgState): Record<string, string> {
  const echo: Record<string, string> = {};
  for (const p of s.params.parties) echo[String(p)] = r1Digest(s.context, p, s.r1[String(p)]!);
  return echo;
}

const others = (s: DkgState) => s.params.parties.filter((p) => p !== s.params.me);

export function checkDkgParams(p: DkgParams): void {
  checkSessionId(p.sessionId);
  checkParties(p.parties, p.me);
  if (p.parties.length > MAX_PARTIES) throw new InputError('bad_parties', `at most ${MAX_PARTIES} parties`);
  if (!Number.isInteger(p.threshold) || p.threshold < 2 || p.threshold > p.parties.length) throw new InputError('bad_threshold', 'threshold t must satisfy 1 < t <= n');
  if (!Number.isSafeInteger(p.epoch) || p.epoch < 0) throw new InputError('bad_epoch', 'epoch is a non-negative integer');
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(p.keyId)) throw new InputError('bad_key_id', 'key id is 1 to 128 characters [A-Za-z0-9_.:-]');
}

export const dkg: Protocol<DkgParams, DkgState, KeyShare> = {
  name: 'dkg/v1',

  start(params, rng) {
    checkDkgParams(params);
    const ctx = context(params);
    const coeffs = Array.from({ length: params.threshold }, () => randomScalar(rng));
    const commitment = coeffs.map((c) => G.multiply(c));
    const k = randomScalar(rng);
    const R = G.multiply(k);
    const c = pokChallenge(ctx, params.me, commitment[0]!, R);
    const z = Fn.add(k, Fn.mul(coeffs[0]!, c));
    const ccSecret = new SecretBytes(rng(32));
    const r1: R1 = {
      commitment: commitment.map(pointHex),
      pokR: pointHex(R),
      pokZ: scalarHex(z),
      ccCommit: taggedHashHex('custody/dkg/chaincode-commit/v1', [ctx, params.me, bytesToHex(ccSecret.expose())]),
    };
    const state: DkgState = {
      params, context: ctx, coeffs: coeffs.map(secretScalar), ownShare: secretScalar(polyEval(coeffs, BigInt(params.me))), ccSecret,
      r1: { [params.me]: r1 }, shares: {}, echoes: {}, confirm: '', r3: {}, secretShare: null,
    };
    return { state, out: [{ from: params.me, to: 'all', round: 1, payload: encodeBlob('dkg/r1', r1) }] };
  },

  verify(s, round, msg) {
    const from = msg.from;
    if (!others(s).includes(from)) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not in this session`);
    if (round === 1) {
      if (msg.to !== 'all') throw new ProtocolAbort('bad_message', [from], 'round 1 is a broadcast');
      const r = readPayload<R1>('dkg/r1', msg);
      return blame(from, 'bad_commitment', () => {
        if (!Array.isArray(r.commitment) || r.commitment.length !== s.params.threshold) throw new InputError('bad_commitment', 'commitment has the wrong length');
        const C = r.commitment.map((c, i) => parsePoint(c, `commitment ${i}`));
        const R = parsePoint(r.pokR, 'proof R');
        const z = parseScalar(r.pokZ, 'proof z');
        const c = pokChallenge(s.context, from, C[0]!, R);
        // Public values only (z, c, R, C_0): variable-time arithmetic is fine and much cheaper here.
        if (!G.multiplyUnsafe(z).equals(R.add(C[0]!.multiplyUnsafe(c)))) throw new ProtocolAbort('bad_proof', [from], `party ${from}: proof of knowledge does not verify`);
        if (typeof r.ccCommit !== 'string' || !/^[0-9a-f]{64}$/.test(r.ccCommit)) throw new InputError('bad_commitment', 'chain-code commitment');
        return { commitment: r.commitment, pokR: r.pokR, pokZ: r.pokZ, ccCommit: r.ccCommit } satisfies R1;
      });
    }
    if (round === 2) {
      if (msg.to === 'all') {
        const e = readPayload<Record<string, string>>('dkg/r2-echo', msg);
        // `from` saw a different round-1 message from p than we did: p equivocated or `from` lies (both named).
        checkEcho(r1Echo(s), e, from, s.params.me, 'round-1 messages');
        return { echo: e };
      }
      if (msg.to !== s.params.me) throw new ProtocolAbort('bad_message', [from], 'share addressed to another party');
      const { share } = readPayload<{ share: string }>('dkg/r2-share', msg);
      return blame(from, 'bad_share', () => {
        const v = parseScalar(share, 'share');
        const C = s.r1[String(from)]!.commitment.map((c, i) => parsePoint(c, `commitment ${i}`));
        if (!G.multiply(v).equals(evalCommitment(C, BigInt(s.params.me)))) throw new ProtocolAbort('bad_share', [from], `party ${from}: share does not match its commitment`);
        return { share: secretScalar(v) };
      });
    }
    if (round === 3) {
      if (msg.to !== 'all') throw new ProtocolAbort('bad_message', [from], 'round 3 is a broadcast');
      const r = readPayload<R3>('dkg/r3', msg);
      if (r.confirm !== s.confirm) throw new ProtocolAbort('confirmation_mismatch', [from], `party ${from} confirmed a different key`);
      if (typeof r.chainCode !== 'string' || !/^[0-9a-f]{64}$/.test(r.chainCode)) throw new ProtocolAbort('bad_reveal', [from], `party ${from}: malformed chain-code reveal`);
      if (taggedHashHex('custody/dkg/chaincode-commit/v1', [s.context, from, r.chainCode]) !== s.r1[String(from)]!.ccCommit) {
        throw new ProtocolAbort('bad_reveal', [from], `party ${from}: chain-code reveal does not match its commitment`);
      }
      return { confirm: r.confirm, chainCode: r.chainCode } satisfies R3;
    }
    throw new ProtocolAbort('bad_message', [from], `no round ${round}`);
  },

  store(s, round, msg, parsed) {
    const k = String(msg.from);
    if (round === 1) return { ...s, r1: { ...s.r1, [k]: parsed as R1 } };
    if (round === 2) {
      const p = parsed as { echo?: Record<string, string>; share?: SecretBytes };
      if (p.echo) return { ...s, echoes: { ...s.echoes, [k]: p.echo } };
      return { ...s, shares: { ...s.shares, [k]: p.share! } };
    }
    return { ...s, r3: { ...s.r3, [k]: parsed as R3 } };
  },

  ready(s, round) {
    const o = others(s).map(String);
    if (round === 1) return o.every((p) => s.r1[p]);
    if (round === 2) return o.every((p) => s.shares[p] && s.echoes[p]);
    return o.every((p) => s.r3[p]);
  },

  finalize(s, round) {
    const me = s.params.me;
    if (round === 1) {
      const coeffs = s.coeffs.map((c) => exposeScalar(c, 'coefficient'));
      // Each share leaves explicitly, as hex, in its (end-to-end encrypted) direct message.
      const out: Message[] = others(s).map((j) => ({ from: me, to: j, round: 2, payload: encodeBlob('dkg/r2-share', { share: scalarHex(polyEval(coeffs, BigInt(j))) }) }));
      out.push({ from: me, to: 'all', round: 2, payload: encodeBlob('dkg/r2-echo', r1Echo(s)) });
      // The polynomial is no longer needed: only the own share remains.
      for (const c of s.coeffs) c.zeroize();
      return { kind: 'next', state: { ...s, coeffs: [] }, out };
    }
    if (round === 2) {
      const parties = s.params.parties;
      const t = s.params.threshold;
      const agg = aggregateDealings(parties.map((p) => s.r1[String(p)]!.commitment), parties, t, {
        me, shares: [s.ownShare!, ...others(s).map((p) => s.shares[String(p)]!)].map((x) => exposeScalar(x, 'share', true)),
      });
      const x = agg.share!;
      const verificationShares = agg.verificationShares;
      const groupKey = agg.groupCommitment[0]!;
      const sorted = [...parties].sort((a, b) => a - b);
      const confirm = taggedHashHex('custody/dkg/confirm/v1', [s.context, groupKey, ...sorted.map((p) => verificationShares[String(p)]!), ...sorted.map((p) => s.r1[String(p)]!.ccCommit)]);
      const pkg: KeyPackage = {
        keyId: s.params.keyId, epoch: s.params.epoch, threshold: t, parties: sorted, groupKey, verificationShares,
        groupCommitment: agg.groupCommitment, chainCode: '',
      };
      // The chain-code contribution is revealed now, explicitly (every commitment is in).
      const out: Message[] = [{ from: me, to: 'all', round: 3, payload: encodeBlob('dkg/r3', { confirm, chainCode: bytesToHex(s.ccSecret!.expose()) } satisfies R3) }];
      return { kind: 'next', state: { ...s, confirm, pkg, secretShare: secretScalar(x), ownShare: null, shares: {} }, out };
    }
    const sorted = [...s.params.parties].sort((a, b) => a - b);
    const reveals = sorted.map((p) => (p === me ? bytesToHex(s.ccSecret!.expose()) : s.r3[String(p)]!.chainCode));
    const chainCode = taggedHashHex('custody/dkg/chaincode/v1', [s.context, ...reveals]);
    const pkg: KeyPackage = { ...s.pkg!, chainCode };
    const share = new SecretShare(me, exposeScalar(s.secretShare!, 'share'));
    return { kind: 'done', state: { ...s, secretShare: null, ccSecret: null, pkg }, result: { share, pkg } };
  },
};
