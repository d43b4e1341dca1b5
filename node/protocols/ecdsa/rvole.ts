// Two-party random vector OLE over OT extension: DKLs19 Protocol 1 as DKLs23 §3 (F_RVOLE) uses it,
// for ℓ = 2 inputs. Alice inputs a = (a_0, a_1); Bob's input χ is random: he draws XI choice bits β and
// χ = Σ g_k·β_k over a fixed public gadget g (no encoding step is needed because χ is random). They end
// with c (Alice) and d (Bob), c + d = χ·a.
//
// Alice's consistency check (DKLs19 Protocol 1, steps 5-8): she adds a random â to her input, and with
// θ = H(transcript) sends η = θ⊙a + â and μ = H({θ⊙z^A_k + ẑ^A_k}_k). Bob recomputes each row from his
// side and compares μ: an Alice whose rows do not all carry one input is caught.
//
// Alice draws a fresh 32-byte salt per run and keys her row pads, θ and μ with it (sent in her
// message). The rows q_k come from an extension whose nonce Bob draws, so without the salt a Bob that
// replays a session id with the same nonce and complemented choice bits would swap Alice's two pads
// and read α¹ + α² (so 2·sk_i) from τ¹ + τ²; with it, each side's pads carry its own randomness.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Fn, ORDER, equalBytes, parseScalar, randomScalar, scalarHex, secretScalar } from '../math/curve.ts';
import { noblePrimitives, taggedHashWith, type Primitives } from '../math/primitives.ts';
import { hashToScalar } from '../math/hash-to-scalar.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import type { Rng } from '../round/machine.ts';
import { XI, bitOf, kosReceive, kosSend, rowOf, type KosReceiverMessage } from '../ot/kos.ts';
import { hashToScalars } from './hash.ts';

const M64 = (1n << 64n) - 1n;
/** A reduced scalar as 32 big-endian bytes at `off` (hot loop: four 64-bit limbs). */
function writeScalar(v: DataView, off: number, n: bigint): void {
  v.setBigUint64(off, n >> 192n);
  v.setBigUint64(off + 8, (n >> 128n) & M64);
  v.setBigUint64(off + 16, (n >> 64n) & M64);
  v.setBigUint64(off + 24, n & M64);
}
const readScalar = (v: DataView, off: number): bigint =>
  (v.getBigUint64(off) << 192n) | (v.getBigUint64(off + 8) << 128n) | (v.getBigUint64(off + 16) << 64n) | v.getBigUint64(off + 24);

let gadgetCache: bigint[] | undefined;
/** The public gadget vector g (XI scalars, fixed for the protocol version). */
export function gadget(): bigint[] {
  gadgetCache ??= Array.from({ length: XI }, (_, k) => hashToScalar('custody/dkls23/gadget/v1', [k]));
  return gadgetCache;
}

let padInput = new Uint8Array(66);
function pad(prims: Primitives, ctx: Uint8Array, k: number, row: Uint8Array): bigint[] {
  // One scratch input for every row (hashToScalars reads it before returning).
  if (padInput.length !== ctx.length + 2 + row.length) padInput = new Uint8Array(ctx.length + 2 + row.length);
  const inp = padInput;
  inp.set(ctx, 0);
  inp[ctx.length] = k >> 8;
  inp[ctx.length + 1] = k & 0xff;
  inp.set(row, ctx.length + 2);
  return hashToScalars(inp, 4, prims);
}

// The row hash's domain: 16 bytes of a tagged hash of the pair context and Alice's salt (128 bits
// separate runs and pairs), so that domain, row index and row (50 bytes) fit one SHA-256 block.
const padCtx = (prims: Primitives, ctx: string, salt: string) => taggedHashWith(prims, 'custody/dkls23/rvole/pad/v3', [ctx, salt]).subarray(0, 16);

export interface BobState {
  /** Choice bits β and rows t_k. Secret. */
  r: SecretBytes;
  t: SecretBytes;
  /** χ = Σ g_k·β_k, a 32-byte scalar. Secret. */
  chi: SecretBytes;
}

