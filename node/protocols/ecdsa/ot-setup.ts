// Pairwise OT setup after DKG and after every reshare (DKLs23 §3, "setup": F_OT base OTs and the
// F_Zero seeds of §3.1). Its result is stored beside the key share and sealed like it.
//
// Rounds (all direct, per ordered pair i -> j):
//   1. i sends A_ij = a_ij·G with a proof of knowledge of a_ij (i is the base-OT sender toward j), and a
//      salted commitment to its half of the pair's zero-sharing seed;
//   2. j answers with its 256 base-OT points B (choice bits Δ_ji: the OT-extension key j uses as
//      Alice toward i), and i and j reveal their seed halves.
// After round 2 every party holds, per peer, both base keys of the OTs it sent (for its role as Bob,
// the extension receiver), Δ and the chosen keys of the OTs it received (for its role as Alice), and
// the zero-sharing seed.
import { bytesToHex } from '@noble/hashes/utils.js';
import { Fn, parsePoint, parseScalar, pointHex, scalarHex } from '../math/curve.ts';
import { taggedHashHex } from '../math/transcript.ts';
import { InputError, ProtocolAbort, blame } from '../round/errors.ts';
import { checkParties, checkSessionId, decodeBlob, encodeBlob, readPayload, type Message, type Protocol } from '../round/machine.ts';
import { BASE_OT_COUNT, baseOtChoose, baseOtKeys, baseOtSender, joinKeys, unpackPoints } from '../ot/base-ot.ts';
import { commit, openCommitment, proveDlog, verifyDlog } from './hash.ts';

export interface OtSetupParams {
  sessionId: string;
  keyId: string;
  epoch: number;
  /** The key's committee (every party of the key package). */
  parties: number[];
  me: number;
}

/** Per peer: what this party needs to run the extension in either role with that peer. Secret. */
export interface PeerOt {
  /** As Bob (extension receiver): both keys of the base OTs this party sent, hex concatenated. */
  k0: string;
  k1: string;
  /** As Alice (extension sender): Δ (32 bytes hex) and the keys it chose, hex concatenated. */
  delta: string;
  kd: string;
  /** Pairwise seed of the zero-sharing (DKLs23 §3.1). */
  zeroSeed: string;
}

export interface EcdsaOtSetup {
  keyId: string;
  epoch: number;
  parties: number[];
  me: number;
  /** Binds the stored setup to the run that produced it. */
  setupId: string;
  peers: Record<string, PeerOt>;
  /**
   * Peers whose OT material must not be used again: after any signing abort with a peer, its pair is
   * retired until a new setup runs (a failed check may have leaked bits of Δ: GHSA-7f6p-phw2-8253).
   */
  retired: number[];
}

interface R1 {
  A: string;
  proofR: string;
  proofZ: string;
  seedCommit: string;
}

interface R2 {
  B: string;
  seed: string;
  salt: string;
}

export interface OtSetupState {
  params: OtSetupParams;
  context: string;
  /** Secret: per peer, our base-OT sender scalar a, our seed half and its salt. */
  mine: Record<string, { a: string; seed: string; salt: string }>;
  r1: Record<string, R1>;
  /** Secret: per peer, our choice bits Δ and the keys we received. */
  chosen: Record<string, { delta: string; kd: string }>;
  r2: Record<string, R2>;
}

function context(p: OtSetupParams): string {
  return taggedHashHex('custody/ecdsa/ot-setup/context/v1', [p.sessionId, p.keyId, p.epoch, [...p.parties].sort((a, b) => a - b).join(',')]);
}

const others = (p: OtSetupParams) => p.parties.filter((x) => x !== p.me);
const pairCtx = (ctx: string, from: number, to: number) => taggedHashHex('custody/ecdsa/ot-setup/pair/v1', [ctx, from, to]);

