// Canonical JSON (RFC 8785, JCS, for the values JSON carries here: object keys sorted by UTF-16 code units,
// no whitespace, numbers and strings as ECMAScript serializes them): the bytes a value hash is taken over,
// so the same value hashes the same however it was sent or stored.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError('canonical JSON has no NaN or Infinity');
  return JSON.stringify(v) ?? 'null';
}

/** SHA-256 of a value's canonical JSON, lower-case hex: the `value_sha256` attestations sign. */
export function valueSha256(v: unknown): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(v))));
}
