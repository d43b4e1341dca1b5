// Reshare (and refresh): a qualified subset of the old committee deals its Lagrange-weighted shares
// λ_i·x_i to a new committee by fresh Feldman VSS (Herzberg et al. proactive resharing; Desmedt-Jajodia
// redistribution). The new committee may differ in members, size and threshold. The group key and chain
// code never change; every receiver checks that each dealer's constant commitment equals the public
// λ_i·X_i and that they sum to the group key. The output is a new epoch whose shares lie on an unrelated
// polynomial: they do not combine with the old epoch's.
//
// Session parties are numbered 1..m over the union of both committees; each has an old id (dealer),
// a new id (receiver), or both. Rounds: 1 dealers broadcast {commitment} and send {share} to each
// receiver; 2 receivers broadcast {echo of the dealers' commitments, confirmation of the new package}.
import { G, Fn, evalCommitment, exposeScalar, lagrangeAtZero, parsePoint, parseScalar, pointHex, polyEval, randomScalar, scalarHex, secretScalar } from '../math/curve.ts';
import { taggedHashHex } from '../../../core/codec/transcript.ts';
import { InputError, ProtocolAbort, blame } from '../../../core/errors/protocol-errors.ts';
import { checkParties, checkSessionId, readPayload, type Message, type Protocol } from '../round/machine.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import type { SecretBytes } from '../../../core/codec/secret.ts';
import { checkEcho, echoDigest } from '../round/echo.ts';
import { SecretShare, checkKeyPackage, type KeyShare } from '../keys/key-package.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { MAX_PARTIES } from '../dkg/dkg.ts';
import { aggregateDealings } from '../keys/aggregate.ts';
import type { ReshareMember } from '../../../core/session/reshare-member.ts';

export interface ReshareParams {
  sessionId: string;
  members: ReshareMember[];
  me: number;
  /** Public package of the old epoch (every member must hold the same). */
  oldPkg: KeyPackage;
  newThreshold: number;
  newEpoch: number;
  /** The dealer's stored old share (dealers only). */
  oldShare?: { id: number; share: SecretBytes };
}

export interface ReshareState {
  params: ReshareParams;
  context: string;
  commitments: Record<string, string[]>;
  /** Shares dealt to this party (secret), by dealer, its own dealing included; dropped once summed. */
  shares: Record<string, SecretBytes>;
  confirm: string;
  echoes: Record<string, { echo: Record<string, string>; confirm: string }>;
  /** The new share between rounds 1 and 2 (secret); handed out in the SecretShare. */
  newShare: SecretBytes | null;
  newPkg?: KeyPackage;
}

export type ReshareResult = { kind: 'receiver'; key: KeyShare } | { kind: 'dealer-only'; pkg: KeyPackage };

const dealers = (p: ReshareParams) => p.members.filter((m) => m.oldId !== undefined);
const receivers = (p: ReshareParams) => p.members.filter((m) => m.newId !== undefined);
const member = (p: ReshareParams, party: number) => p.members.find((m) => m.party === party);

function context(p: ReshareParams): string {
  const members = [...p.members].sort((a, b) => a.party - b.party).map((m) => `${m.party}:${m.oldId ?? '-'}:${m.newId ?? '-'}`).join(',');
  return taggedHashHex('custody/reshare/context/v1', [p.sessionId, p.oldPkg.keyId, p.oldPkg.epoch, p.oldPkg.groupKey, p.newEpoch, p.newThreshold, members]);
}

/** Per dealer, a digest of the commitment as this party received it. */
function echoDigests(s: ReshareState): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of dealers(s.params)) out[String(d.party)] = echoDigest('custody/reshare/echo/v1', s.context, d.party, [s.commitments[String(d.party)]!.join('.')]);
  return out;
}

export function checkReshareParams(p: ReshareParams): void {
  checkSessionId(p.sessionId);
  checkParties(p.members.map((m) => m.party), p.me);
  checkKeyPackage(p.oldPkg);
  const ds = dealers(p);
  const rs = receivers(p);
  const oldIds = ds.map((d) => d.oldId!);
  const newIds = rs.map((r) => r.newId!);
  if (new Set(oldIds).size !== oldIds.length || oldIds.some((i) => !p.oldPkg.parties.includes(i))) throw new InputError('bad_parties', 'dealers are distinct members of the old committee');
  if (ds.length < p.oldPkg.threshold) throw new InputError('not_enough_dealers', `need ${p.oldPkg.threshold} dealers from the old committee`);
  if (new Set(newIds).size !== newIds.length || newIds.some((i) => !Number.isSafeInteger(i) || i < 1 || i > 65535)) throw new InputError('bad_parties', 'new ids are distinct integers from 1 to 65535');
  if (rs.length > MAX_PARTIES) throw new InputError('bad_parties', `at most ${MAX_PARTIES} parties`);
  if (!Number.isInteger(p.newThreshold) || p.newThreshold < 2 || p.newThreshold > rs.length) throw new InputError('bad_threshold', 'new threshold t must satisfy 1 < t <= new committee size');
  if (!Number.isSafeInteger(p.newEpoch) || p.newEpoch <= p.oldPkg.epoch) throw new InputError('bad_epoch', 'the new epoch follows the old one');
  const me = member(p, p.me)!;
  if (me.oldId !== undefined && (!p.oldShare || p.oldShare.id !== me.oldId)) throw new InputError('bad_key', 'a dealer brings its own old share');
}

