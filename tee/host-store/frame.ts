// The host store's wire format: length-prefixed binary frames over one TCP stream (in an enclave, the
// vsock forwarder of deploy/enclave/entrypoint.sh), docs/storage.md "A store kept by the enclave's
// parent". A frame is
//
//   u32 length of what follows ‖ u8 version (1) ‖ u8 op ‖ u32 request id ‖ payload
//
// A key is u16 length ‖ UTF-8, a value u32 length ‖ bytes. Every length is checked against its limit
// before anything is allocated, and a payload must be consumed exactly. The server answers each request
// with a frame of the same id; an error frame with id 0 is about the connection itself.
import { HostStoreError, type HostStoreErrorCode } from './host-store-error.ts';

export const FRAME_VERSION = 1;
export const MAX_KEY_BYTES = 1024;
export const MAX_VALUE_BYTES = 4 * 1024 * 1024;
export const MAX_BATCH_OPS = 4096;
/** What one frame may carry after its length field. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
export const MAX_PAGE_ENTRIES = 1024;
/** A page stops growing past this many key and value bytes (it always holds at least one entry). */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;
export const MAX_ERROR_MESSAGE_BYTES = 512;
const HEADER_BYTES = 6;
/** The greeting a client opens with: this protocol, this version. */
export const HELLO_MAGIC = new TextEncoder().encode('custody/host-store/v1');

export const Op = {
  hello: 0x01, get: 0x02, batch: 0x03, scan: 0x04,
  ok: 0x81, value: 0x82, page: 0x83, error: 0xff,
} as const;

export type KvWriteOp = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string };

export interface ScanRequest {
  start: string;
  /** Start after `start` rather than at it (the next page). */
  startExclusive: boolean;
  /** Keys below this one; none: to the end. */
  end: string | undefined;
  limit: number;
  withValues: boolean;
}

export interface ScanPage {
  entries: { key: string; value?: Uint8Array }[];
  more: boolean;
}

export type Request =
  | { op: 'hello' }
  | { op: 'get'; key: string }
  | { op: 'batch'; sync: boolean; ops: KvWriteOp[] }
  | ({ op: 'scan' } & ScanRequest);

/** Error codes as they travel (a code never travels as text). */
const ERROR_WIRE: Record<number, HostStoreErrorCode> = { 1: 'bad_message', 2: 'payload_too_large', 3: 'conflict', 4: 'internal' };
const wireOf = (code: HostStoreErrorCode) => Number(Object.entries(ERROR_WIRE).find(([, c]) => c === code)?.[0] ?? 4);

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

