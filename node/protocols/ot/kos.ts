// OT extension: KOS (Keller-Orsini-Scholl, ePrint 2015/546) with the consistency check over
// GF(2^128) multiplication, never XOR, and a challenge freshly derived for every use from the session
// context and the receiver's whole matrix (Fiat-Shamir). The check uses powers of one challenge
// (a polynomial hash: GHASH), which adds a factor of the row count to the soundness error (< 2^-118).
//
// Roles, for one ordered pair: the extension receiver holds both keys of KAPPA base OTs (it was the
// base-OT sender), the extension sender holds Δ (KAPPA bits) and the keys its choices selected.
// Columns are expanded by XChaCha20 keyed with the base key, its nonce from the session context and a
// fresh 32-byte value the receiver draws per use: one extension never reuses another's pads, even with a repeated
// session id. Rows are 256 bits = two 128-bit lanes, each checked in GF(2^128) under its half of Δ.
//
// Receiver sends u (KAPPA columns of M bits) and, per lane, x = S(r) and t = S(t), where S is GCM's GHASH
// of the lane's M blocks under the hash key χ = AES-128_K(0) of a key K derived from the matrix:
// S(X) = χ·Σ χ^(M-k)·X_k + L·χ (L the length block). Sender checks S(q) == t + (x + L·χ)·Δ per lane, then
// q_k = t_k ⊕ r_k·Δ for every row k. (Check v4; docs/protocols/ecdsa.md, "The check's hash (v4)".)
//
// The two lanes' x reveal 256 GF(2)-linear functions of the choice bits. The EXTRA random rows hide
// the first XI bits exactly when those functions restricted to the extra rows have rank 256; over the
// extra rows' exponents that rank is min(EXTRA, deg lcm(minpoly χ_0, minpoly χ_1)), so EXTRA ≥ 256 and
// a challenge pair is refused (re-derived) unless both χ have degree 128 and are not conjugate
// (docs/protocols/ecdsa.md, "OT extension").
//
// The nonce is the receiver's: a receiver that repeats it (a replayed session id) gets rows correlated
// with an earlier run's (q_k ⊕ q'_k = (r_k ⊕ r'_k)·Δ). The sender's safety must not rest on it: a caller
// that hashes rows into pads keys that hash with the sender's own fresh randomness (rvole.ts).
import { ghash } from '@noble/ciphers/_polyval.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { equalBytes } from '../math/curve.ts';
import { gcmLengthBlock, noblePrimitives, taggedHashWith, type Primitives } from '../math/primitives.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import type { Rng } from '../round/machine.ts';
import { BASE_OT_COUNT } from './base-ot.ts';

export const KAPPA = BASE_OT_COUNT;
/** Rows the caller uses (DKLs23: ξ = κ + 2s with s = 80). */
export const XI = 416;
/** Extra random rows that mask the check: 256 for the two lanes' x values plus s = 80 of margin. */
export const EXTRA = 336;
export const M = XI + EXTRA;
const MB = M / 8;
const ROW = KAPPA / 8;

export interface KosReceiverMessage {
  nonce: string;
  /** KAPPA columns of M bits, concatenated. */
  u: Uint8Array;
  /** Per lane: x (16 bytes) then t (16 bytes). */
  check: Uint8Array;
}

/**
 * Column expansion: XChaCha20 keyed by the base-OT key, nonce = 22 bytes of the per-use context || column,
 * from the injected provider (the same keystream from any), into `out` (MB bytes). `nonce` is the
 * caller's 24-byte scratch (one per extension: a fresh small array per column costs more than the stream).
 */
function prg(prims: Primitives, seed: Uint8Array, ctx: Uint8Array, col: number, nonce: Uint8Array, out: Uint8Array): Uint8Array {
  nonce.set(ctx.subarray(0, 22), 0);
  nonce[22] = col >> 8;
  nonce[23] = col & 0xff;
  return prims.xchacha20(seed, nonce, MB, out);
}

/** KAPPA columns of MB bytes, as views into one buffer. */
const columns = (): { buf: Uint8Array; cols: Uint8Array[] } => {
  const buf = new Uint8Array(KAPPA * MB);
  return { buf, cols: Array.from({ length: KAPPA }, (_, c) => buf.subarray(c * MB, (c + 1) * MB)) };
};

