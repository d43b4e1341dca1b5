// Two-party random vector OLE over OT extension: DKLs19 Protocol 1 as DKLs23 §3 (F_RVOLE) uses it,
// for ℓ = 2 inputs. Alice inputs a = (a_0, a_1); Bob's input χ is random: he draws XI choice bits β and
// χ = Σ g_k·β_k over a fixed public gadget g (no encoding step is needed because χ is random). They end
// with c (Alice) and d (Bob), c + d = χ·a.
//
// Alice's consistency check (DKLs19 Protocol 1, steps 5-8): she adds a random â to her input, and with
// θ = H(transcript) sends η = θ⊙a + â and μ = H({θ⊙z^A_k + ẑ^A_k}_k). Bob recomputes each row from his
// side and compares μ: an Alice whose rows do not all carry one input is caught.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Fn, ORDER, equalBytes, parseScalar, randomScalar, scalarHex } from '../math/curve.ts';
import { hashToScalar, taggedHash } from '../math/transcript.ts';
import { InputError } from '../round/errors.ts';
import type { Rng } from '../round/machine.ts';
import { XI, bitOf, kosReceive, kosSend, rowOf, type KosReceiverMessage } from '../ot/kos.ts';
import { hashToScalars } from './hash.ts';

/** Hex of a reduced scalar (hot loops: no re-validation). */
const hx = (n: bigint): string => n.toString(16).padStart(64, '0');

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

function pad(ctx: Uint8Array, k: number, row: Uint8Array): bigint[] {
  const inp = new Uint8Array(ctx.length + 2 + row.length);
  inp.set(ctx, 0);
  inp[ctx.length] = k >> 8;
  inp[ctx.length + 1] = k & 0xff;
  inp.set(row, ctx.length + 2);
  return hashToScalars(inp, 4);
}

const padCtx = (ctx: string) => taggedHash('custody/dkls23/rvole/pad/v1', [ctx]);

export interface BobState {
  /** Choice bits (hex) and rows t_k (hex). Secret. */
  r: string;
  t: string;
  chi: string;
}

/** Bob, round 1: draws χ and sends the extension message. */
export function rvoleBobStart(ctx: string, k0: Uint8Array[], k1: Uint8Array[], rng: Rng): { msg: KosReceiverMessage; state: BobState; chi: bigint } {
  const { msg, r, t } = kosReceive(ctx, k0, k1, rng);
  const g = gadget();
  let chi = 0n;
  for (let k = 0; k < XI; k++) if (bitOf(r, k)) chi = Fn.add(chi, g[k]!);
  return { msg, state: { r: bytesToHex(r), t: bytesToHex(t), chi: scalarHex(chi) }, chi };
}

export interface AliceMessage {
  /** XI rows of 4 scalars, hex concatenated. */
  tau: string;
  eta: [string, string];
  mu: string;
}

function theta(ctx: string, tau: string): [bigint, bigint] {
  // The long τ is hashed once; both challenges derive from its digest.
  const d = taggedHash('custody/dkls23/rvole/tau/v1', [ctx, tau]);
  return [hashToScalar('custody/dkls23/rvole/theta/v1', [ctx, 0, d]), hashToScalar('custody/dkls23/rvole/theta/v1', [ctx, 1, d])];
}

function muOf(ctx: string, rows: bigint[][]): Uint8Array {
  return taggedHash('custody/dkls23/rvole/mu/v1', [ctx, rows.map((r) => hx(r[0]!) + hx(r[1]!)).join('')]);
}

