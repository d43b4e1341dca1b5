// The bytes of a log entry (docs/platform/transparency-log.md "Entries"): the UTF-8 of canonical JSON, the
// JSON Canonicalization Scheme of RFC 8785 restricted to what a body may hold (strings, finite numbers,
// booleans, null, arrays, objects): object keys sorted by UTF-16 code units, no whitespace, strings and
// numbers as ECMAScript's JSON.stringify writes them. The leaf is
// `{"body":…,"index":n,"kind":"…","time":"<ISO 8601>","token":"tok_…","v":1}`: its position and token are
// inside it, so a leaf cannot be moved to another index or another token's log. Pure.
import { LOG_ENTRY_KINDS, type LogEntryKind } from '../seams.ts';

export const ENTRY_VERSION = 1;

export class EntryEncodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EntryEncodingError';
  }
}

/** RFC 8785 canonical JSON of `v`; throws on what JSON cannot hold exactly (undefined, NaN, a bigint, a class). */
export function canonicalJson(v: unknown, path = '$'): string {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new EntryEncodingError(`${path}: a number must be finite`);
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map((x, i) => canonicalJson(x, `${path}[${i}]`)).join(',')}]`;
  if (typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k], `${path}.${k}`)}`).join(',')}}`;
  }
  throw new EntryEncodingError(`${path}: ${typeof v} is not JSON`);
}

export interface LogEntry {
  v: typeof ENTRY_VERSION;
  token: string;
  index: number;
  kind: LogEntryKind;
  time: string;
  body: Record<string, unknown>;
}

export function encodeEntry(e: LogEntry): string {
  if (!LOG_ENTRY_KINDS.includes(e.kind)) throw new EntryEncodingError(`unknown entry kind ${String(e.kind)}`);
  if (typeof e.body !== 'object' || e.body === null || Array.isArray(e.body)) throw new EntryEncodingError('an entry body is a JSON object');
  return canonicalJson({ v: e.v, token: e.token, index: e.index, kind: e.kind, time: e.time, body: e.body });
}

/** The entry a stored text states, or why it is not one (the text must be exactly its canonical form). */
export function decodeEntry(text: string): LogEntry {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new EntryEncodingError('the entry is not JSON');
  }
  const e = v as LogEntry;
  if (typeof v !== 'object' || v === null || e.v !== ENTRY_VERSION || typeof e.token !== 'string' || !Number.isSafeInteger(e.index) || typeof e.time !== 'string') {
    throw new EntryEncodingError('the entry lacks v, token, index or time');
  }
  if (encodeEntry(e) !== text) throw new EntryEncodingError('the entry is not in canonical form');
  return e;
}