/**
 * Columns (KAPPA × MB bytes) to rows (M × ROW bytes), 8×8 bits at a time: byte kb of columns 8·cb..8·cb+7
 * is a bit matrix whose transpose is byte cb of rows 8·kb..8·kb+7 (bit i of column byte j is bit j of
 * row byte i). The transpose is the three delta swaps of Hacker's Delight §7-3 on two 32-bit halves.
 */
function transpose(cols: Uint8Array[]): Uint8Array {
  const rows = new Uint8Array(M * ROW);
  for (let cb = 0; cb < ROW; cb++) {
    const c0 = cols[8 * cb]!, c1 = cols[8 * cb + 1]!, c2 = cols[8 * cb + 2]!, c3 = cols[8 * cb + 3]!;
    const c4 = cols[8 * cb + 4]!, c5 = cols[8 * cb + 5]!, c6 = cols[8 * cb + 6]!, c7 = cols[8 * cb + 7]!;
    for (let kb = 0; kb < MB; kb++) {
      let lo = c0[kb]! | (c1[kb]! << 8) | (c2[kb]! << 16) | (c3[kb]! << 24);
      let hi = c4[kb]! | (c5[kb]! << 8) | (c6[kb]! << 16) | (c7[kb]! << 24);
      if ((lo | hi) === 0) continue;
      let t = (lo ^ (lo >>> 7)) & 0x00aa00aa;
      lo = lo ^ t ^ (t << 7);
      t = (hi ^ (hi >>> 7)) & 0x00aa00aa;
      hi = hi ^ t ^ (t << 7);
      t = (lo ^ (lo >>> 14)) & 0x0000cccc;
      lo = lo ^ t ^ (t << 14);
      t = (hi ^ (hi >>> 14)) & 0x0000cccc;
      hi = hi ^ t ^ (t << 14);
      t = (lo ^ ((lo >>> 28) | (hi << 4))) & 0xf0f0f0f0;
      lo = lo ^ t ^ (t << 28);
      hi = hi ^ (t >>> 4);
      const base = 8 * kb * ROW + cb;
      rows[base] = lo & 0xff;
      rows[base + ROW] = (lo >>> 8) & 0xff;
      rows[base + 2 * ROW] = (lo >>> 16) & 0xff;
      rows[base + 3 * ROW] = lo >>> 24;
      rows[base + 4 * ROW] = hi & 0xff;
      rows[base + 5 * ROW] = (hi >>> 8) & 0xff;
      rows[base + 6 * ROW] = (hi >>> 16) & 0xff;
      rows[base + 7 * ROW] = hi >>> 24;
    }
  }
  return rows;
}

const ONE = (() => {
  const b = new Uint8Array(16);
  b[0] = 0x80; // the field's 1 in GHASH's bit order
  return b;
})();

// Squaring in GF(2^128) is GF(2)-linear: the square of a block is the XOR, over its 16 bytes, of the
// square of that byte alone at its position. The table (16 × 256 entries of four big-endian 32-bit
// words) is built once from the squares of the 128 one-bit blocks, each computed with GHASH's product.
let squares: Uint32Array | undefined;
function squareTable(): Uint32Array {
  const bit = new Uint32Array(128 * 4);
  for (let i = 0; i < 128; i++) {
    const e = new Uint8Array(16);
    e[i >> 3] = 1 << (i & 7);
    const sq = ghash(e, e); // one block: e·e
    const v = new DataView(sq.buffer, sq.byteOffset, 16);
    for (let w = 0; w < 4; w++) bit[4 * i + w] = v.getUint32(4 * w);
  }
  const tab = new Uint32Array(16 * 256 * 4);
  for (let b = 0; b < 16; b++) {
    for (let v = 1; v < 256; v++) {
      const low = v & -v; // the lowest set bit, added to the entry without it
      const i = 8 * b + 31 - Math.clz32(low);
      for (let w = 0; w < 4; w++) tab[(b * 256 + v) * 4 + w] = tab[(b * 256 + (v ^ low)) * 4 + w]! ^ bit[4 * i + w]!;
    }
  }
  return tab;
}

function square(z: Uint32Array): Uint32Array {
  squares ??= squareTable();
  const out = new Uint32Array(4);
  for (let b = 0; b < 16; b++) {
    // Challenges are public: indexing by their bytes leaks nothing.
    const at = (b * 256 + ((z[b >> 2]! >>> (24 - 8 * (b & 3))) & 0xff)) * 4;
    out[0]! ^= squares[at]!;
    out[1]! ^= squares[at + 1]!;
    out[2]! ^= squares[at + 2]!;
    out[3]! ^= squares[at + 3]!;
  }
  return out;
}

