// DKLs23 signing, message-independent part (ePrint 2023/765, Protocol 3.6, rounds 1-2 and the checks of
// round 3): the result is a presignature, consumed once by the online phase (online.ts).
//
// Every signer i holds sk_i = λ_i·x_i + ζ_i (Lagrange-weighted Shamir share of the possibly derived key,
// plus a zero-share from the pairwise seeds, §3.1) and draws an instance key r_i and a mask φ_i.
//   round 1 (direct, to each j): a salted commitment to R_i = r_i·G; as Bob toward j, the OT-extension
//          message that fixes a random χ_ij (rvole.ts).
//   round 2 (direct, to each j): as Alice toward j, the multiplication message for inputs (r_i, sk_i)
//          with shares c; Γ^u = c_u·G and Γ^v = c_v·G; the opening of R_i; pk_i = sk_i·G; ψ_ij = φ_i − χ_ij.
//   round 3 (direct, to each j, the same content): as Bob, d from each j; checks d_u·G = χ·R_j − Γ^u
//          and d_v·G = χ·pk_j − Γ^v (culprit j); shares u_i of r·φ and v_i of sk·φ. Sends an echo of
//          every R_j and pk_j as received (round/echo.ts), so a party that sent different R_j or pk_j to
//          different peers is caught, and the images U_i = u_i·G, V_i = v_i·G, Φ_i = φ_i·G that let every
//          signer check each online share (online.ts). Direct messages are end-to-end encrypted: the
//          coordinator never sees the images (Φ with the public Σu would give it k⁻¹·G); the signers do.
//   finish: the echoes agree; Σ pk_j = Y; R = Σ R_j.
import { Fn, Point, exposeScalar, lagrangeAtZero, parseScalar, pointHex, randomScalar, scalarHex, secretScalar, type Point as P } from '../math/curve.ts';
import { taggedHashHex } from '../../../core/codec/transcript.ts';
import { hashToScalar } from '../math/hash-to-scalar.ts';
import { noblePrimitives, type Primitives } from '../math/primitives.ts';
import { InputError, ProtocolAbort, blame } from '../../../core/errors/protocol-errors.ts';
import { checkParties, checkSessionId, readPayload, storeByRound, type Message, type Protocol } from '../round/machine.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import type { SecretBytes } from '../../../core/codec/secret.ts';
import { checkEcho, echoDigest } from '../round/echo.ts';
import { deriveKeyShare } from '../derive/bip32.ts';
import { SecretShare, type KeyShareParam } from '../keys/key-package.ts';
import { packPoints, splitKeys, unpackPoints } from '../ot/base-ot.ts';
import type { KosReceiverMessage } from '../ot/kos.ts';
import { commit, openCommitment } from './hash.ts';
import { scalarOfSeed, type EcdsaOtSetup } from './ot-setup.ts';
import { rvoleAlice, rvoleBobFinish, rvoleBobStart, type AliceMessage, type BobState } from './rvole.ts';
import { Presignature, type SignerImages } from './presignature.ts';

export interface PresignParams {
  sessionId: string;
  signers: number[];
  me: number;
  /** The stored key share (untweaked). */
  key: KeyShareParam;
  /** Non-hardened derivation path applied before signing. */
  path: number[];
  /** This party's OT setup for the key epoch: material with every other signer. */
  ot: EcdsaOtSetup;
}

interface R1 {
  commitR: string;
  ot: KosReceiverMessage;
}

interface R2 {
  R: string;
  salt: string;
  pk: string;
  gu: string;
  gv: string;
  psi: string;
  mult: AliceMessage;
}

/** A verified round-2 message as stored: its R, pk, Γ^u, Γ^v also uncompressed (`pts`). */
type StoredR2 = R2 & { pts: string };
const r2Points = (m: StoredR2): [P, P, P, P] => unpackPoints(m.pts, 4, 'round 2 points') as [P, P, P, P];

/** Round 3, to each peer directly (same content to each): the echo of round 2's R_i, pk_i and this signer's images. */
interface R3 {
  echo: Record<string, string>;
  U: string;
  V: string;
  Phi: string;
}

