// Byte helpers for transcripts and wire blobs outside the protocol core.
import { sha256 } from '@noble/hashes/sha2.js';

const enc = new TextEncoder();

export function utf8(s: string): Uint8Array {
  return enc.encode(s);
}

/** Unambiguous encoding: each part as a 4-byte big-endian length then its bytes. */
export function lengthPrefixed(parts: (Uint8Array | string)[]): Uint8Array {
  const bufs = parts.map((p) => (typeof p === 'string' ? enc.encode(p) : p));
  const out = new Uint8Array(bufs.reduce((n, b) => n + 4 + b.length, 0));
  const view = new DataView(out.buffer);
  let off = 0;
  for (const b of bufs) {
    view.setUint32(off, b.length);
    out.set(b, off + 4);
    off += 4 + b.length;
  }
  return out;
}

/** SHA-256 of a domain tag followed by length-prefixed parts. */
export function taggedDigest(tag: string, parts: (Uint8Array | string)[]): Uint8Array {
  return sha256(lengthPrefixed([tag, ...parts]));
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export function fromHex(s: string): Uint8Array {
  if (!/^(?:[0-9a-f]{2})*$/i.test(s)) throw new Error('not a hex string');
  return new Uint8Array(Buffer.from(s, 'hex'));
}