/** Alice, round 2: checks Bob's extension, then returns her shares c and her message. Throws InputError('bad_ot_check'). */
export function rvoleAlice(ctx: string, delta: Uint8Array, kd: Uint8Array[], bobMsg: KosReceiverMessage, a: [bigint, bigint], rng: Rng): { msg: AliceMessage; c: [bigint, bigint] } {
  const q = kosSend(ctx, delta, kd, bobMsg);
  const pc = padCtx(ctx);
  const g = gadget();
  const ahat = [randomScalar(rng), randomScalar(rng)];
  const alpha = [a[0], a[1], ahat[0]!, ahat[1]!];
  const qd = new Uint8Array(32);
  const zA: bigint[][] = [];
  // τ is written as bytes (one conversion to hex at the end instead of one string per entry).
  const tauBytes = new Uint8Array(XI * 4 * 32);
  const tv = new DataView(tauBytes.buffer);
  for (let k = 0; k < XI; k++) {
    const qk = rowOf(q, k);
    for (let i = 0; i < 32; i++) qd[i] = qk[i]! ^ delta[i]!;
    const p0 = pad(pc, k, qk);
    const p1 = pad(pc, k, qd);
    for (let j = 0; j < 4; j++) writeScalar(tv, (4 * k + j) * 32, Fn.sub(Fn.add(alpha[j]!, p0[j]!), p1[j]!));
    zA.push(p0.map((x) => Fn.neg(x)));
  }
  const tau = bytesToHex(tauBytes);
  const th = theta(ctx, tau);
  const rows = zA.map((z) => [Fn.add(Fn.mul(th[0], z[0]!), z[2]!), Fn.add(Fn.mul(th[1], z[1]!), z[3]!)]);
  let c0 = 0n;
  let c1 = 0n;
  for (let k = 0; k < XI; k++) {
    c0 = Fn.add(c0, Fn.mul(g[k]!, zA[k]![0]!));
    c1 = Fn.add(c1, Fn.mul(g[k]!, zA[k]![1]!));
  }
  const eta: [string, string] = [scalarHex(Fn.add(Fn.mul(th[0], a[0]), ahat[0]!)), scalarHex(Fn.add(Fn.mul(th[1], a[1]), ahat[1]!))];
  return { msg: { tau, eta, mu: bytesToHex(muOf(ctx, rows)) }, c: [c0, c1] };
}

/** Bob, round 3: his shares d, after checking Alice's μ. Throws InputError('bad_multiplication'). */
export function rvoleBobFinish(ctx: string, st: BobState, msg: AliceMessage): [bigint, bigint] {
  if (typeof msg.tau !== 'string' || msg.tau.length !== XI * 4 * 64 || !/^[0-9a-f]*$/.test(msg.tau)) throw new InputError('bad_multiplication', 'tau has the wrong size');
  if (!Array.isArray(msg.eta) || msg.eta.length !== 2 || typeof msg.mu !== 'string' || !/^[0-9a-f]{64}$/.test(msg.mu)) throw new InputError('bad_multiplication', 'malformed check values');
  const eta = [parseScalar(msg.eta[0], 'eta', true), parseScalar(msg.eta[1], 'eta', true)];
  const r = hexToBytes(st.r);
  const t = hexToBytes(st.t);
  const pc = padCtx(ctx);
  const g = gadget();
  const th = theta(ctx, msg.tau);
  const tv = new DataView(hexToBytes(msg.tau).buffer);
  const rows: bigint[][] = [];
  let d0 = 0n;
  let d1 = 0n;
  for (let k = 0; k < XI; k++) {
    const z = pad(pc, k, rowOf(t, k));
    if (bitOf(r, k)) {
      for (let j = 0; j < 4; j++) {
        const v = readScalar(tv, (4 * k + j) * 32);
        if (v >= ORDER) throw new InputError('bad_multiplication', 'tau entry out of range');
        z[j] = Fn.add(z[j]!, v);
      }
    }
    const b = bitOf(r, k) ? 1n : 0n;
    rows.push([Fn.sub(Fn.sub(Fn.mul(b, eta[0]!), Fn.mul(th[0], z[0]!)), z[2]!), Fn.sub(Fn.sub(Fn.mul(b, eta[1]!), Fn.mul(th[1], z[1]!)), z[3]!)]);
    d0 = Fn.add(d0, Fn.mul(g[k]!, z[0]!));
    d1 = Fn.add(d1, Fn.mul(g[k]!, z[1]!));
  }
  if (!equalBytes(muOf(ctx, rows), hexToBytes(msg.mu))) throw new InputError('bad_multiplication', 'multiplication consistency check failed');
  return [d0, d1];
}
