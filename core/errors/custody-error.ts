// The one base of every error the system raises on purpose (STYLE.md habit 4, after viem's BaseError):
// a registered code, the kind that code has, the parties to blame, and the cause. Subclasses exist only
// where callers need `instanceof` or extra fields; everything else throws a CustodyError directly.
// Edges turn it into a status (gRPC: core/rpc/rpc-error.ts; HTTP: api/errors.ts) and back; a code never
// travels inside a message text.
import { ERROR_CODES, type ErrorCode } from './error-codes.ts';
import type { ErrorKind } from './error-kinds.ts';

/** Whom an error blames: node ids at the runtime and across processes, party indices inside a protocol. */
export type Culprit = string | number;

export interface CustodyErrorOptions {
  readonly culprits?: readonly Culprit[];
  readonly cause?: unknown;
}

export class CustodyError extends Error {
  readonly code: ErrorCode;
  readonly kind: ErrorKind;
  readonly culprits: readonly Culprit[];

  constructor(code: ErrorCode, message: string, options: CustodyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CustodyError';
    this.code = code;
    this.kind = ERROR_CODES[code].kind;
    this.culprits = options.culprits ?? [];
  }
}

export function isCustodyError(err: unknown, kind?: ErrorKind): err is CustodyError {
  return err instanceof CustodyError && (kind === undefined || err.kind === kind);
}
