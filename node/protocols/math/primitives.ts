// The symmetric primitives the protocols' hot paths call, injected like the RNG (DESIGN.md, "the one
// rule"): a protocol takes a `Primitives` and never picks an implementation itself, so the same pure
// code runs on `@noble/*` (this file's reference, the default) or on the node's native OpenSSL
// (node/runtime/native-primitives.ts). Every implementation must return the same bytes for the same
// inputs: what is hashed and what travels never depends on the provider, and the tests cross-check
// them (test/protocols/primitives.test.ts).
//
// Point arithmetic is not here: the products by secrets stay noble's constant-time, blinded
// multiplications in every provider (docs/protocols/ecdsa.md, "Primitives").
import { chacha20, xchacha20 } from '@noble/ciphers/chacha.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { transcript, type Part } from '../../../core/codec/transcript.ts';

export interface Primitives {
  /** For logs and benchmarks only; never hashed. */
  readonly name: string;
  /** SHA-256 of `data` (any length, empty included). */
  sha256(data: Uint8Array): Uint8Array;
  /**
   * `length` bytes of the RFC 8439 ChaCha20 keystream under a 32-byte key and a 12-byte nonce, block
   * counter from 0: written into `out` (exactly `length` bytes) and returned when given, else in fresh
   * memory. `out` lets the per-row hash reuse one buffer (allocation is a fifth of its cost).
   */
  chacha20(key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array;
  /** `length` bytes of the XChaCha20 keystream (draft-irtf-cfrg-xchacha) under a 32-byte key and a 24-byte nonce. */
  xchacha20(key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array;
}

let zeros = new Uint8Array(1024);
/** A read-only zero input of at least `n` bytes: noble's ciphers XOR a keystream into their input. */
function zeroInput(n: number): Uint8Array {
  if (zeros.length < n) zeros = new Uint8Array(n);
  return zeros.subarray(0, n);
}

/** The reference provider: `@noble/hashes` and `@noble/ciphers`, pure JavaScript. */
export const noblePrimitives: Primitives = Object.freeze({
  name: 'noble',
  sha256: (data: Uint8Array): Uint8Array => sha256(data),
  chacha20: (key: Uint8Array, nonce: Uint8Array, length: number, out?: Uint8Array): Uint8Array =>
    chacha20(key, nonce, zeroInput(length), out ?? new Uint8Array(length)),
  xchacha20: (key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array => xchacha20(key, nonce, zeroInput(length), new Uint8Array(length)),
});

/** core/codec/transcript.ts's taggedHash (the same bytes hashed) on the given provider. */
export function taggedHashWith(prims: Primitives, tag: string, parts: Part[]): Uint8Array {
  return prims.sha256(transcript(tag, parts));
}

export function taggedHashHexWith(prims: Primitives, tag: string, parts: Part[]): string {
  return bytesToHex(taggedHashWith(prims, tag, parts));
}
