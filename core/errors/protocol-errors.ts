// Protocol errors by kind (STYLE.md habit 4): an abort names the culprit parties (1-based indices); an
// input error is a malformed value from a caller; a bug is a broken invariant of our own. All three are
// CustodyErrors, so the runtime maps them like any other.
import { CustodyError } from './custody-error.ts';
import type { ErrorCode } from './error-codes.ts';

export class ProtocolAbort extends CustodyError {
  declare readonly culprits: readonly number[];
  constructor(code: ErrorCode, culprits: readonly number[], message: string) {
    super(code, message, { culprits });
    this.name = 'ProtocolAbort';
  }
}

export class InputError extends CustodyError {
  constructor(code: ErrorCode, message: string) {
    super(code, message);
    this.name = 'InputError';
  }
}

export class ProtocolBug extends CustodyError {
  constructor(message: string) {
    super('bug', message);
    this.name = 'ProtocolBug';
  }
}

/** Runs a check on a message from `from`; any input error in it becomes an abort naming `from`. */
export function blame<T>(from: number, code: ErrorCode, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof ProtocolAbort) throw err;
    if (err instanceof InputError) throw new ProtocolAbort(code, [from], `party ${from}: ${err.message}`);
    throw err;
  }
}