const words = (b: Uint8Array): Uint32Array => {
  const v = new DataView(b.buffer, b.byteOffset, 16);
  return Uint32Array.from([0, 1, 2, 3], (w) => v.getUint32(4 * w));
};
const sameWords = (a: Uint32Array, b: Uint32Array): boolean => a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];

/**
 * Whether a challenge pair would leave the extra rows' map below rank 256: χ_0 or χ_1 in the subfield
 * GF(2^64) (which holds every proper subfield, and 0), or χ_1 a conjugate χ_0^(2^i) of χ_0. Exported for
 * the tests; a random pair is refused with probability about 2^-63.
 */
export function degenerateChallenges(c0: Uint8Array, c1: Uint8Array): boolean {
  const z0 = words(c0);
  const z1 = words(c1);
  let y = z1;
  for (let i = 0; i < 64; i++) y = square(y);
  if (sameWords(y, z1)) return true;
  let x = z0;
  for (let i = 0; i < 128; i++) {
    if (i === 64 && sameWords(x, z0)) return true;
    if (sameWords(x, z1)) return true;
    x = square(x);
  }
  return false;
}

/** One lane's check: the GCM key K_l of its polynomial hash and the challenge χ_l = H = AES-128_{K_l}(0). */
export interface LaneCheck {
  key: Uint8Array;
  chi: Uint8Array;
}

const ZERO_BLOCK = new Uint8Array(16);

/**
 * Both lanes' checks: the matrix (as bytes) is hashed once, each lane's key K_l derives from that digest
 * and its challenge is GCM's hash key for K_l, so that the check's polynomial hashes are GCM's GHASH
 * (`Primitives.gcmHash`: OpenSSL's in the node). docs/protocols/ecdsa.md, "The check's hash (v4)".
 */
function challenges(prims: Primitives, ctx: Uint8Array, u: Uint8Array): [LaneCheck, LaneCheck] {
  const d = taggedHashWith(prims, 'custody/ot/kos/matrix/v4', [ctx, u]);
  // A degenerate pair (about 2^-63) is re-derived with the next counter: both sides do the same.
  for (let i = 0; ; i++) {
    const k0 = taggedHashWith(prims, 'custody/ot/kos/chi/v4', [ctx, 0, i, d]).subarray(0, 16);
    const k1 = taggedHashWith(prims, 'custody/ot/kos/chi/v4', [ctx, 1, i, d]).subarray(0, 16);
    const c0 = prims.aes128Block(k0, ZERO_BLOCK);
    const c1 = prims.aes128Block(k1, ZERO_BLOCK);
    if (!degenerateChallenges(c0, c1)) return [{ key: k0, chi: c0 }, { key: k1, chi: c1 }];
  }
}

/** The check's keys and challenges for a receiver message (what kosReceive and kosSend use), for the tests. */
export const checkChallenges = (ctx: string, nonce: string, u: Uint8Array, prims: Primitives = noblePrimitives): [LaneCheck, LaneCheck] =>
  challenges(prims, sessionCtx(prims, ctx, nonce), u);

/** L·χ for the length block L of M rows: what separates GCM's hash of a lane from χ times the plain polynomial. */
const lengthTerm = (chi: Uint8Array): Uint8Array => ghash(gcmLengthBlock(M * 16), chi);

function lane(rows: Uint8Array, l: number): Uint8Array {
  const out = new Uint8Array(M * 16);
  for (let k = 0; k < M; k++) out.set(rows.subarray(k * ROW + 16 * l, k * ROW + 16 * l + 16), k * 16);
  return out;
}

function bitsAsBlocks(bits: Uint8Array): Uint8Array {
  const out = new Uint8Array(M * 16);
  // The field's 1 is 0x80 in the block's first byte: written under a mask, without a branch on the bit.
  for (let k = 0; k < M; k++) out[k * 16] = -((bits[k >> 3]! >> (k & 7)) & 1) & ONE[0]!;
  return out;
}

function sessionCtx(prims: Primitives, ctx: string, nonce: string): Uint8Array {
  return taggedHashWith(prims, 'custody/ot/kos/prg/v1', [ctx, nonce]);
}

/**
 * Receiver: random choice bits r (M bits; the first XI are the caller's), the message for the sender,
 * and the receiver's rows t_k (ROW bytes each).
 */