export const ecdsaOtSetup: Protocol<OtSetupParams, OtSetupState, EcdsaOtSetup> = {
  name: 'ecdsa-ot-setup/v1',

  start(params, rng) {
    checkSessionId(params.sessionId);
    checkParties(params.parties, params.me);
    if (params.parties.length < 2) throw new InputError('bad_parties', 'at least two parties');
    const ctx = context(params);
    const mine: OtSetupState['mine'] = {};
    const out: Message[] = [];
    for (const j of others(params)) {
      const pc = pairCtx(ctx, params.me, j);
      const { a, A } = baseOtSender(rng);
      const proof = proveDlog('ot-sender', pc, params.me, a, A, rng);
      const seed = bytesToHex(rng(32));
      const c = commit('zero-seed', pc, [seed], rng);
      mine[String(j)] = { a: scalarHex(a), seed, salt: c.salt };
      const r1: R1 = { A: pointHex(A), proofR: proof.R, proofZ: proof.z, seedCommit: c.commitment };
      out.push({ from: params.me, to: j, round: 1, payload: encodeBlob('ecdsa-ot-setup/r1', r1) });
    }
    return { state: { params, context: ctx, mine, r1: {}, chosen: {}, r2: {} }, out };
  },

  verify(s, round, msg) {
    const from = msg.from;
    if (!others(s.params).includes(from)) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not in this session`);
    if (msg.to !== s.params.me) throw new ProtocolAbort('bad_message', [from], 'message addressed to another party');
    const pc = pairCtx(s.context, from, s.params.me);
    if (round === 1) {
      const r = readPayload<R1>('ecdsa-ot-setup/r1', msg);
      return blame(from, 'bad_ot', () => {
        const A = parsePoint(r.A, 'A');
        const R = parsePoint(r.proofR, 'proof R');
        const z = parseScalar(r.proofZ, 'proof z');
        if (!verifyDlog('ot-sender', pc, from, A, R, z)) throw new ProtocolAbort('bad_proof', [from], `party ${from}: proof of knowledge does not verify`);
        if (typeof r.seedCommit !== 'string' || !/^[0-9a-f]{64}$/.test(r.seedCommit)) throw new InputError('bad_commitment', 'seed commitment');
        return { A: r.A, proofR: r.proofR, proofZ: r.proofZ, seedCommit: r.seedCommit } satisfies R1;
      });
    }
    if (round === 2) {
      const r = readPayload<R2>('ecdsa-ot-setup/r2', msg);
      return blame(from, 'bad_ot', () => {
        unpackPoints(r.B, BASE_OT_COUNT, 'B');
        if (!openCommitment('zero-seed', pc, [r.seed], r.salt, s.r1[String(from)]!.seedCommit)) throw new ProtocolAbort('bad_reveal', [from], `party ${from}: seed reveal does not match its commitment`);
        return { B: r.B, seed: r.seed, salt: r.salt } satisfies R2;
      });
    }
    throw new ProtocolAbort('bad_message', [from], `no round ${round}`);
  },

  store(s, round, msg, parsed) {
    const k = String(msg.from);
    if (round === 1) return { ...s, r1: { ...s.r1, [k]: parsed as R1 } };
    return { ...s, r2: { ...s.r2, [k]: parsed as R2 } };
  },

  ready(s, round) {
    const o = others(s.params).map(String);
    return o.every((p) => (round === 1 ? s.r1[p] : s.r2[p]));
  },

  finalize(s, round, rng) {
    const me = s.params.me;
    if (round === 1) {
      const out: Message[] = [];
      const chosen: OtSetupState['chosen'] = {};
      for (const j of others(s.params)) {
        // We are the base-OT receiver toward j: our choices are Δ for our role as Alice toward j.
        const delta = rng(32);
        const A = parsePoint(s.r1[String(j)]!.A, 'A');
        const { B, keys } = baseOtChoose(pairCtx(s.context, j, me), j, me, A, delta, rng);
        chosen[String(j)] = { delta: bytesToHex(delta), kd: joinKeys(keys) };
        const m = s.mine[String(j)]!;
        const r2: R2 = { B, seed: m.seed, salt: m.salt };
        out.push({ from: me, to: j, round: 2, payload: encodeBlob('ecdsa-ot-setup/r2', r2) });
      }
      return { kind: 'next', state: { ...s, chosen }, out };
    }
    const peers: Record<string, PeerOt> = {};
    for (const j of others(s.params)) {
      const m = s.mine[String(j)]!;
      const a = parseScalar(m.a, 'a');
      const Bs = unpackPoints(s.r2[String(j)]!.B, BASE_OT_COUNT, 'B');
      const { k0, k1 } = baseOtKeys(pairCtx(s.context, me, j), me, j, a, Bs);
      const [lo, hi] = me < j ? [m.seed, s.r2[String(j)]!.seed] : [s.r2[String(j)]!.seed, m.seed];
      const zeroSeed = taggedHashHex('custody/ecdsa/zero-seed/v1', [s.context, Math.min(me, j), Math.max(me, j), lo, hi]);
      peers[String(j)] = { k0: joinKeys(k0), k1: joinKeys(k1), delta: s.chosen[String(j)]!.delta, kd: s.chosen[String(j)]!.kd, zeroSeed };
    }
    const result: EcdsaOtSetup = {
      keyId: s.params.keyId, epoch: s.params.epoch, parties: [...s.params.parties].sort((a, b) => a - b), me, setupId: s.context, peers, retired: [],
    };
    return { kind: 'done', state: { ...s, mine: {}, chosen: {} }, result };
  },
};

/** Marks pairs as unusable after an abort; signing refuses them until a new setup runs. */
export function retireOtPairs(setup: EcdsaOtSetup, peers: number[]): EcdsaOtSetup {
  return { ...setup, retired: [...new Set([...setup.retired, ...peers.filter((p) => p !== setup.me)])].sort((a, b) => a - b) };
}

/** Sealed-storage form (secret: store it encrypted like the key share). */
export function encodeOtSetup(s: EcdsaOtSetup): Uint8Array {
  return encodeBlob('ecdsa-ot-setup', s);
}

export function decodeOtSetup(bytes: Uint8Array): EcdsaOtSetup {
  const s = decodeBlob<EcdsaOtSetup>('ecdsa-ot-setup', bytes);
  if (!s || typeof s.peers !== 'object' || !Array.isArray(s.parties) || !Array.isArray(s.retired)) throw new InputError('bad_encoding', 'not an OT setup');
  return s;
}

export const scalarOfSeed = (seed: string, ctx: string): bigint => Fn.create(BigInt('0x' + taggedHashHex('custody/ecdsa/zero-share/v1', [seed, ctx])));
