// Errors of the browser package, each with a stable code (STYLE.md habit 4). A page branches on `code`:
// `signed_out` shows the sign-in, `refused` shows the BFF's (the API's) `apiCode`. The refusals of what
// the package never takes (`credential_refused`, `origin_refused`) are thrown before anything is sent.

export const BFF_BROWSER_ERROR_CODES = Object.freeze({
  credential_refused: 'an option, header or argument carries a credential (an API key, a provider proof, a session id, an access or refresh token, an authorization header): the browser never holds one, the BFF does',
  origin_refused: 'the BFF base is not of the page\'s origin: the browser package calls only its own same-origin BFF',
  invalid_argument: 'an option or argument the package does not know, or of the wrong shape',
  signed_out: 'no member session behind the browser\'s cookie: sign in',
  refused: 'the BFF (or the API behind it) refused the call; `apiCode` says why',
  unavailable: 'no answer from the BFF, or it could not reach the API; the outcome of a write is unknown',
  bad_response: 'the BFF answered something that is not the JSON the call expects',
} as const);

export type BffBrowserErrorCode = keyof typeof BFF_BROWSER_ERROR_CODES;

export class BffBrowserError extends Error {
  /** The HTTP status of the BFF's answer, when there was one. */
  readonly status: number | undefined;
  /** The BFF's error code (for `refused`, the API's: `consent_version_mismatch`, `not_found`, …). */
  readonly apiCode: string | undefined;
  constructor(readonly code: BffBrowserErrorCode, message: string, extra: { status?: number; apiCode?: string; cause?: unknown } = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'BffBrowserError';
    this.status = extra.status;
    this.apiCode = extra.apiCode;
  }
}