/** Bob, round 1: draws χ and sends the extension message. */
export function rvoleBobStart(ctx: string, k0: Uint8Array[], k1: Uint8Array[], rng: Rng, prims: Primitives = noblePrimitives): { msg: KosReceiverMessage; state: BobState; chi: bigint } {
  const { msg, r, t } = kosReceive(ctx, k0, k1, rng, prims);
  const g = gadget();
  let chi = 0n;
  for (let k = 0; k < XI; k++) if (bitOf(r, k)) chi = Fn.add(chi, g[k]!);
  return { msg, state: { r: new SecretBytes(r), t: new SecretBytes(t), chi: secretScalar(chi) }, chi };
}

export interface AliceMessage {
  /** Alice's fresh 32 bytes (hex) for this run: keys the pads, θ and μ. */
  salt: string;
  /** XI rows of 4 scalars, 32 bytes each, concatenated. */
  tau: Uint8Array;
  eta: [string, string];
  mu: string;
}

function theta(prims: Primitives, ctx: string, salt: string, tau: Uint8Array): [bigint, bigint] {
  // The long τ is hashed once (as its bytes); both challenges derive from its digest.
  const d = taggedHashWith(prims, 'custody/dkls23/rvole/tau/v3', [ctx, salt, tau]);
  return [hashToScalar('custody/dkls23/rvole/theta/v2', [ctx, salt, 0, d], prims), hashToScalar('custody/dkls23/rvole/theta/v2', [ctx, salt, 1, d], prims)];
}

function muOf(prims: Primitives, ctx: string, salt: string, rows: bigint[][]): Uint8Array {
  // The rows as 64 bytes each (two 32-byte big-endian scalars), hashed once.
  const buf = new Uint8Array(rows.length * 64);
  const v = new DataView(buf.buffer);
  rows.forEach((r, k) => {
    writeScalar(v, 64 * k, r[0]!);
    writeScalar(v, 64 * k + 32, r[1]!);
  });
  return taggedHashWith(prims, 'custody/dkls23/rvole/mu/v3', [ctx, salt, buf]);
}

/** Alice, round 2: checks Bob's extension, then returns her shares c and her message. Throws InputError('bad_ot_check'). */
export function rvoleAlice(
  ctx: string, delta: Uint8Array, kd: Uint8Array[], bobMsg: KosReceiverMessage, a: [bigint, bigint], rng: Rng, prims: Primitives = noblePrimitives,
): { msg: AliceMessage; c: [bigint, bigint] } {
  const q = kosSend(ctx, delta, kd, bobMsg, prims);
  const salt = bytesToHex(rng(32));
  const pc = padCtx(prims, ctx, salt);
  const g = gadget();
  const ahat = [randomScalar(rng), randomScalar(rng)];
  const alpha = [a[0], a[1], ahat[0]!, ahat[1]!];
  const qd = new Uint8Array(32);
  // Hot loop: sums are reduced once at the end and sums of two reduced values by one conditional
  // correction. That branch and BigInt itself depend on secret values (docs/protocols/ecdsa.md, "Timing").
  const n = ORDER;
  const p0s: bigint[] = new Array<bigint>(4 * XI);
  let s0 = 0n;
  let s1 = 0n;
  const tauBytes = new Uint8Array(XI * 4 * 32);
  const tv = new DataView(tauBytes.buffer);
  for (let k = 0; k < XI; k++) {
    const qk = rowOf(q, k);
    for (let i = 0; i < 32; i++) qd[i] = qk[i]! ^ delta[i]!;
    const p0 = pad(prims, pc, k, qk);
    const p1 = pad(prims, pc, k, qd);
    for (let j = 0; j < 4; j++) {
      let v = alpha[j]! + p0[j]! - p1[j]!;
      if (v < 0n) v += n;
      else if (v >= n) v -= n;
      writeScalar(tv, (4 * k + j) * 32, v);
      p0s[4 * k + j] = p0[j]!;
    }
    // Alice's row shares are z^A_k = −p0_k: c = Σ g_k·z^A_k = −Σ g_k·p0_k.
    s0 += g[k]! * p0[0]!;
    s1 += g[k]! * p0[1]!;
  }
  const th = theta(prims, ctx, salt, tauBytes);
  const negMod = (x: bigint): bigint => {
    const r = x % n;
    return r === 0n ? 0n : n - r;
  };
  // θ⊙z^A_k + ẑ^A_k = −(θ·p0_k + p̂0_k).
  const rows = Array.from({ length: XI }, (_, k) => [negMod(th[0] * p0s[4 * k]! + p0s[4 * k + 2]!), negMod(th[1] * p0s[4 * k + 1]! + p0s[4 * k + 3]!)]);
  const c0 = negMod(s0);
  const c1 = negMod(s1);
  const eta: [string, string] = [scalarHex(Fn.add(Fn.mul(th[0], a[0]), ahat[0]!)), scalarHex(Fn.add(Fn.mul(th[1], a[1]), ahat[1]!))];
  return { msg: { salt, tau: tauBytes, eta, mu: bytesToHex(muOf(prims, ctx, salt, rows)) }, c: [c0, c1] };
}

