// DKLs23 signing, online phase (ePrint 2023/765, Protocol 3.6, round 3 and output), with Groth and
// Shoup's re-randomized presignatures ("On the security of ECDSA with additive key derivation and
// presignatures", EUROCRYPT 2022; docs/protocols/pools.md). With the presignature's R = k·G, u_i (share
// of k·φ), v_i (share of sk·φ) and φ_i, every signer computes the public scalar
//   δ = H("custody/ecdsa/rerandomize/v2", session id ‖ R ‖ H(m) ‖ sorted signers ‖ public key)
// and broadcasts u_i' = u_i + δ·φ_i and w_i = H(m)·φ_i + r'·v_i with R' = R + δ·G, r' = x(R') mod n;
// then s = Σw / Σu' = (H(m) + r'·sk) / (k + δ): a signature with nonce k + δ, whose R' depends on the
// message. It is verified under the public key before release, normalised to low s, and returned with
// its recovery id. Every ECDSA signature goes through this one path, pooled or not.
//
// Identifiable abort: presigning left every signer with the images U_j = u_j·G, V_j = v_j·G and
// Φ_j = φ_j·G of every signer's shares, received end-to-end encrypted. Each online message echoes them
// as a digest per signer (a signer that sent different images to different peers is caught). Only
// signers see the images: with Φ = Σ Φ_j and the broadcast Σ u_j' = (k + δ)·φ they give (k + δ)⁻¹·G,
// which the coordinator, seeing the broadcasts (u_j', w_j and digests), cannot compute.
// When the combined signature does not verify, each share is checked on its own:
// u_j'·G = U_j + δ·Φ_j and w_j·G = H(m)·Φ_j + r'·V_j; every signer whose share fails is named.
import { Fn, G, ORDER, exposeScalar, parsePoint, parseScalar, scalarHex } from '../math/curve.ts';
import { noblePrimitives, type Primitives } from '../math/primitives.ts';
import { hashToScalar } from '../math/hash-to-scalar.ts';
import { InputError, ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import { checkSessionId, readPayload, type Protocol } from '../round/machine.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { checkEcho } from '../round/echo.ts';
import type { Presignature, SignerImages } from './presignature.ts';

export interface OnlineParams {
  /** This signing run's session id (hex): bound into δ, so the same presignature could never give the same R' twice. */
  sessionId: string;
  /** Consumed by `start`: the caller marks its id used durably before the first message leaves. */
  presignature: Presignature;
  /** The 32-byte digest to sign, hex (keccak256 for EVM, the BIP-143 sighash for P2WPKH). */
  digest: string;
}

export interface OnlineState {
  presignatureId: string;
  /** The presigning run's session id, and this online run's (bound into δ). */
  sessionId: string;
  onlineSessionId: string;
  signers: number[];
  me: number;
  publicKey: string;
  /** The presignature's R, and the re-randomizer δ and R' = R + δ·G. */
  R: string;
  delta: string;
  Rprime: string;
  digest: string;
  u: string;
  w: string;
  /** Every signer's public images and, per signer, the digest of its presigning broadcast. */
  images: Record<string, SignerImages>;
  echo: Record<string, string>;
  shares: Record<string, { u: string; w: string }>;
}

interface R1 {
  id: string;
  u: string;
  w: string;
  echo: Record<string, string>;
}

export interface EcdsaSignature {
  r: string;
  s: string;
  /** 0..3: bit 0 the parity of R's y (after low-s normalisation), bit 1 set when R.x >= n. */
  recovery: number;
  /** 64-byte compact r || s, hex. */
  compact: string;
  publicKey: string;
}

const others = (s: OnlineState) => s.signers.filter((p) => p !== s.me);

/** Wire kind of the online broadcast: v3 carries u_i' = u_i + δ·φ_i (v2 carried δ·u_i, under R' = δ·R). */
export const ONLINE_R1_KIND = 'ecdsa-online/r1/v3';

/**
 * The re-randomizer δ, from public values every signer holds: the online session id, R, the digest,
 * the signer set (sorted) and the public key signed for. A hash output is zero with negligible
 * probability; it is refused all the same (R' would be the identity).
 */
export function rerandomizer(sessionId: string, R: string, digest: string, signers: number[], publicKey: string, prims: Primitives = noblePrimitives): bigint {
  const d = hashToScalar('custody/ecdsa/rerandomize/v2', [sessionId, R, digest, [...signers].sort((a, b) => a - b).join(','), publicKey], prims);
  if (d === 0n) throw new ProtocolAbort('degenerate_nonce', [], 'the re-randomizer is zero');
  return d;
}

/** The x-coordinate of a compressed point (hex) made by this signer. */
function compressedX(point: string): bigint {
  if (!/^0[23][0-9a-f]{64}$/.test(point)) throw new ProtocolAbort('bad_state', [], 'R\' is not a compressed point');
  return BigInt('0x' + point.slice(2));
}

/** H(m) as a scalar: the 32-byte digest reduced mod n (ECDSA bits2int for a 256-bit curve). */
export function digestScalar(digest: string): bigint {
  if (!/^[0-9a-f]{64}$/.test(digest)) throw new InputError('bad_digest', 'digest is 32 bytes of hex');
  return Fn.create(BigInt('0x' + digest));
}

/**
 * The online round on the given primitives (math/primitives.ts): δ·G and the verification before
 * release are theirs; the same messages and signature from any.
 */
export function ecdsaOnlineWith(prims: Primitives): Protocol<OnlineParams, OnlineState, EcdsaSignature> {
  return {
    name: 'ecdsa-online/v3',

    start(params) {
      checkSessionId(params.sessionId);
      const m = digestScalar(params.digest);
      const p = params.presignature.take();
      const delta = rerandomizer(params.sessionId, p.R, params.digest, p.signers, p.publicKey, prims);
      // Public point, public scalar: R' = R + δ·G on the provider (δ is never zero).
      const Rp = prims.addBase(p.R, delta);
      // k + δ = 0 (R' the identity) would take a δ that is the negated nonce: refused, nothing sent.
      if (Rp === undefined) throw new ProtocolAbort('degenerate_nonce', [], 'the re-randomized nonce point is the identity');
      const rx = Fn.create(compressedX(Rp));
      const phi = exposeScalar(p.phi, 'phi');
      const v = exposeScalar(p.v, 'v', true);
      const w = Fn.add(Fn.mul(m, phi), Fn.mul(rx, v));
      // u_i' = u_i + δ·φ_i is broadcast (with w_i) in this round: it leaves the secret type here, explicitly.
      const u = scalarHex(Fn.add(exposeScalar(p.u, 'u', true), Fn.mul(delta, phi)));
      // The presignature is spent: its secrets are zeroed (take() already refuses a second use).
      for (const x of [p.u, p.v, p.phi]) x.zeroize();
      const state: OnlineState = {
        presignatureId: p.id, sessionId: p.sessionId, onlineSessionId: params.sessionId, signers: p.signers, me: p.me, publicKey: p.publicKey,
        R: p.R, delta: scalarHex(delta), Rprime: Rp, digest: params.digest, u, w: scalarHex(w), images: p.images, echo: p.echo, shares: {},
      };
      const r1: R1 = { id: p.id, u, w: state.w, echo: p.echo };
      return { state, out: [{ from: p.me, to: 'all', round: 1, payload: encodeBlob(ONLINE_R1_KIND, r1) }] };
    },

    verify(s, round, msg) {
      const from = msg.from;
      if (!others(s).includes(from)) throw new ProtocolAbort('unknown_party', [from], `party ${from} is not in this session`);
      if (round !== 1 || msg.to !== 'all') throw new ProtocolAbort('bad_message', [from], 'the online round is one broadcast');
      const r = readPayload<R1>(ONLINE_R1_KIND, msg);
      // Every signer's presignature carries the same id (it hashes the context and R).
      if (r.id !== s.presignatureId) throw new ProtocolAbort('wrong_session', [from], `party ${from} signs with another presignature`);
      // `from` holds other images of some signer j than we do: j sent different ones in presigning, or `from` lies.
      checkEcho(s.echo, r.echo, from, s.me, 'presigning images');
      try {
        parseScalar(r.u, 'u', true);
        parseScalar(r.w, 'w', true);
      } catch {
        throw new ProtocolAbort('bad_message', [from], `party ${from}: malformed signature share`);
      }
      return { u: r.u, w: r.w };
    },

    store(s, _round, msg, parsed) {
      return { ...s, shares: { ...s.shares, [String(msg.from)]: parsed as { u: string; w: string } } };
    },

    ready(s) {
      return others(s).every((p) => s.shares[String(p)]);
    },

    finalize(s) {
      let u = parseScalar(s.u, 'u', true);
      let w = parseScalar(s.w, 'w', true);
      for (const j of others(s)) {
        u = Fn.add(u, parseScalar(s.shares[String(j)]!.u, 'u', true));
        w = Fn.add(w, parseScalar(s.shares[String(j)]!.w, 'w', true));
      }
      // R' is this signer's own compressed encoding from start: x and the parity of y read off it.
      const Rx = compressedX(s.Rprime);
      const r = Fn.create(Rx);
      if (u === 0n || r === 0n) {
        // Σu = 0 can only come from a wrong share (or a negligible accident): name whoever fails its images.
        const culprits = r === 0n ? [] : wrongShares(s, r);
        throw new ProtocolAbort('bad_signature_share', culprits, 'degenerate signature');
      }
      let sig = Fn.div(w, u);
      let odd = s.Rprime.startsWith('03') ? 1n : 0n;
      if (sig > ORDER >> 1n) {
        sig = Fn.neg(sig);
        odd ^= 1n;
      }
      const recovery = Number(odd) | (Rx >= ORDER ? 2 : 0);
      const compact = scalarHex(r) + scalarHex(sig);
      // Released only if it verifies: a signer that sent a wrong (u, w) cannot make us output garbage.
      if (sig === 0n || !prims.verifyEcdsa(r, sig, digestScalar(s.digest), s.publicKey)) {
        const culprits = wrongShares(s, r);
        if (culprits.length) throw new ProtocolAbort('bad_signature_share', culprits, `signature shares of ${culprits.join(', ')} do not match their presigning images`);
        // Every share matches its image, so the images themselves do not add up (a deviation in
        // presigning that its checks cannot attribute); nothing is released.
        throw new ProtocolAbort('bad_presignature', [], 'the combined signature does not verify');
      }
      return { kind: 'done', state: { ...s, u: '', w: '' }, result: { r: scalarHex(r), s: scalarHex(sig), recovery, compact, publicKey: s.publicKey } };
    },
  };
}

/** The online round on the reference primitives (tests, tools); the node passes its native ones. */
export const ecdsaOnline = ecdsaOnlineWith(noblePrimitives);

/** The signers whose online share fails u_j'·G = U_j + δ·Φ_j or w_j·G = H(m)·Φ_j + r'·V_j (public values only). */
function wrongShares(s: OnlineState, rx: bigint): number[] {
  const m = digestScalar(s.digest);
  const delta = parseScalar(s.delta, 'delta');
  const out: number[] = [];
  for (const j of others(s)) {
    const sh = s.shares[String(j)]!;
    const im = s.images[String(j)]!;
    const u = parseScalar(sh.u, 'u', true);
    const w = parseScalar(sh.w, 'w', true);
    const uOk = G.multiplyUnsafe(u).equals(parsePoint(im.U, 'U').add(parsePoint(im.Phi, 'Phi').multiplyUnsafe(delta)));
    const wOk = G.multiplyUnsafe(w).equals(parsePoint(im.Phi, 'Phi').multiplyUnsafe(m).add(parsePoint(im.V, 'V').multiplyUnsafe(rx)));
    if (!uOk || !wOk) out.push(j);
  }
  return out;
}
