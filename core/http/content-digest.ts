// RFC 9530 Content-Digest: sha-256 or sha-512 of the exact body bytes, as a structured dictionary.
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { parseDictionary, serializeDictionary } from 'structured-headers';

export function contentDigest(body: Uint8Array, alg: 'sha-256' | 'sha-512' = 'sha-256'): string {
  return serializeDictionary({ [alg]: alg === 'sha-256' ? sha256(body) : sha512(body) });
}

/** True when the header holds a sha-256 or sha-512 digest and every such digest matches the body. */
export function verifyContentDigest(header: string, body: Uint8Array): boolean {
  let dict;
  try {
    dict = parseDictionary(header);
  } catch {
    return false;
  }
  let checked = 0;
  for (const [alg, member] of dict) {
    const fn = alg === 'sha-256' ? sha256 : alg === 'sha-512' ? sha512 : undefined;
    if (!fn) continue;
    const value = Array.isArray(member) ? member[0] : undefined;
    if (!(value instanceof ArrayBuffer) && !ArrayBuffer.isView(value)) return false;
    const got = new Uint8Array(value instanceof ArrayBuffer ? value : value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
    const want = fn(body);
    if (got.length !== want.length || got.some((b, i) => b !== want[i])) return false;
    checked++;
  }
  return checked > 0;
}
