// Pairwise OT setup after DKG and after every reshare (DKLs23 §3, "setup": F_OT base OTs and the
// F_Zero seeds of §3.1). Its result is stored beside the key share and sealed like it.
//
// A run covers every pair of its parties, which may be any two or more members of the key's committee
// (the node checks membership): a node merges each run into its stored setup (mergeOtSetup), so the
// pairs of a member that missed one run are set up later without touching the others. Each pair's
// material carries the id of the run that made it; presigning binds that id into the pair's context.
//
// Per unordered pair {i, j}, i < j, 256 public-key base OTs run from i to j; the 256 OTs of the other
// direction are bootstrapped from them by one KOS extension (OT extension outputs serve as base OTs, as
// in every extension-based setup), which halves the curve work. Rounds (all direct):
//   1. i -> j: A = a·G with a Fischlin proof of knowledge of a (i is the base-OT sender; DKLs19 §5 and
//      DKLs23 §3 need the simulator to extract a straight-line: fischlin.ts); both send a salted
//      commitment to their half of the pair's zero-sharing seed;
//   2. j -> i: 256 base-OT points B (choice bits Δ_j: j's OT-extension key as Alice toward i); both
//      reveal their seed halves;
//   3. i -> j: a KOS extension message from the base keys, with random choice bits Δ_i (i's key as
//      Alice toward j); j's rows give it both keys of 256 OTs toward i. The nonce is i's, but j's rows
//      also carry j's own fresh randomness (its Δ_j and base-OT keys are drawn anew in every run), so
//      a replayed session id gives i nothing it could combine with an earlier run.
// Afterwards every party holds, per peer, both keys of 256 OTs (its role as Bob, the extension
// receiver), Δ and the chosen keys of 256 OTs (its role as Alice), and the zero-sharing seed.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Fn, exposeScalar, parsePoint, pointHex, secretScalar } from '../math/curve.ts';
import { taggedHashHex } from '../../../core/codec/transcript.ts';
import { InputError, ProtocolAbort, blame } from '../../../core/errors/protocol-errors.ts';
import { checkParties, checkSessionId, readPayload, storeByRound, type Message, type Protocol } from '../round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import { BASE_OT_COUNT, baseOtChoose, baseOtKeys, baseOtSender, joinKeys, splitKeys, unpackPoints } from '../ot/base-ot.ts';
import { kosReceive, kosSend, rowOf, type KosReceiverMessage } from '../ot/kos.ts';
import { noblePrimitives, taggedHashWith, type Primitives } from '../math/primitives.ts';
import { commit, openCommitment } from './hash.ts';
import { proveDlogFischlin, verifyDlogFischlin, type FischlinProof } from './fischlin.ts';

export interface OtSetupParams {
  sessionId: string;
  keyId: string;
  epoch: number;
  /** This run's parties: two or more members of the key's committee; every pair among them is set up. */
  parties: number[];
  me: number;
}

/** Per peer: what this party needs to run the extension in either role with that peer. Secret. */
export interface PeerOt {
  /** As Bob (extension receiver): both keys of the base OTs this party sent, concatenated (base-ot.ts joinKeys). */
  k0: SecretBytes;
  k1: SecretBytes;
  /** As Alice (extension sender): Δ (32 bytes) and the keys it chose, concatenated. */
  delta: SecretBytes;
  kd: SecretBytes;
  /** Pairwise seed of the zero-sharing (DKLs23 §3.1), 32 bytes. */
  zeroSeed: SecretBytes;
  /** The pair setup id: the context of the run that made this material, known to both members of the pair. */
  setupId: string;
}

/** A node's OT material for one key epoch: per peer, from whichever run last set that pair up. */
export interface EcdsaOtSetup {
  keyId: string;
  epoch: number;
  me: number;
  peers: Record<string, PeerOt>;
  /**
   * Peers whose current OT material must not be used again: after any signing abort with a peer, its
   * pair is retired until a new setup of that pair runs (a failed check may have leaked bits of Δ:
   * GHSA-7f6p-phw2-8253).
   */
  retired: number[];
}

interface R1 {
  /** Only from the lower id of the pair. */
  A?: string;
  /** Proof of knowledge of a, Fischlin-transformed (straight-line extractable: fischlin.ts). */
  proof?: FischlinProof;
  seedCommit: string;
}