export const reshare: Protocol<ReshareParams, ReshareState, ReshareResult> = {
  name: 'reshare/v1',

  start(params, rng) {
    checkReshareParams(params);
    const ctx = context(params);
    const me = member(params, params.me)!;
    const state: ReshareState = { params, context: ctx, commitments: {}, shares: {}, confirm: '', echoes: {}, newShare: null };
    if (me.oldId === undefined) return { state, out: [] };
    const x = exposeScalar(params.oldShare!.share, 'old share');
    if (!G.multiply(x).equals(parsePoint(params.oldPkg.verificationShares[String(me.oldId)], 'own verification share'))) {
      throw new InputError('bad_key', 'old share does not match the old package');
    }
    const lambda = lagrangeAtZero(dealers(params).map((d) => BigInt(d.oldId!)), BigInt(me.oldId));
    const coeffs = [Fn.mul(lambda, x), ...Array.from({ length: params.newThreshold - 1 }, () => randomScalar(rng))];
    const commitment = coeffs.map((c) => pointHex(G.multiply(c)));
    const out: Message[] = [{ from: params.me, to: 'all', round: 1, payload: encodeBlob('reshare/r1', { commitment, context: ctx }) }];
    // The dealing polynomial lives only in this call: the shares leave (as hex, each in its end-to-end
    // encrypted direct message), our own stays in the state as a secret.
    let mine: SecretBytes | undefined;
    for (const r of receivers(params)) {
      const share = polyEval(coeffs, BigInt(r.newId!));
      if (r.party === params.me) mine = secretScalar(share);
      else out.push({ from: params.me, to: r.party, round: 1, payload: encodeBlob('reshare/r1-share', { share: scalarHex(share) }) });
    }
    coeffs.fill(0n);
    return { state: { ...state, commitments: { [params.me]: commitment }, shares: mine ? { [params.me]: mine } : {} }, out };
  },

  verify(s, round, msg) {
    const from = msg.from;
    const m = member(s.params, from);
    if (!m || from === s.params.me) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not in this session`);
    const me = member(s.params, s.params.me)!;
    if (round === 1) {
      if (m.oldId === undefined) throw new ProtocolAbort('bad_message', [from], `party ${from} does not deal`);
      if (msg.to === 'all') {
        const r = readPayload<{ commitment: string[]; context: string }>('reshare/r1', msg);
        if (r.context !== s.context) throw new ProtocolAbort('wrong_session', [from], `party ${from}: commitment for another session`);
        return blame(from, 'bad_commitment', () => {
          if (!Array.isArray(r.commitment) || r.commitment.length !== s.params.newThreshold) throw new InputError('bad_commitment', 'commitment has the wrong length');
          const D = r.commitment.map((c, i) => parsePoint(c, `commitment ${i}`));
          const lambda = lagrangeAtZero(dealers(s.params).map((d) => BigInt(d.oldId!)), BigInt(m.oldId!));
          const expected = parsePoint(s.params.oldPkg.verificationShares[String(m.oldId)], 'old verification share').multiply(lambda);
          if (!D[0]!.equals(expected)) throw new ProtocolAbort('bad_commitment', [from], `party ${from}: dealt secret is not its weighted old share`);
          return { commitment: r.commitment };
        });
      }
      if (msg.to !== s.params.me || me.newId === undefined) throw new ProtocolAbort('bad_message', [from], 'share for a party that does not receive');
      const { share } = readPayload<{ share: string }>('reshare/r1-share', msg);
      return { share: secretScalar(blame(from, 'bad_share', () => parseScalar(share, 'share', true))) };
    }
    if (msg.to !== 'all' || m.newId === undefined) throw new ProtocolAbort('bad_message', [from], 'round 2 is a receivers\' broadcast');
    const r = readPayload<{ echo: Record<string, string>; confirm: string }>('reshare/r2', msg);
    // `from` received another commitment from a dealer than we did: the dealer equivocated or `from` lies.
    checkEcho(echoDigests(s), r.echo, from, s.params.me, 'commitments');
    if (me.newId !== undefined && r.confirm !== s.confirm) throw new ProtocolAbort('confirmation_mismatch', [from], `party ${from} confirmed another package`);
    return r;
  },

  store(s, round, msg, parsed) {
    const k = String(msg.from);
    if (round === 1) {
      const p = parsed as { commitment?: string[]; share?: SecretBytes };
      if (p.commitment) return { ...s, commitments: { ...s.commitments, [k]: p.commitment } };
      return { ...s, shares: { ...s.shares, [k]: p.share! } };
    }
    return { ...s, echoes: { ...s.echoes, [k]: parsed as { echo: Record<string, string>; confirm: string } } };
  },

  ready(s, round) {
    const me = member(s.params, s.params.me)!;
    if (round === 1) {
      const ds = dealers(s.params).map((d) => String(d.party));
      return ds.every((d) => s.commitments[d]) && (me.newId === undefined || ds.every((d) => s.shares[d]));
    }
    return receivers(s.params).filter((r) => r.party !== s.params.me).every((r) => s.echoes[String(r.party)]);
  },

  finalize(s, round) {
    const me = member(s.params, s.params.me)!;
    const p = s.params;
    if (round === 1) {
      const t = p.newThreshold;
      const newParties = receivers(p).map((r) => r.newId!).sort((a, b) => a - b);
      const agg = aggregateDealings(dealers(p).map((d) => s.commitments[String(d.party)]!), newParties, t);
      if (agg.groupCommitment[0] !== p.oldPkg.groupKey) throw new ProtocolAbort('group_key_changed', [], 'dealt commitments do not sum to the group key');
      const verificationShares = agg.verificationShares;
      const newPkg: KeyPackage = {
        keyId: p.oldPkg.keyId, epoch: p.newEpoch, threshold: t, parties: newParties, groupKey: p.oldPkg.groupKey,
        verificationShares, groupCommitment: agg.groupCommitment, chainCode: p.oldPkg.chainCode,
      };
      const confirm = taggedHashHex('custody/reshare/confirm/v1', [s.context, JSON.stringify(newPkg)]);
      let newShare: SecretBytes | null = null;
      if (me.newId !== undefined) {
        let x = 0n;
        for (const d of dealers(p)) {
          const share = exposeScalar(s.shares[String(d.party)]!, 'share', true);
          const D = s.commitments[String(d.party)]!.map((c, i) => parsePoint(c, `commitment ${i}`));
          if (!G.multiply(share).equals(evalCommitment(D, BigInt(me.newId)))) throw new ProtocolAbort('bad_share', [d.party], `party ${d.party}: share does not match its commitment`);
          x = Fn.add(x, share);
        }
        if (pointHex(G.multiply(x)) !== verificationShares[String(me.newId)]) throw new ProtocolAbort('inconsistent_share', [], 'new share does not match its verification share');
        newShare = secretScalar(x);
      }
      const next = { ...s, newPkg, confirm, newShare, shares: {} };
      if (me.newId === undefined) {
        // A dealer that leaves only waits for the receivers' confirmations.
        if (receivers(p).length === 0) return { kind: 'done', state: next, result: { kind: 'dealer-only', pkg: newPkg } };
        return { kind: 'next', state: next, out: [] };
      }
      return { kind: 'next', state: next, out: [{ from: p.me, to: 'all', round: 2, payload: encodeBlob('reshare/r2', { echo: echoDigests(s), confirm }) }] };
    }
    // Every receiver confirmed the same package (dealers that leave also check they agree).
    const confirms = new Set(Object.values(s.echoes).map((e) => e.confirm));
    if (me.newId !== undefined) confirms.add(s.confirm);
    if (confirms.size !== 1) throw new ProtocolAbort('confirmation_mismatch', [], 'receivers confirmed different packages');
    if (me.newId === undefined) {
      if (![...confirms][0] || [...confirms][0] !== s.confirm) throw new ProtocolAbort('confirmation_mismatch', [], 'receivers confirmed a package this dealer did not compute');
      return { kind: 'done', state: s, result: { kind: 'dealer-only', pkg: s.newPkg! } };
    }
    const key: KeyShare = { share: new SecretShare(me.newId, exposeScalar(s.newShare!, 'new share')), pkg: s.newPkg! };
    return { kind: 'done', state: { ...s, newShare: null }, result: { kind: 'receiver', key } };
  },
};
