// Byte helpers for transcripts and wire blobs outside the protocol core.
import { lengthPrefixed, taggedHash } from '../node/protocols/math/transcript.ts';

// One unambiguous encoding everywhere: the protocols' length-prefixed transcript.
export { lengthPrefixed };

export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

/** SHA-256 of a domain tag followed by length-prefixed parts. */
export function taggedDigest(tag: string, parts: (Uint8Array | string)[]): Uint8Array {
  return taggedHash(tag, parts);
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export function fromHex(s: string): Uint8Array {
  if (!/^(?:[0-9a-f]{2})*$/i.test(s)) throw new Error('not a hex string');
  return new Uint8Array(Buffer.from(s, 'hex'));
}
