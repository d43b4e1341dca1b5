// The versioned blob codec: every protocol message payload, stored run, session parameter and result
// travels in it. It lives in core/ because the nodes, the coordinator and the API all read and write
// these bytes; it is sans-IO like the protocol code that uses it.
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { InputError, ProtocolBug } from '../errors/protocol-errors.ts';
import { REDACTED, SecretBytes } from './secret.ts';

const BLOB_JSON = 1;
const BLOB_BINARY = 2;
/** The JSON stand-in for a byte string of a blob: its section index. */
const SECTION = '$bytes';
/** The JSON stand-in for a secret (SecretBytes) of a sealed blob: its section index. */
const SECRET = '$secret';

export interface BlobOptions {
  /**
   * Sealed storage only (the store encrypts the record): SecretBytes are written as marked sections and
   * read back as SecretBytes. Never set for anything that leaves the node (a message payload, a result).
   */
  secrets?: boolean;
}

/**
 * Versioned bytes of any plain-data value (a message payload, a run). Version 2: the version byte, the
 * JSON's length (4 bytes, big-endian), the JSON, then every Uint8Array of the value as a section (4-byte
 * length, bytes), each replaced in the JSON by {"$bytes": index}. Large byte strings (OT matrices,
 * multiplication rows) so skip hex both ways. Version 1 (JSON only) is still read.
 *
 * Fails closed on secrets: a SecretBytes is refused (ProtocolBug) unless `opts.secrets` is set, and is
 * then a section referenced as {"$secret": index}; any other redacting type (one whose toJSON prints
 * <redacted>: a key share, a presignature) is refused always, since it would be written as that text.
 */
export function encodeBlob(kind: string, value: unknown, opts: BlobOptions = {}): Uint8Array {
  const sections: Uint8Array[] = [];
  const json = utf8ToBytes(JSON.stringify({ k: kind, v: value }, function (this: Record<string, unknown>, key: string, v: unknown) {
    // A Buffer's toJSON has already run by now ({type:'Buffer', data}); the holder still has the bytes.
    const raw = this[key];
    if (raw instanceof Uint8Array) {
      sections.push(raw);
      return { [SECTION]: sections.length - 1 };
    }
    if (v !== REDACTED) return v;
    // toJSON already ran: the holder still has the object itself.
    const held = this[key];
    if (held instanceof SecretBytes) {
      if (!opts.secrets) throw new ProtocolBug(`${kind}: a secret in a blob that is not for sealed storage`);
      sections.push(held.expose());
      return { [SECRET]: sections.length - 1 };
    }
    if (typeof held === 'object' && held !== null) throw new ProtocolBug(`${kind}: a redacting secret type cannot be encoded`);
    return v;
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

/** Reads a blob; one holding a secret is refused (bad_encoding) unless `opts.secrets` says it is sealed storage. */
export function decodeBlob<T>(kind: string, bytes: Uint8Array, opts: BlobOptions = {}): T {
  let parsed: unknown;
  try {
    parsed = parseBlob(bytes, opts.secrets === true);
  } catch {
    throw new InputError('bad_encoding', `${kind}: not valid encoded data`);
  }
  if (typeof parsed !== 'object' || parsed === null || (parsed as { k?: unknown }).k !== kind) throw new InputError('bad_encoding', `expected a ${kind}`);
  return (parsed as { v: T }).v;
}

function parseBlob(bytes: Uint8Array, secrets: boolean): unknown {
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
    if (typeof v !== 'object' || v === null) return v;
    const secret = Object.hasOwn(v, SECRET);
    if (!secret && !Object.hasOwn(v, SECTION)) return v;
    if (secret && !secrets) throw new Error('a secret outside sealed storage');
    const i = (v as Record<string, unknown>)[secret ? SECRET : SECTION];
    if (Object.keys(v).length !== 1 || typeof i !== 'number' || !sections[i] || used.has(i)) throw new Error('bad section reference');
    used.add(i);
    return secret ? new SecretBytes(sections[i]) : sections[i];
  });
  if (used.size !== sections.length) throw new Error('unreferenced section');
  return value;
}
