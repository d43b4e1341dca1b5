// A secret byte string that never prints (STYLE.md habit 3): protocol state keeps its secrets (shares,
// nonces, polynomial coefficients, OT keys, choice bits and seeds) in this type, not as bare hex or
// bigints. The bytes leave only through `expose()`; the blob codec (blob.ts) refuses the type unless the
// caller writes sealed storage, so a secret cannot reach a wire payload by accident. As ZF frost's secret
// types it prints as <redacted>; as noble's FROST nonces it is zeroed after use, and then refuses to be read.
import { ProtocolBug } from '../errors/protocol-errors.ts';

export const REDACTED = '<redacted>';

export class SecretBytes {
  #bytes: Uint8Array;
  #zeroized = false;

  /** Takes ownership of `bytes`: the caller keeps no other reference to them. */
  constructor(bytes: Uint8Array) {
    if (!(bytes instanceof Uint8Array)) throw new ProtocolBug('SecretBytes holds a Uint8Array');
    this.#bytes = bytes;
  }

  /** The length is public (it is fixed by the protocol for every secret held here). */
  get length(): number {
    return this.#bytes.length;
  }

  get zeroized(): boolean {
    return this.#zeroized;
  }

  /**
   * The secret itself, for protocol arithmetic and sealed storage only: the view is not a copy, so it
   * is neither kept nor changed by the caller. A zeroed secret refuses (a consumed nonce stays consumed).
   */
  expose(): Uint8Array {
    if (this.#zeroized) throw new ProtocolBug('a zeroed secret was read again');
    return this.#bytes;
  }

  /** Overwrites the bytes; every later `expose()` throws. */
  zeroize(): void {
    this.#bytes.fill(0);
    this.#zeroized = true;
  }

  /** Constant time in the content: one pass over equal lengths, no early exit (lengths are public). */
  equals(other: SecretBytes): boolean {
    const a = this.expose();
    const b = other.expose();
    if (a.length !== b.length) return false;
    let d = 0;
    for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
    return d === 0;
  }

  toJSON(): string {
    return REDACTED;
  }

  toString(): string {
    return REDACTED;
  }

  [Symbol.toPrimitive](): string {
    return REDACTED;
  }

  // Node's util.inspect (console.log, test diffs, loggers), without importing node:util in pure code.
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `SecretBytes(${REDACTED})`;
  }
}