/** Bob, round 3: his shares d, after checking Alice's μ. Throws InputError('bad_multiplication'). */
export function rvoleBobFinish(ctx: string, st: BobState, msg: AliceMessage, prims: Primitives = noblePrimitives): [bigint, bigint] {
  if (!(msg.tau instanceof Uint8Array) || msg.tau.length !== XI * 4 * 32) throw new InputError('bad_multiplication', 'tau has the wrong size');
  if (!(st.r instanceof SecretBytes) || !(st.t instanceof SecretBytes)) throw new InputError('bad_state', 'multiplication state is malformed');
  if (typeof msg.salt !== 'string' || !/^[0-9a-f]{64}$/.test(msg.salt)) throw new InputError('bad_multiplication', 'malformed salt');
  if (!Array.isArray(msg.eta) || msg.eta.length !== 2 || typeof msg.mu !== 'string' || !/^[0-9a-f]{64}$/.test(msg.mu)) throw new InputError('bad_multiplication', 'malformed check values');
  const eta = [parseScalar(msg.eta[0], 'eta', true), parseScalar(msg.eta[1], 'eta', true)];
  const r = st.r.expose();
  const t = st.t.expose();
  const pc = padCtx(prims, ctx, msg.salt);
  const g = gadget();
  const tauBytes = msg.tau;
  const th = theta(prims, ctx, msg.salt, tauBytes);
  const tv = new DataView(tauBytes.buffer, tauBytes.byteOffset, tauBytes.byteLength);
  // Every entry is range-checked, whatever Bob's bits: a refusal must not depend on them.
  const tau = Array.from({ length: 4 * XI }, (_, i) => readScalar(tv, 32 * i));
  const n = ORDER;
  if (tau.some((v) => v >= n)) throw new InputError('bad_multiplication', 'tau entry out of range');
  const rows: bigint[][] = [];
  let d0 = 0n;
  let d1 = 0n;
  for (let k = 0; k < XI; k++) {
    const z = pad(prims, pc, k, rowOf(t, k));
    // A branch on Bob's bit: the time of the loop follows the weight of β ("Timing" in the doc).
    const bit = bitOf(r, k);
    if (bit) {
      for (let j = 0; j < 4; j++) {
        const v = z[j]! + tau[4 * k + j]!;
        z[j] = v >= n ? v - n : v;
      }
    }
    // β_k·η − θ⊙z^B_k − ẑ^B_k, reduced once.
    let r0 = ((bit ? eta[0]! : 0n) - th[0] * z[0]! - z[2]!) % n;
    let r1 = ((bit ? eta[1]! : 0n) - th[1] * z[1]! - z[3]!) % n;
    if (r0 < 0n) r0 += n;
    if (r1 < 0n) r1 += n;
    rows.push([r0, r1]);
    d0 += g[k]! * z[0]!;
    d1 += g[k]! * z[1]!;
  }
  d0 %= n;
  d1 %= n;
  if (!equalBytes(muOf(prims, ctx, msg.salt, rows), hexToBytes(msg.mu))) throw new InputError('bad_multiplication', 'multiplication consistency check failed');
  return [d0, d1];
}
