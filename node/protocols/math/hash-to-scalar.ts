// Hashing to a scalar of the secp256k1 group, over the shared tagged transcript (core/codec/transcript.ts).
import { Fn } from './curve.ts';
import { type Part } from '../../../core/codec/transcript.ts';
import { noblePrimitives, taggedHashWith, type Primitives } from './primitives.ts';

/**
 * A hash to a scalar (reduced from 64 bytes: two domain-separated halves), its SHA-256 from the given
 * provider (the same scalar from any).
 */
export function hashToScalar(tag: string, parts: Part[], prims: Primitives = noblePrimitives): bigint {
  const a = taggedHashWith(prims, tag + '/0', parts);
  const b = taggedHashWith(prims, tag + '/1', parts);
  let n = 0n;
  for (const x of a) n = (n << 8n) | BigInt(x);
  for (const x of b) n = (n << 8n) | BigInt(x);
  return Fn.create(n);
}
