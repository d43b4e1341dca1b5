// The versioned blob codec: every protocol message payload, stored run, session parameter and result
// travels in it. It lives in core/ because the nodes, the coordinator and the API all read and write
// these bytes; it is sans-IO like the protocol code that uses it.
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { InputError } from '../errors/protocol-errors.ts';

const BLOB_JSON = 1;
const BLOB_BINARY = 2;
/** The JSON stand-in for a byte string of a blob: its section index. */
const SECTION = '$bytes';

/**
 * Versioned bytes of any plain-data value (a message payload, a run). Version 2: the version byte, the
 * JSON's length (4 bytes, big-endian), the JSON, then every Uint8Array of the value as a section (4-byte
 * length, bytes), each replaced in the JSON by {"$bytes": index}. Large byte strings (OT matrices,
 * multiplication rows) so skip hex both ways. Version 1 (JSON only) is still read.
 */
export function encodeBlob(kind: string, value: unknown): Uint8Array {
  const sections: Uint8Array[] = [];
  const json = utf8ToBytes(JSON.stringify({ k: kind, v: value }, (_key, v: unknown) => {
    if (!(v instanceof Uint8Array)) return v;
    sections.push(v);
    return { [SECTION]: sections.length - 1 };
  }));
  const out = new Uint8Array(5 + json.length + sections.reduce((a, b) => a + 4 + b.length, 0));
  const view = new DataView(out.buffer);
  out[0] = BLOB_BINARY;
  view.setUint32(1, json.length);
  out.set(json, 5);
  let at = 5 + json.length;
  for (const b of sections) {
    view.setUint32(at, b.length);
    out.set(b, at + 4);
    at += 4 + b.length;
  }
  return out;
}

export function decodeBlob<T>(kind: string, bytes: Uint8Array): T {
  let parsed: unknown;
  try {
    parsed = parseBlob(bytes);
  } catch {
    throw new InputError('bad_encoding', `${kind}: not valid encoded data`);
  }
  if (typeof parsed !== 'object' || parsed === null || (parsed as { k?: unknown }).k !== kind) throw new InputError('bad_encoding', `expected a ${kind}`);
  return (parsed as { v: T }).v;
}

function parseBlob(bytes: Uint8Array): unknown {
  const text = (b: Uint8Array) => new TextDecoder('utf-8', { fatal: true }).decode(b);
  if (bytes.length >= 2 && bytes[0] === BLOB_JSON) return JSON.parse(text(bytes.subarray(1)));
  if (bytes.length < 5 || bytes[0] !== BLOB_BINARY) throw new Error('unknown encoding version');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const jsonEnd = 5 + view.getUint32(1);
  if (jsonEnd > bytes.length) throw new Error('truncated');
  const sections: Uint8Array[] = [];
  for (let at = jsonEnd; at < bytes.length;) {
    if (at + 4 > bytes.length) throw new Error('truncated section');
    const end = at + 4 + view.getUint32(at);
    if (end > bytes.length) throw new Error('truncated section');
    sections.push(bytes.slice(at + 4, end));
    at = end;
  }
  const used = new Set<number>();
  const value = JSON.parse(text(bytes.subarray(5, jsonEnd)), (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || !Object.hasOwn(v, SECTION)) return v;
    const i = (v as Record<string, unknown>)[SECTION];
    if (Object.keys(v).length !== 1 || typeof i !== 'number' || !sections[i] || used.has(i)) throw new Error('bad section reference');
    used.add(i);
    return sections[i];
  });
  if (used.size !== sections.length) throw new Error('unreferenced section');
  return value;
}
