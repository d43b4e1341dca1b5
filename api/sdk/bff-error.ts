// Errors of the BFF helper (docs/platform/bff.md), each with a stable code from one documented set, as
// SdkError has its own. A BFF branches on `code`: `signed_out` clears the browser's cookie and starts a
// sign-in, `sign_in_failed` starts a fresh transaction, `exchange_pending` may be retried with the same
// callback.

export const BFF_ERROR_CODES = Object.freeze({
  server_only: 'the helper was loaded where a browser runs; it holds the bearer key and member credentials and runs only on the customer server',
  cookie_refused: 'a cookie would break the rules (durable cookie not __Host-, a value that is not an opaque BFF reference, a token-like secret)',
  signed_out: 'the session reference holds no usable member session (unknown, expired, signed out, or its sign-in was revoked): sign in again',
  transaction_unknown: 'the sign-in transaction is unknown or expired: start a fresh one',
  transaction_conflict: 'the callback does not match the sign-in transaction (another proof, another nonce): start a fresh one',
  exchange_pending: 'the staged exchange got no answer yet; repeating the same callback resumes it with the same exchange id and proof',
  sign_in_failed: 'the exchange was refused, or its outcome cannot be recovered; the transaction is closed: start a fresh one',
  lock_timeout: 'the per-reference lock of the BFF store was not granted in time',
  store_corrupt: 'a BFF store record does not open under the store key (another key, or a record moved to another reference)',
  csrf_refused: 'a call of the BFF\'s member routes that may not come from its own pages (no CSRF header, another site, another origin)',
} as const);

export type BffErrorCode = keyof typeof BFF_ERROR_CODES;

export class BffError extends Error {
  constructor(readonly code: BffErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BffError';
  }
}