export interface PresignState {
  sessionId: string;
  signers: number[];
  me: number;
  context: string;
  /** Public key being signed for (after derivation). */
  publicKey: string;
  /** Secrets: sk_i and r_i, zeroed and dropped after round 2; φ_i, moved into the presignature. */
  sk: SecretBytes | null;
  r: SecretBytes | null;
  phi: SecretBytes | null;
  /** Opening of the commitment to R_i, sent with R_i in round 2 (neither is secret). */
  salt: string;
  /** Our public R_i and pk_i (computed once). */
  Ri: string;
  pki: string;
  /** Per peer, as Alice: the OT setup's extension sender material (secret, not this run's: never zeroed here), dropped after round 1. */
  alice: Record<string, { delta: SecretBytes; kd: SecretBytes }>;
  /** Per peer, the setup id of the pair's OT material (public), for the pair's context. */
  pairIds: Record<string, string>;
  /** Per peer, as Bob: extension state (secret), zeroed and dropped after use. */
  bob: Record<string, BobState>;
  /** Per peer, as Alice: our multiplication shares c_u, c_v (secret), zeroed and dropped after use. */
  c: Record<string, [SecretBytes, SecretBytes]>;
  /** Secret shares u_i, v_i, set in round 2's finish and moved into the presignature. */
  u: SecretBytes | null;
  v: SecretBytes | null;
  r1: Record<string, R1>;
  r2: Record<string, StoredR2>;
  /** Our round-3 message, and the peers'. */
  mine3?: R3;
  r3: Record<string, R3>;
}

// Wire kinds, versioned with the protocol: v2 carries the larger KOS matrix (kos.ts), Alice's salt in
// round 2 (rvole.ts) and round 3 as direct messages; round 1 v3 carries the KOS check v4 (kos.ts); v4 of
// round 1 and v3 of rounds 2 and 3 run under context v2 (per-pair setup ids), so a peer on the old
// contexts fails on the message kind, not on a commitment that looks forged.
export const R1_KIND = 'ecdsa-presign/r1/v4';
export const R2_KIND = 'ecdsa-presign/r2/v3';
export const R3_KIND = 'ecdsa-presign/r3/v3';

const others = (s: { signers: number[]; me: number }) => s.signers.filter((p) => p !== s.me);
/**
 * The context of the pair (alice, bob) in a run: the run's context and the setup id of the pair's OT
 * material, which both members hold (a node-wide setup id would differ between signers once pairs are
 * set up by different runs).
 */
export const pairContext = (ctx: string, alice: number, bob: number, pairSetupId: string): string => taggedHashHex('custody/ecdsa/pair/v2', [ctx, alice, bob, pairSetupId]);

/** Digest of what party `from` sent every peer in round 2 (R_from, pk_from), for the round-3 echo. */
const r2Digest = (ctx: string, from: number, R: string, pk: string, prims: Primitives): string => echoDigest('custody/ecdsa/presign/echo-r2/v1', ctx, from, [R, pk], prims);
/** Digest of a round-3 message (U, V, Φ), echoed in the online round. */
export const r3Digest = (ctx: string, from: number, m: { U: string; V: string; Phi: string }, prims: Primitives = noblePrimitives): string =>
  echoDigest('custody/ecdsa/presign/echo-r3/v1', ctx, from, [m.U, m.V, m.Phi], prims);

function r2Echo(s: PresignState, prims: Primitives): Record<string, string> {
  const echo: Record<string, string> = { [s.me]: r2Digest(s.context, s.me, s.Ri, s.pki, prims) };
  for (const j of others(s)) echo[String(j)] = r2Digest(s.context, j, s.r2[String(j)]!.R, s.r2[String(j)]!.pk, prims);
  return echo;
}

export function presignContext(p: PresignParams, publicKey: string): string {
  return context(p, publicKey);
}

/** What every signer of the run knows alike; each pair's setup id enters that pair's context (pairContext). */
function context(p: PresignParams, publicKey: string): string {
  return taggedHashHex('custody/ecdsa/presign/context/v2', [p.sessionId, p.key.pkg.keyId, p.key.pkg.epoch, publicKey, [...p.signers].sort((a, b) => a - b).join(','), p.path.join('/')]);
}

