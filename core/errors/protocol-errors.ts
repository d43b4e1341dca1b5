// Protocol errors by kind (STYLE.md habit 4): an abort names the culprit parties; an input error is a
// malformed value from a caller; a bug is a broken invariant of our own. Edges map them to statuses.

export class ProtocolAbort extends Error {
  constructor(readonly code: string, readonly culprits: number[], message: string) {
    super(message);
    this.name = 'ProtocolAbort';
  }
}

export class InputError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = 'InputError';
  }
}

export class ProtocolBug extends Error {
  readonly code = 'bug';
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolBug';
  }
}

/** Runs a check on a message from `from`; any input error in it becomes an abort naming `from`. */
export function blame<T>(from: number, code: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof ProtocolAbort) throw err;
    if (err instanceof InputError) throw new ProtocolAbort(code, [from], `party ${from}: ${err.message}`);
    throw err;
  }
}
