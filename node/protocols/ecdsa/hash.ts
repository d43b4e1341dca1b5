// Hashing for DKLs23 (ePrint 2023/765 §2, "random oracle" uses): every call is domain-separated and
// length-prefixed through core/codec/transcript.ts (a TupleHash-style encoding: each part is preceded by its
// length, so no two part lists encode alike) and carries the session context among its parts.
// Here: salted hash commitments (F_Com) and hashing to several scalars at once (used per OT row, where
// one SHA-256 pair per scalar costs too much). Proofs of knowledge are in fischlin.ts.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { ORDER, equalBytes } from '../math/curve.ts';
import { taggedHash, transcript, type Part } from '../../../core/codec/transcript.ts';
import type { Rng } from '../round/machine.ts';
import { noblePrimitives, type Primitives } from '../math/primitives.ts';

/** Salted hash commitment: H(tag, context, salt, value). The salt is 32 fresh random bytes. */
export function commit(tag: string, context: string, parts: Part[], rng: Rng): { commitment: string; salt: string } {
  const salt = bytesToHex(rng(32));
  return { commitment: bytesToHex(taggedHash(`custody/commit/${tag}/v1`, [context, salt, ...parts])), salt };
}

export function openCommitment(tag: string, context: string, parts: Part[], salt: string, commitment: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(salt) || !/^[0-9a-f]{64}$/.test(commitment)) return false;
  return equalBytes(taggedHash(`custody/commit/${tag}/v1`, [context, salt, ...parts]), hexToBytes(commitment));
}

const NONCE = new Uint8Array(12);
// Scratch for the hot per-row hash, reused across calls (read out before returning): the digest, the
// stream and a view of it. Allocating them per row cost as much as the hashing.
const DIGEST = new Uint8Array(32);
let STREAM = new Uint8Array(128);
let VIEW = new DataView(STREAM.buffer);

/**
 * `count` scalars from one input: SHA-256 of the (already domain-separated) input keys a ChaCha20
 * stream, read as 32-byte big-endian values reduced mod n (bias below 2^-127 for secp256k1's n).
 * Both primitives come from the injected provider (math/primitives.ts): the same bytes from any.
 */
export function hashToScalars(input: Uint8Array, count: number, prims: Primitives = noblePrimitives): bigint[] {
  if (STREAM.length < 32 * count) {
    STREAM = new Uint8Array(32 * count);
    VIEW = new DataView(STREAM.buffer);
  }
  try {
    prims.chacha20(prims.sha256(input, DIGEST), NONCE, 32 * count, STREAM.subarray(0, 32 * count));
    const view = VIEW;
    const n = ORDER; // read once: a re-exported binding may be a getter where the module is transpiled
    const res = new Array<bigint>(count);
    for (let i = 0; i < count; i++) {
      const o = 32 * i;
      const v = (view.getBigUint64(o) << 192n) | (view.getBigUint64(o + 8) << 128n) | (view.getBigUint64(o + 16) << 64n) | view.getBigUint64(o + 24);
      // v < 2^256 < 2n, so one conditional subtraction reduces it.
      res[i] = v >= n ? v - n : v;
    }
    return res;
  } finally {
    // The digest keys the pads of a secret OT row.
    DIGEST.fill(0);
  }
}

/** Length-prefixed encoding of a tag and parts, for callers that feed it to another hash. */
export function encodeParts(tag: string, parts: Part[]): Uint8Array {
  return transcript(tag, parts);
}