export function kosReceive(ctx: string, k0: Uint8Array[], k1: Uint8Array[], rng: Rng, prims: Primitives = noblePrimitives): { msg: KosReceiverMessage; r: Uint8Array; t: Uint8Array } {
  const nonce = bytesToHex(rng(32));
  const sc = sessionCtx(prims, ctx, nonce);
  const r = rng(MB);
  const { buf: t0buf, cols: t0 } = columns();
  const b = new Uint8Array(MB);
  const scratch = new Uint8Array(24);
  const u = new Uint8Array(KAPPA * MB);
  for (let c = 0; c < KAPPA; c++) {
    const a = prg(prims, k0[c]!, sc, c, scratch, t0[c]!);
    prg(prims, k1[c]!, sc, c, scratch, b);
    for (let i = 0; i < MB; i++) u[c * MB + i] = a[i]! ^ b[i]! ^ r[i]!;
  }
  const t = transpose(t0);
  // The columns are the rows t_k before the transpose, and b is k1's stream: both secret to the receiver.
  t0buf.fill(0);
  b.fill(0);
  const rb = bitsAsBlocks(r);
  const check = new Uint8Array(64);
  const lanes = challenges(prims, sc, u);
  for (let l = 0; l < 2; l++) {
    const { key } = lanes[l]!;
    check.set(prims.gcmHash(key, rb), 32 * l);
    check.set(prims.gcmHash(key, lane(t, l)), 32 * l + 16);
  }
  return { msg: { nonce, u, check }, r, t };
}

/** Sender: checks the receiver's message and returns its rows q_k (= t_k ⊕ r_k·Δ). Throws InputError on a failed check. */
export function kosSend(ctx: string, delta: Uint8Array, kd: Uint8Array[], msg: KosReceiverMessage, prims: Primitives = noblePrimitives): Uint8Array {
  if (typeof msg.nonce !== 'string' || !/^[0-9a-f]{64}$/.test(msg.nonce)) throw new InputError('bad_ot', 'extension nonce');
  if (!(msg.u instanceof Uint8Array) || msg.u.length !== KAPPA * MB) throw new InputError('bad_ot', 'extension matrix has the wrong size');
  if (!(msg.check instanceof Uint8Array) || msg.check.length !== 64) throw new InputError('bad_ot', 'extension check values');
  const sc = sessionCtx(prims, ctx, msg.nonce);
  const u = msg.u;
  const { buf: colBuf, cols } = columns();
  const nonce = new Uint8Array(24);
  for (let c = 0; c < KAPPA; c++) {
    const q = prg(prims, kd[c]!, sc, c, nonce, cols[c]!);
    // Every column is combined under a mask of Δ's bit: no branch on the long-lived secret Δ.
    const mask = -((delta[c >> 3]! >> (c & 7)) & 1) & 0xff;
    for (let i = 0; i < MB; i++) q[i]! ^= u[c * MB + i]! & mask;
  }
  const q = transpose(cols);
  colBuf.fill(0);
  const check = msg.check;
  const lanes = challenges(prims, sc, u);
  for (let l = 0; l < 2; l++) {
    const { key, chi } = lanes[l]!;
    const x = check.subarray(32 * l, 32 * l + 16);
    const t = check.subarray(32 * l + 16, 32 * l + 32);
    // With S(X) = GHASH_χ(X ‖ L) = χ·P(X) + L·χ (P the plain polynomial hash) and q_k = t_k + r_k·Δ:
    // S(q) = S(t) + Δ·(S(r) + L·χ). One product by Δ, as before; never XOR.
    const lhs = prims.gcmHash(key, lane(q, l));
    const xl = lengthTerm(chi);
    for (let i = 0; i < 16; i++) xl[i]! ^= x[i]!;
    const xd = ghash(xl, delta.subarray(16 * l, 16 * l + 16));
    const rhs = new Uint8Array(16);
    for (let i = 0; i < 16; i++) rhs[i] = t[i]! ^ xd[i]!;
    if (!equalBytes(lhs, rhs)) throw new InputError('bad_ot_check', 'OT extension consistency check failed');
  }
  return q;
}

/** Exported for the tests, which compare it with a bit-by-bit transpose. */
export const transposeColumns = (cols: Uint8Array[]): Uint8Array => transpose(cols);

export const rowOf = (rows: Uint8Array, k: number): Uint8Array => rows.subarray(k * ROW, k * ROW + ROW);
export const bitOf = (bits: Uint8Array, k: number): number => (bits[k >> 3]! >> (k & 7)) & 1;