class Writer {
  private readonly parts: Uint8Array[] = [];
  private size = 0;
  u8(n: number): this {
    return this.raw(Uint8Array.of(n));
  }
  u16(n: number): this {
    const b = new Uint8Array(2);
    new DataView(b.buffer).setUint16(0, n);
    return this.raw(b);
  }
  u32(n: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, n);
    return this.raw(b);
  }
  key(k: string): this {
    const b = utf8.encode(k);
    if (b.length > MAX_KEY_BYTES) throw new HostStoreError('payload_too_large', `a key of ${b.length} bytes is over the limit of ${MAX_KEY_BYTES}`);
    return this.u16(b.length).raw(b);
  }
  value(v: Uint8Array): this {
    if (v.length > MAX_VALUE_BYTES) throw new HostStoreError('payload_too_large', `a value of ${v.length} bytes is over the limit of ${MAX_VALUE_BYTES}`);
    return this.u32(v.length).raw(v);
  }
  raw(b: Uint8Array): this {
    this.parts.push(b);
    this.size += b.length;
    return this;
  }
  frame(op: number, id: number): Uint8Array {
    const len = HEADER_BYTES + this.size;
    if (len > MAX_FRAME_BYTES) throw new HostStoreError('payload_too_large', `a frame of ${len} bytes is over the limit of ${MAX_FRAME_BYTES}`);
    const out = new Uint8Array(4 + len);
    const v = new DataView(out.buffer);
    v.setUint32(0, len);
    out[4] = FRAME_VERSION;
    out[5] = op;
    v.setUint32(6, id);
    let at = 4 + HEADER_BYTES;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

class Reader {
  private at = 0;
  private readonly view: DataView;
  constructor(private readonly b: Uint8Array, private readonly what: string) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
  private need(n: number): void {
    if (this.b.length - this.at < n) throw bad(`${this.what} is truncated`);
  }
  u8(): number {
    this.need(1);
    return this.b[this.at++]!;
  }
  flag(): boolean {
    const f = this.u8();
    if (f > 1) throw bad(`${this.what} has a flag that is neither 0 nor 1`);
    return f === 1;
  }
  u16(): number {
    this.need(2);
    const n = this.view.getUint16(this.at);
    this.at += 2;
    return n;
  }
  u32(): number {
    this.need(4);
    const n = this.view.getUint32(this.at);
    this.at += 4;
    return n;
  }
  bytes(n: number): Uint8Array {
    this.need(n);
    const out = this.b.slice(this.at, this.at + n);
    this.at += n;
    return out;
  }
  key(): string {
    const n = this.u16();
    if (n > MAX_KEY_BYTES) throw new HostStoreError('payload_too_large', `${this.what} has a key of ${n} bytes, over the limit of ${MAX_KEY_BYTES}`);
    try {
      return strictUtf8.decode(this.bytes(n));
    } catch (err) {
      if (err instanceof HostStoreError) throw err;
      throw bad(`${this.what} has a key that is not UTF-8`);
    }
  }
  value(): Uint8Array {
    const n = this.u32();
    if (n > MAX_VALUE_BYTES) throw new HostStoreError('payload_too_large', `${this.what} has a value of ${n} bytes, over the limit of ${MAX_VALUE_BYTES}`);
    return this.bytes(n);
  }
  end(): void {
    if (this.at !== this.b.length) throw bad(`${this.what} has ${this.b.length - this.at} bytes too many`);
  }
}

const bad = (message: string) => new HostStoreError('bad_message', message);

export interface Frame {
  op: number;
  id: number;
  payload: Uint8Array;
}

/**
 * Cuts a byte stream into frames. A length over MAX_FRAME_BYTES throws at once, before the frame's
 * bytes are waited for, so a peer cannot make the other side buffer more than one frame's limit.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private size = 0;

  push(chunk: Uint8Array): Frame[] {
    this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.size += chunk.length;
    const out: Frame[] = [];
    for (;;) {
      if (this.size < 4) return out;
      const head = this.chunks.length === 1 ? this.chunks[0]! : (this.chunks = [Buffer.concat(this.chunks)])[0]!;
      const len = head.readUInt32BE(0);
      if (len < HEADER_BYTES || len > MAX_FRAME_BYTES) {
        throw new HostStoreError(len > MAX_FRAME_BYTES ? 'payload_too_large' : 'bad_message', `a frame of ${len} bytes is outside 6 to ${MAX_FRAME_BYTES}`);
      }
      if (this.size < 4 + len) return out;
      const frame = new Uint8Array(head.subarray(4, 4 + len));
      const rest = head.subarray(4 + len);
      this.chunks = rest.length ? [rest] : [];
      this.size = rest.length;
      if (frame[0] !== FRAME_VERSION) throw bad(`a frame of version ${frame[0]}; this side speaks ${FRAME_VERSION}`);
      out.push({ op: frame[1]!, id: new DataView(frame.buffer, frame.byteOffset).getUint32(2), payload: frame.slice(HEADER_BYTES) });
    }
  }
}

export function encodeRequest(id: number, r: Request): Uint8Array {
  const w = new Writer();
  switch (r.op) {
    case 'hello':
      return w.raw(HELLO_MAGIC).frame(Op.hello, id);
    case 'get':
      return w.key(r.key).frame(Op.get, id);
    case 'batch':
      if (r.ops.length > MAX_BATCH_OPS) throw new HostStoreError('payload_too_large', `a batch of ${r.ops.length} operations is over the limit of ${MAX_BATCH_OPS}`);
      w.u8(r.sync ? 1 : 0).u32(r.ops.length);
      for (const o of r.ops) {
        if (o.type === 'put') w.u8(1).key(o.key).value(o.value);
        else w.u8(2).key(o.key);
      }
      return w.frame(Op.batch, id);
    case 'scan':
      if (r.limit < 1 || r.limit > MAX_PAGE_ENTRIES) throw new HostStoreError('bad_message', `a page of 1 to ${MAX_PAGE_ENTRIES} entries, not ${r.limit}`);
      w.u8(r.withValues ? 1 : 0).key(r.start).u8(r.startExclusive ? 1 : 0).u8(r.end === undefined ? 0 : 1);
      if (r.end !== undefined) w.key(r.end);
      return w.u16(r.limit).frame(Op.scan, id);
  }
}

export function decodeRequest(f: Frame): Request {
  const r = new Reader(f.payload, 'a request');
  let out: Request;
  switch (f.op) {
    case Op.hello: {
      const magic = r.bytes(HELLO_MAGIC.length);
      if (!Buffer.from(magic).equals(HELLO_MAGIC)) throw bad('a greeting of another protocol');
      out = { op: 'hello' };
      break;
    }
    case Op.get:
      out = { op: 'get', key: r.key() };
      break;
    case Op.batch: {
      const sync = r.flag();
      const n = r.u32();
      if (n > MAX_BATCH_OPS) throw new HostStoreError('payload_too_large', `a batch of ${n} operations is over the limit of ${MAX_BATCH_OPS}`);
      const ops: KvWriteOp[] = [];
      for (let i = 0; i < n; i++) {
        const kind = r.u8();
        if (kind === 1) ops.push({ type: 'put', key: r.key(), value: r.value() });
        else if (kind === 2) ops.push({ type: 'del', key: r.key() });
        else throw bad(`a batch operation of unknown kind ${kind}`);
      }
      out = { op: 'batch', sync, ops };
      break;
    }
    case Op.scan: {
      const withValues = r.flag();
      const start = r.key();
      const startExclusive = r.flag();
      const end = r.flag() ? r.key() : undefined;
      const limit = r.u16();
      if (limit < 1 || limit > MAX_PAGE_ENTRIES) throw bad(`a page of 1 to ${MAX_PAGE_ENTRIES} entries, not ${limit}`);
      out = { op: 'scan', withValues, start, startExclusive, end, limit };
      break;
    }
    default:
      throw bad(`a request of unknown op ${f.op}`);
  }
  r.end();
  return out;
}

export const encodeOk = (id: number) => new Writer().frame(Op.ok, id);

export const encodeValue = (id: number, v: Uint8Array | undefined) => (v === undefined ? new Writer().u8(0) : new Writer().u8(1).value(v)).frame(Op.value, id);

export function encodePage(id: number, page: ScanPage, withValues: boolean): Uint8Array {
  const w = new Writer().u8(page.more ? 1 : 0).u16(page.entries.length);
  for (const e of page.entries) {
    w.key(e.key);
    if (withValues) w.value(e.value!);
  }
  return w.frame(Op.page, id);
}

export function encodeError(id: number, code: HostStoreErrorCode, message: string): Uint8Array {
  let m = utf8.encode(message);
  if (m.length > MAX_ERROR_MESSAGE_BYTES) m = utf8.encode(message.slice(0, MAX_ERROR_MESSAGE_BYTES / 4));
  return new Writer().u8(wireOf(code)).u16(m.length).raw(m).frame(Op.error, id);
}

/** An error frame as the error it carries (the server's words, marked as the host's). */
export function decodeError(f: Frame): HostStoreError {
  const r = new Reader(f.payload, 'an error answer');
  const code = ERROR_WIRE[r.u8()];
  const n = r.u16();
  if (n > MAX_ERROR_MESSAGE_BYTES) throw bad('an error answer with an overlong message');
  let text: string;
  try {
    text = strictUtf8.decode(r.bytes(n));
  } catch {
    throw bad('an error answer whose message is not UTF-8');
  }
  r.end();
  if (!code) throw bad('an error answer with an unknown code');
  return new HostStoreError(code, `the host store says: ${text}`);
}

export function decodeOk(f: Frame): void {
  new Reader(f.payload, 'an ok answer').end();
}

export function decodeValue(f: Frame): Uint8Array | undefined {
  const r = new Reader(f.payload, 'a value answer');
  const v = r.flag() ? r.value() : undefined;
  r.end();
  return v;
}

export function decodePage(f: Frame, withValues: boolean, limit: number): ScanPage {
  const r = new Reader(f.payload, 'a page answer');
  const more = r.flag();
  const n = r.u16();
  if (n > limit) throw bad(`a page of ${n} entries, more than the ${limit} asked for`);
  if (more && n === 0) throw bad('an empty page that says there is more');
  const entries: ScanPage['entries'] = [];
  for (let i = 0; i < n; i++) entries.push(withValues ? { key: r.key(), value: r.value() } : { key: r.key() });
  r.end();
  return { entries, more };
}
