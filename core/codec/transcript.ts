// Domain-separated, unambiguous hashing: SHA-256 over a tag and length-prefixed parts. Every protocol
// hash goes through here with the session id among its parts, and so does every signed transcript
// outside the protocols (attach, trust entries, rosters): one encoding everywhere, in core/ because
// common/ sits below it and the protocols, the nodes and the API all use it.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';

export type Part = Uint8Array | string | number | bigint;

function encodePart(p: Part): Uint8Array {
  if (p instanceof Uint8Array) return p;
  if (typeof p === 'string') return utf8ToBytes(p);
  if (typeof p === 'number') {
    if (!Number.isSafeInteger(p) || p < 0) throw new Error('transcript numbers are non-negative integers');
    return utf8ToBytes(String(p));
  }
  return hexToBytes(p.toString(16).padStart(64, '0'));
}

/** Each part as a 4-byte big-endian length then its bytes: an unambiguous concatenation. */
export function lengthPrefixed(parts: Part[]): Uint8Array {
  const bufs = parts.map(encodePart);
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

export function transcript(tag: string, parts: Part[]): Uint8Array {
  return lengthPrefixed([tag, ...parts]);
}

export function taggedHash(tag: string, parts: Part[]): Uint8Array {
  return sha256(transcript(tag, parts));
}

export function taggedHashHex(tag: string, parts: Part[]): string {
  return bytesToHex(taggedHash(tag, parts));
}