interface R2 {
  /** Only from the higher id of the pair. */
  B?: string;
  seed: string;
  salt: string;
}

interface R3 {
  ot: KosReceiverMessage;
}

/** A verified round-2 message as stored: the peer's seed half, secret to the pair, held as SecretBytes. */
type StoredR2 = Omit<R2, 'seed'> & { seed: SecretBytes };

export interface OtSetupState {
  params: OtSetupParams;
  context: string;
  /**
   * Per peer, our base-OT sender scalar a (toward higher ids; secret), our seed half (secret until it is
   * revealed to that peer alone in round 2) and the salt of its commitment; zeroed and dropped in round 2.
   */
  mine: Record<string, { a: SecretBytes | null; seed: SecretBytes; salt: string }>;
  r1: Record<string, R1>;
  /** Secret: per lower peer, our choice bits Δ and the keys we received. */
  chosen: Record<string, { delta: SecretBytes; kd: SecretBytes }>;
  r2: Record<string, StoredR2>;
  r3: Record<string, R3>;
  /** Secret: per peer, the finished material. */
  peers: Record<string, PeerOt>;
}

function context(p: OtSetupParams): string {
  return taggedHashHex('custody/ecdsa/ot-setup/context/v1', [p.sessionId, p.keyId, p.epoch, [...p.parties].sort((a, b) => a - b).join(',')]);
}

/** Round 3 carries a KOS message: its matrix grew with kos.ts's EXTRA (v2), its check is v4 (v3). */
export const R3_KIND = 'ecdsa-ot-setup/r3/v3';

const others = (p: OtSetupParams) => p.parties.filter((x) => x !== p.me);
const lower = (p: OtSetupParams) => p.parties.filter((x) => x < p.me);
const reverseCtx = (ctx: string, from: number, to: number) => taggedHashHex('custody/ecdsa/ot-setup/reverse/v1', [ctx, from, to]);
const rowKey = (prims: Primitives, ctx: string, k: number, row: Uint8Array) => taggedHashWith(prims, 'custody/ecdsa/ot-setup/reverse-key/v1', [ctx, k, row]);
const pairCtx = (ctx: string, from: number, to: number) => taggedHashHex('custody/ecdsa/ot-setup/pair/v1', [ctx, from, to]);
/** Placeholder for keys a lower peer's round 3 has not given yet (the run's state only). */
const noKeys = () => new SecretBytes(new Uint8Array(0));

