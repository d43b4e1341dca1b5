// Canonical byte encoding for intents (docs/intents.md): fixed field order, fixed-width big-endian
// integers, length-prefixed strings and byte strings, no optional fields and no trailing bytes, so each
// value has exactly one encoding and the bytes a customer signs are the bytes every node parses.
import { CustodyError } from '../errors/custody-error.ts';

export class IntentFormatError extends CustodyError {
  constructor(message: string) {
    super('bad_intent', message);
    this.name = 'IntentFormatError';
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

/** How a format names itself in errors, and the error class it throws (intents, trust entries). */
export interface FormatErrors {
  noun: string;
  fail(message: string): Error;
}

const INTENT_ERRORS: FormatErrors = { noun: 'intent', fail: (m) => new IntentFormatError(m) };

export class Writer {
  private parts: Uint8Array[] = [];

  constructor(private readonly errors: FormatErrors = INTENT_ERRORS) {}

  raw(b: Uint8Array): this {
    this.parts.push(b.slice());
    return this;
  }

  u8(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xff) throw this.errors.fail(`u8 out of range: ${n}`);
    return this.raw(new Uint8Array([n]));
  }

  u16(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xffff) throw this.errors.fail(`u16 out of range: ${n}`);
    return this.raw(new Uint8Array([n >> 8, n & 0xff]));
  }

  u32(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw this.errors.fail(`u32 out of range: ${n}`);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, n);
    return this.raw(b);
  }

  u64(n: bigint): this {
    if (n < 0n || n >= 1n << 64n) throw this.errors.fail(`u64 out of range: ${n}`);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, n);
    return this.raw(b);
  }

  u256(n: bigint): this {
    if (n < 0n || n >= 1n << 256n) throw this.errors.fail(`u256 out of range: ${n}`);
    const b = new Uint8Array(32);
    let x = n;
    for (let i = 31; i >= 0; i--) {
      b[i] = Number(x & 0xffn);
      x >>= 8n;
    }
    return this.raw(b);
  }

  fixed(b: Uint8Array, len: number, what: string): this {
    if (b.length !== len) throw this.errors.fail(`${what} must be ${len} bytes`);
    return this.raw(b);
  }

  /** A UTF-8 string with a u16 length, checked against `pattern`. */
  str(s: string, what: string, pattern: RegExp, max: number): this {
    const b = enc.encode(s);
    if (b.length > max || !pattern.test(s)) throw this.errors.fail(`${what} is not valid`);
    return this.u16(b.length).raw(b);
  }

  bytes(b: Uint8Array, max: number, what: string): this {
    if (b.length > max) throw this.errors.fail(`${what} exceeds ${max} bytes`);
    return this.u32(b.length).raw(b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let off = 0;
    for (const p of this.parts) {
      out.set(p, off);
      off += p.length;
    }
    return out;
  }
}

export class Reader {
  private off = 0;
  constructor(private readonly b: Uint8Array, private readonly errors: FormatErrors = INTENT_ERRORS) {}

  private take(n: number, what: string): Uint8Array {
    if (this.off + n > this.b.length) throw this.errors.fail(`${this.errors.noun} ends inside ${what}`);
    const out = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return out;
  }

  u8(what: string): number {
    return this.take(1, what)[0]!;
  }

  u16(what: string): number {
    const b = this.take(2, what);
    return (b[0]! << 8) | b[1]!;
  }

  u32(what: string): number {
    const b = this.take(4, what);
    return new DataView(b.buffer, b.byteOffset, 4).getUint32(0);
  }

  u64(what: string): bigint {
    const b = this.take(8, what);
    return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0);
  }

  u256(what: string): bigint {
    let n = 0n;
    for (const x of this.take(32, what)) n = (n << 8n) | BigInt(x);
    return n;
  }

  fixed(n: number, what: string): Uint8Array {
    return this.take(n, what).slice();
  }

  str(what: string, pattern: RegExp, max: number): string {
    const len = this.u16(what);
    if (len > max) throw this.errors.fail(`${what} is too long`);
    const raw = this.take(len, what);
    let s: string;
    try {
      s = dec.decode(raw);
    } catch {
      throw this.errors.fail(`${what} is not UTF-8`);
    }
    if (!pattern.test(s)) throw this.errors.fail(`${what} is not valid`);
    return s;
  }

  bytes(max: number, what: string): Uint8Array {
    const len = this.u32(what);
    if (len > max) throw this.errors.fail(`${what} exceeds ${max} bytes`);
    return this.take(len, what).slice();
  }

  end(): void {
    if (this.off !== this.b.length) throw this.errors.fail(`${this.b.length - this.off} trailing bytes after the ${this.errors.noun}`);
  }
}
