// Hashing to a scalar of the secp256k1 group, over the shared tagged transcript (core/codec/transcript.ts).
import { Fn } from './curve.ts';
import { taggedHash, type Part } from '../../../core/codec/transcript.ts';

/** A hash to a scalar (reduced from 64 bytes: two domain-separated halves). */
export function hashToScalar(tag: string, parts: Part[]): bigint {
  const a = taggedHash(tag + '/0', parts);
  const b = taggedHash(tag + '/1', parts);
  let n = 0n;
  for (const x of [...a, ...b]) n = (n << 8n) | BigInt(x);
  return Fn.create(n);
}