/** The OT setup protocol on the given primitives (math/primitives.ts): the same messages and result from any. */
export function ecdsaOtSetupWith(prims: Primitives): Protocol<OtSetupParams, OtSetupState, EcdsaOtSetup> {
  return {
    name: 'ecdsa-ot-setup/v3',

    start(params, rng) {
      checkSessionId(params.sessionId);
      checkParties(params.parties, params.me);
      if (params.parties.length < 2) throw new InputError('bad_parties', 'at least two parties');
      const ctx = context(params);
      const mine: OtSetupState['mine'] = {};
      const out: Message[] = [];
      for (const j of others(params)) {
        const pc = pairCtx(ctx, params.me, j);
        const seed = new SecretBytes(rng(32));
        const c = commit('zero-seed', pc, [bytesToHex(seed.expose())], rng);
        const r1: R1 = { seedCommit: c.commitment };
        let a: SecretBytes | null = null;
        if (params.me < j) {
          const s = baseOtSender(rng);
          const proof = proveDlogFischlin('ot-sender', pc, params.me, s.a, s.A, rng, prims);
          a = secretScalar(s.a);
          Object.assign(r1, { A: pointHex(s.A), proof });
        }
        mine[String(j)] = { a, seed, salt: c.salt };
        out.push({ from: params.me, to: j, round: 1, payload: encodeBlob('ecdsa-ot-setup/r1', r1) });
      }
      return { state: { params, context: ctx, mine, r1: {}, chosen: {}, r2: {}, r3: {}, peers: {} }, out };
    },

    verify(s, round, msg) {
      const from = msg.from;
      if (!others(s.params).includes(from)) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not in this session`);
      if (msg.to !== s.params.me) throw new ProtocolAbort('bad_message', [from], 'message addressed to another party');
      const pc = pairCtx(s.context, from, s.params.me);
      if (round === 1) {
        const r = readPayload<R1>('ecdsa-ot-setup/r1', msg);
        return blame(from, 'bad_ot', () => {
          if (typeof r.seedCommit !== 'string' || !/^[0-9a-f]{64}$/.test(r.seedCommit)) throw new InputError('bad_commitment', 'seed commitment');
          if (from > s.params.me) return { seedCommit: r.seedCommit } satisfies R1;
          const A = parsePoint(r.A, 'A');
          if (!verifyDlogFischlin('ot-sender', pc, from, A, r.proof, prims)) throw new ProtocolAbort('bad_proof', [from], `party ${from}: proof of knowledge does not verify`);
          const proof = r.proof!;
          return { A: r.A, proof: { R: proof.R, c: proof.c, z: proof.z }, seedCommit: r.seedCommit } satisfies R1;
        });
      }
      if (round === 2) {
        const r = readPayload<R2>('ecdsa-ot-setup/r2', msg);
        return blame(from, 'bad_ot', () => {
          if (from > s.params.me) unpackPoints(r.B, BASE_OT_COUNT, 'B');
          if (typeof r.seed !== 'string' || !openCommitment('zero-seed', pc, [r.seed], r.salt, s.r1[String(from)]!.seedCommit)) throw new ProtocolAbort('bad_reveal', [from], `party ${from}: seed reveal does not match its commitment`);
          // The commitment opened, so r.seed is 64 hex characters (the hash input was exactly this string).
          const seed = new SecretBytes(hexToBytes(r.seed));
          return (from > s.params.me ? { B: r.B!, seed, salt: r.salt } : { seed, salt: r.salt }) satisfies StoredR2;
        });
      }
      if (round === 3) {
        if (from > s.params.me) throw new ProtocolAbort('bad_message', [from], 'round 3 runs from the lower id');
        const r = readPayload<R3>(R3_KIND, msg);
        if (typeof r.ot !== 'object' || r.ot === null) throw new ProtocolAbort('bad_message', [from], `party ${from}: malformed round 3`);
        return { ot: { nonce: r.ot.nonce, u: r.ot.u, check: r.ot.check } } satisfies R3;
      }
      throw new ProtocolAbort('bad_message', [from], `no round ${round}`);
    },

    store: storeByRound,

    ready(s, round) {
      if (round === 3) return lower(s.params).every((p) => s.r3[String(p)]);
      const o = others(s.params).map(String);
      return o.every((p) => (round === 1 ? s.r1[p] : s.r2[p]));
    },

    finalize(s, round, rng) {
      const me = s.params.me;
      if (round === 1) {
        const out: Message[] = [];
        const chosen: OtSetupState['chosen'] = {};
        for (const j of others(s.params)) {
          const m = s.mine[String(j)]!;
          // The seed half leaves explicitly, to j alone (direct messages are end-to-end encrypted).
          const r2: R2 = { seed: bytesToHex(m.seed.expose()), salt: m.salt };
          if (j < me) {
            // We are the base-OT receiver toward the lower j: our choices are Δ for our role as Alice toward j.
            const delta = rng(32);
            const A = parsePoint(s.r1[String(j)]!.A, 'A');
            const { B, keys } = baseOtChoose(pairCtx(s.context, j, me), j, me, A, delta, rng, prims);
            chosen[String(j)] = { delta: new SecretBytes(delta), kd: joinKeys(keys) };
            r2.B = B;
          }
          out.push({ from: me, to: j, round: 2, payload: encodeBlob('ecdsa-ot-setup/r2', r2) });
        }
        return { kind: 'next', state: { ...s, chosen }, out };
      }
      if (round === 2) {
        const out: Message[] = [];
        const peers: Record<string, PeerOt> = {};
        for (const j of others(s.params)) {
          const m = s.mine[String(j)]!;
          // The halves enter the hash as hex, as they did when they were held as hex.
          const mySeed = bytesToHex(m.seed.expose());
          const theirs = bytesToHex(s.r2[String(j)]!.seed.expose());
          const [lo, hi] = me < j ? [mySeed, theirs] : [theirs, mySeed];
          const zeroSeed = new SecretBytes(taggedHashWith(prims, 'custody/ecdsa/zero-seed/v1', [s.context, Math.min(me, j), Math.max(me, j), lo, hi]));
          const setupId = s.context;
          if (j < me) {
            // k0 and k1 toward a lower peer come from its round-3 extension.
            peers[String(j)] = { k0: noKeys(), k1: noKeys(), delta: s.chosen[String(j)]!.delta, kd: s.chosen[String(j)]!.kd, zeroSeed, setupId };
            continue;
          }
          const Bs = unpackPoints(s.r2[String(j)]!.B, BASE_OT_COUNT, 'B');
          const { k0, k1 } = baseOtKeys(pairCtx(s.context, me, j), me, j, exposeScalar(m.a!, 'a'), Bs, undefined, prims);
          // Bootstrap the other direction: one extension with random choices, the first 256 rows as OTs.
          const rc = reverseCtx(s.context, me, j);
          const ext = kosReceive(rc, k0, k1, rng, prims);
          const delta = ext.r.slice(0, BASE_OT_COUNT / 8);
          const kd = Array.from({ length: BASE_OT_COUNT }, (_, k) => rowKey(prims, rc, k, rowOf(ext.t, k)));
          ext.r.fill(0);
          ext.t.fill(0);
          peers[String(j)] = { k0: joinKeys(k0), k1: joinKeys(k1), delta: new SecretBytes(delta), kd: joinKeys(kd), zeroSeed, setupId };
          out.push({ from: me, to: j, round: 3, payload: encodeBlob(R3_KIND, { ot: ext.msg } satisfies R3) });
        }
        // The sender scalars and both seed halves are spent; Δ and the chosen keys moved into `peers`.
        for (const m of Object.values(s.mine)) {
          m.a?.zeroize();
          m.seed.zeroize();
        }
        for (const m of Object.values(s.r2)) m.seed.zeroize();
        // Round 3 needs nothing of round 2 (its points are used): dropped with the seeds.
        return { kind: 'next', state: { ...s, mine: {}, chosen: {}, r2: {}, peers }, out };
      }
      const peers = { ...s.peers };
      for (const j of lower(s.params)) {
        const p = peers[String(j)]!;
        const rc = reverseCtx(s.context, j, me);
        const delta = p.delta.expose();
        const q = blame(j, 'bad_ot_check', () => kosSend(rc, delta, splitKeys(p.kd), s.r3[String(j)]!.ot, prims));
        const k0: Uint8Array[] = [];
        const k1: Uint8Array[] = [];
        const qd = new Uint8Array(BASE_OT_COUNT / 8);
        for (let k = 0; k < BASE_OT_COUNT; k++) {
          const row = rowOf(q, k);
          for (let b = 0; b < qd.length; b++) qd[b] = row[b]! ^ delta[b]!;
          k0.push(rowKey(prims, rc, k, row));
          k1.push(rowKey(prims, rc, k, qd));
        }
        peers[String(j)] = { ...p, k0: joinKeys(k0), k1: joinKeys(k1) };
      }
      const result: EcdsaOtSetup = { keyId: s.params.keyId, epoch: s.params.epoch, me, peers, retired: [] };
      return { kind: 'done', state: { ...s, peers: {} }, result };
    },
  };
}

/** The OT setup on the reference primitives (tests, tools); the node passes its native ones. */
export const ecdsaOtSetup = ecdsaOtSetupWith(noblePrimitives);

/** Marks pairs as unusable after an abort; signing refuses them until a new setup of those pairs runs. */
export function retireOtPairs(setup: EcdsaOtSetup, peers: number[]): EcdsaOtSetup {
  return { ...setup, retired: [...new Set([...setup.retired, ...peers.filter((p) => p !== setup.me)])].sort((a, b) => a - b) };
}

/**
 * A run's pairs merged into the stored setup of the same key epoch: the run's peers get its material
 * and lose their retirement; every other peer keeps what it had. A setup of another epoch is replaced.
 */
export function mergeOtSetup(stored: EcdsaOtSetup | undefined, run: EcdsaOtSetup): EcdsaOtSetup {
  if (stored && (stored.keyId !== run.keyId || stored.me !== run.me)) throw new InputError('bad_ot_setup', 'OT setup is for another key or party');
  if (!stored || stored.epoch !== run.epoch) return { ...run, peers: { ...run.peers }, retired: [...run.retired] };
  const fresh = new Set(Object.keys(run.peers).map(Number));
  return { ...stored, peers: { ...stored.peers, ...run.peers }, retired: [...new Set([...stored.retired.filter((p) => !fresh.has(p)), ...run.retired])].sort((a, b) => a - b) };
}

/**
 * Sealed-storage form (secret: store it encrypted like the key share): the keys, Δ and seeds are secret
 * sections of the blob. Version 2 (per-pair setup ids) is written; decodeOtSetup also reads version 1
 * (one setup id for the whole committee, which becomes every pair's id), with secrets as sections or,
 * older still, as hex strings.
 */
export const OT_SETUP_BLOB = 'ecdsa-ot-setup/v2';
const OT_SETUP_BLOB_V1 = 'ecdsa-ot-setup';

export function encodeOtSetup(s: EcdsaOtSetup): Uint8Array {
  return encodeBlob(OT_SETUP_BLOB, { keyId: s.keyId, epoch: s.epoch, me: s.me, peers: s.peers, retired: s.retired }, { secrets: true });
}

const KEYS_BYTES = BASE_OT_COUNT * 32;
const PEER_FIELDS: [Exclude<keyof PeerOt, 'setupId'>, number][] = [['k0', KEYS_BYTES], ['k1', KEYS_BYTES], ['delta', BASE_OT_COUNT / 8], ['kd', KEYS_BYTES], ['zeroSeed', 32]];
const SETUP_ID = /^[0-9a-f]{64}$/;

/** A stored secret field: SecretBytes, or hex in a setup stored before secrets had their own sections. */
function storedSecret(v: unknown, size: number, what: string): SecretBytes {
  let out: SecretBytes;
  if (v instanceof SecretBytes) out = v;
  else if (typeof v === 'string' && /^([0-9a-f]{2})*$/.test(v)) out = new SecretBytes(hexToBytes(v));
  else throw new InputError('bad_encoding', `OT setup: ${what} is malformed`);
  if (out.length !== size) throw new InputError('bad_encoding', `OT setup: ${what} has the wrong length`);
  return out;
}

/** Version 2, or version 1 whose one setup id every pair takes. */
function readStoredSetup(bytes: Uint8Array): { s: Record<string, unknown>; legacyId?: string } {
  try {
    return { s: decodeBlob<Record<string, unknown>>(OT_SETUP_BLOB, bytes, { secrets: true }) };
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    const s = decodeBlob<Record<string, unknown>>(OT_SETUP_BLOB_V1, bytes, { secrets: true });
    if (typeof s?.setupId !== 'string' || !SETUP_ID.test(s.setupId)) throw new InputError('bad_encoding', 'OT setup: its setup id is malformed');
    return { s, legacyId: s.setupId };
  }
}

export function decodeOtSetup(bytes: Uint8Array): EcdsaOtSetup {
  const { s, legacyId } = readStoredSetup(bytes);
  if (!s || typeof s.peers !== 'object' || s.peers === null || !Array.isArray(s.retired) || typeof s.keyId !== 'string' || typeof s.epoch !== 'number' || typeof s.me !== 'number') {
    throw new InputError('bad_encoding', 'not an OT setup');
  }
  const peers: Record<string, PeerOt> = {};
  for (const [j, p] of Object.entries(s.peers as Record<string, unknown>)) {
    if (typeof p !== 'object' || p === null) throw new InputError('bad_encoding', `OT setup: material for party ${j} is malformed`);
    const raw = p as Record<string, unknown>;
    const setupId = legacyId ?? raw.setupId;
    if (typeof setupId !== 'string' || !SETUP_ID.test(setupId)) throw new InputError('bad_encoding', `OT setup: the pair setup id of party ${j} is malformed`);
    const fields = Object.fromEntries(PEER_FIELDS.map(([f, size]) => [f, storedSecret(raw[f], size, `${f} of party ${j}`)]));
    peers[j] = { ...fields, setupId } as unknown as PeerOt;
  }
  const retired = (s.retired as unknown[]).filter((p): p is number => Number.isInteger(p));
  return { keyId: s.keyId, epoch: s.epoch, me: s.me, peers, retired };
}

/** This pair's zero-share for a run: the seed enters the hash as its hex, as it did when it was stored as hex. */
export const scalarOfSeed = (seed: SecretBytes, ctx: string): bigint => Fn.create(BigInt('0x' + taggedHashHex('custody/ecdsa/zero-share/v1', [bytesToHex(seed.expose()), ctx])));