export function checkPresignParams(p: PresignParams): void {
  checkSessionId(p.sessionId);
  checkParties(p.signers, p.me);
  const pkg = p.key.pkg;
  if (p.key.id !== p.me) throw new InputError('bad_key', 'key share belongs to another party');
  if (p.signers.some((x) => !pkg.parties.includes(x))) throw new InputError('bad_parties', 'a signer is not in the key committee');
  if (p.signers.length < pkg.threshold) throw new InputError('bad_parties', `at least ${pkg.threshold} signers`);
  const ot = p.ot;
  if (ot.keyId !== pkg.keyId || ot.epoch !== pkg.epoch || ot.me !== p.me) throw new InputError('bad_ot_setup', 'OT setup is for another key, epoch or party');
  for (const j of p.signers) {
    if (j === p.me) continue;
    if (ot.retired.includes(j)) throw new InputError('ot_retired', `OT material with party ${j} was retired after an abort; run a new OT setup`);
    if (!ot.peers[String(j)]) throw new InputError('bad_ot_setup', `no OT material for party ${j}`);
  }
}

/** Presigning on the given primitives (math/primitives.ts): the same messages and presignature from any. */
export function ecdsaPresignWith(prims: Primitives): Protocol<PresignParams, PresignState, Presignature> {
  return {
    name: 'ecdsa-presign/v4',

    start(params, rng) {
      checkPresignParams(params);
      const key = deriveKeyShare({ share: new SecretShare(params.key.id, exposeScalar(params.key.share, 'share')), pkg: params.key.pkg }, params.path);
      const publicKey = key.pkg.groupKey;
      const ctx = context(params, publicKey);
      const me = params.me;
      const lambda = lagrangeAtZero(params.signers.map(BigInt), BigInt(me));
      let sk = Fn.mul(lambda, key.share.scalar());
      for (const j of others(params)) {
        const z = scalarOfSeed(params.ot.peers[String(j)]!.zeroSeed, ctx);
        sk = me < j ? Fn.add(sk, z) : Fn.sub(sk, z);
      }
      const r = randomScalar(rng);
      const phi = randomScalar(rng);
      const R = prims.mulBase(r);
      const com = commit('instance-key', ctx, [me, pointHex(R)], rng);
      const out: Message[] = [];
      const bob: PresignState['bob'] = {};
      const alice: PresignState['alice'] = {};
      const pairIds: PresignState['pairIds'] = {};
      for (const j of others(params)) {
        const peer = params.ot.peers[String(j)]!;
        const b = rvoleBobStart(pairContext(ctx, j, me, peer.setupId), splitKeys(peer.k0), splitKeys(peer.k1), rng, prims);
        bob[String(j)] = b.state;
        alice[String(j)] = { delta: peer.delta, kd: peer.kd };
        pairIds[String(j)] = peer.setupId;
        out.push({ from: me, to: j, round: 1, payload: encodeBlob(R1_KIND, { commitR: com.commitment, ot: b.msg } satisfies R1) });
      }
      const state: PresignState = {
        sessionId: params.sessionId, signers: [...params.signers].sort((a, b) => a - b), me, context: ctx, publicKey,
        sk: secretScalar(sk), r: secretScalar(r), phi: secretScalar(phi), salt: com.salt, Ri: pointHex(R), pki: pointHex(prims.mulBase(sk)), alice, pairIds, bob, c: {}, u: null, v: null, r1: {}, r2: {}, r3: {},
      };
      return { state, out };
    },

    verify(s, round, msg) {
      const from = msg.from;
      if (!others(s).includes(from)) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not in this session`);
      if (round === 3) {
        // Direct, so that the images travel end-to-end encrypted: the coordinator must not see Φ_i.
        if (msg.to !== s.me) throw new ProtocolAbort('bad_message', [from], 'round 3 is sent to each signer directly');
        const r = readPayload<R3>(R3_KIND, msg);
        // `from` saw another R_j or pk_j than we did: j equivocated or `from` lies (round/echo.ts names both).
        checkEcho(r2Echo(s, prims), r.echo, from, s.me, 'R_i or pk_i');
        return blame(from, 'bad_message', () => {
          prims.point(r.U, 'U');
          prims.point(r.V, 'V');
          prims.point(r.Phi, 'Phi');
          return { echo: r.echo, U: r.U, V: r.V, Phi: r.Phi } satisfies R3;
        });
      }
      if (msg.to !== s.me) throw new ProtocolAbort('bad_message', [from], 'message addressed to another party');
      if (round === 1) {
        const r = readPayload<R1>(R1_KIND, msg);
        if (typeof r.commitR !== 'string' || !/^[0-9a-f]{64}$/.test(r.commitR) || typeof r.ot !== 'object' || r.ot === null) throw new ProtocolAbort('bad_message', [from], `party ${from}: malformed round 1`);
        return { commitR: r.commitR, ot: { nonce: r.ot.nonce, u: r.ot.u, check: r.ot.check } } satisfies R1;
      }
      if (round === 2) {
        const r = readPayload<R2>(R2_KIND, msg);
        return blame(from, 'bad_message', () => {
          const R = prims.point(r.R, 'R');
          const pk = prims.point(r.pk, 'pk');
          const gu = prims.point(r.gu, 'Gamma u');
          const gv = prims.point(r.gv, 'Gamma v');
          parseScalar(r.psi, 'psi', true);
          if (typeof r.mult !== 'object' || r.mult === null) throw new InputError('bad_message', 'multiplication message');
          if (!openCommitment('instance-key', s.context, [from, pointHex(R)], r.salt, s.r1[String(from)]!.commitR)) {
            throw new ProtocolAbort('bad_commitment', [from], `party ${from}: R does not open its commitment`);
          }
          // The validated points are kept uncompressed too, so later steps read them without a square root.
          const pts = packPoints([R, pk, gu, gv]);
          return { R: r.R, salt: r.salt, pk: r.pk, gu: r.gu, gv: r.gv, psi: r.psi, mult: { salt: r.mult.salt, tau: r.mult.tau, eta: r.mult.eta, mu: r.mult.mu }, pts } satisfies StoredR2;
        });
      }
      throw new ProtocolAbort('bad_message', [from], `no round ${round}`);
    },

    store: storeByRound,

    ready(s, round) {
      return others(s).every((p) => (round === 1 ? s.r1 : round === 2 ? s.r2 : s.r3)[String(p)]);
    },

    finalize(s, round, rng) {
      const me = s.me;
      if (round === 3) return finish(s, prims);
      if (!s.r || !s.sk || !s.phi) throw new ProtocolAbort('bad_state', [], 'presigning secrets already used');
      const r = exposeScalar(s.r, 'r');
      const sk = exposeScalar(s.sk, 'sk');
      if (round === 1) {
        const out: Message[] = [];
        const c: PresignState['c'] = {};
        for (const j of others(s)) {
          const a = s.alice[String(j)];
          if (!a) throw new ProtocolAbort('bad_state', [], 'OT-extension material already used');
          const res = blame(j, 'bad_ot_check', () => rvoleAlice(pairContext(s.context, me, j, s.pairIds[String(j)]!), a.delta.expose(), splitKeys(a.kd), s.r1[String(j)]!.ot, [r, sk], rng, prims));
          c[String(j)] = [secretScalar(res.c[0]), secretScalar(res.c[1])];
          const chi = exposeScalar(s.bob[String(j)]!.chi, 'chi', true);
          const r2: R2 = {
            R: s.Ri, salt: s.salt, pk: s.pki, gu: pointHex(prims.mulBase(res.c[0])), gv: pointHex(prims.mulBase(res.c[1])),
            psi: scalarHex(Fn.sub(exposeScalar(s.phi, 'phi'), chi)), mult: res.msg,
          };
          out.push({ from: me, to: j, round: 2, payload: encodeBlob(R2_KIND, r2) });
        }
        // The extension keys are not needed any more in this run: one use per run.
        return { kind: 'next', state: { ...s, alice: {}, c }, out };
      }
      const phi = exposeScalar(s.phi, 'phi');
      let u = Fn.mul(r, phi);
      let v = Fn.mul(sk, phi);
      for (const j of others(s)) {
        const m = s.r2[String(j)]!;
        const bob = s.bob[String(j)];
        if (!bob) throw new ProtocolAbort('bad_state', [], 'OT-extension state already used');
        const pc = pairContext(s.context, j, me, s.pairIds[String(j)]!);
        const d = blame(j, 'bad_multiplication', () => rvoleBobFinish(pc, bob, m.mult, prims));
        const chi = exposeScalar(bob.chi, 'chi', true);
        const [Rj, pkj, gu, gv] = r2Points(m);
        // Both DKLs23 checks at once, under a random combination ρ: (d_u + ρ·d_v)·G + Γ^u + ρ·Γ^v = χ·(R_j + ρ·pk_j).
        // ρ has 128 bits (soundness 2^-128, the curve's level), which halves the two products by ρ.
        const rho = hashToScalar('custody/ecdsa/gamma-check/v1', [pc, m.R, m.pk, m.gu, m.gv], prims) >> 128n;
        const lhs = prims.mulBase(Fn.add(d[0], Fn.mul(rho, d[1]))).add(gu).add(prims.mulPublic(gv, rho));
        const combined = Rj.add(prims.mulPublic(pkj, rho));
        if (chi === 0n || combined.is0() || !lhs.equals(prims.times(combined, 1)(chi))) throw new ProtocolAbort('bad_multiplication', [j], `party ${j}: multiplication shares do not match R and pk`);
        const [cu, cv] = s.c[String(j)]!.map((x) => exposeScalar(x, 'c', true)) as [bigint, bigint];
        const psi = parseScalar(m.psi, 'psi', true);
        u = Fn.add(u, Fn.add(Fn.add(cu, Fn.mul(r, psi)), d[0]));
        v = Fn.add(v, Fn.add(Fn.add(cv, Fn.mul(sk, psi)), d[1]));
      }
      // u_i or v_i = 0 happens with negligible probability; their images would be the identity.
      if (u === 0n || v === 0n) throw new ProtocolAbort('degenerate_nonce', [], 'a zero signing share');
      // This run's multiplication secrets, r_i and sk_i are spent: zeroed, so no copy of this state reuses them.
      for (const b of Object.values(s.bob)) for (const x of [b.r, b.t, b.chi]) x.zeroize();
      for (const pair of Object.values(s.c)) for (const x of pair) x.zeroize();
      s.r.zeroize();
      s.sk.zeroize();
      const r2done: PresignState = { ...s, sk: null, r: null, salt: '', bob: {}, c: {}, u: secretScalar(u), v: secretScalar(v) };
      const mine3: R3 = { echo: r2Echo(s, prims), U: pointHex(prims.mulBase(u)), V: pointHex(prims.mulBase(v)), Phi: pointHex(prims.mulBase(phi)) };
      // The same bytes to every peer (the online echo checks they were), never a clear broadcast.
      const payload = encodeBlob(R3_KIND, mine3);
      return { kind: 'next', state: { ...r2done, mine3 }, out: others(s).map((j) => ({ from: me, to: j, round: 3, payload })) };
    },
  };
}

/** Presigning on the reference primitives (tests, tools); the node passes its native ones. */
export const ecdsaPresign = ecdsaPresignWith(noblePrimitives);

/** After the echoes agreed: Σ pk_j = Y, R = Σ R_j, and the presignature with every signer's images. */
function finish(s: PresignState, prims: Primitives): { kind: 'done'; state: PresignState; result: Presignature } {
  let Rsum: P = prims.point(s.Ri, 'R');
  let pkSum: P = prims.point(s.pki, 'pk');
  const mine3 = s.mine3!;
  const images: Record<string, SignerImages> = { [s.me]: { U: mine3.U, V: mine3.V, Phi: mine3.Phi } };
  const echo: Record<string, string> = { [s.me]: r3Digest(s.context, s.me, mine3, prims) };
  for (const j of others(s)) {
    const m = s.r2[String(j)]!;
    const [Rj, pkj] = r2Points(m);
    Rsum = Rsum.add(Rj);
    pkSum = pkSum.add(pkj);
    const m3 = s.r3[String(j)]!;
    images[String(j)] = { U: m3.U, V: m3.V, Phi: m3.Phi };
    echo[String(j)] = r3Digest(s.context, j, m3, prims);
  }
  // Checked after the echo, so that an equivocated pk_j is caught with culprits rather than without.
  if (!pkSum.equals(prims.point(s.publicKey, 'public key'))) throw new ProtocolAbort('bad_key_share', [], 'the signers\' key shares do not add up to the public key');
  if (Rsum.is0() || Rsum.equals(Point.ZERO)) throw new ProtocolAbort('degenerate_nonce', [], 'R is the identity');
  const id = taggedHashHex('custody/ecdsa/presignature-id/v1', [s.context, pointHex(Rsum)]);
  if (!s.u || !s.v || !s.phi) throw new ProtocolAbort('bad_state', [], 'presigning secrets already used');
  // u_i, v_i and φ_i move into the presignature (the one single-use holder); the state drops them.
  const presig = new Presignature({
    id, sessionId: s.sessionId, context: s.context, signers: s.signers, me: s.me, publicKey: s.publicKey, R: pointHex(Rsum), u: s.u, v: s.v, phi: s.phi, images, echo,
  });
  return { kind: 'done', state: { ...s, phi: null, u: null, v: null, pki: '' }, result: presig };
}

