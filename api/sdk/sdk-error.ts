// The errors the SDK and the command-line client raise themselves, each with a stable code from one
// documented set (docs/sdk.md "Errors"), beside CustodyApiError, which carries the API's own code. A
// caller branches on `code`, never on a message.

/** The codes raised on the client side, with what each means (docs/sdk.md lists the same). */
export const SDK_ERROR_CODES = Object.freeze({
  usage: 'a command-line invocation is wrong (exit status 2)',
  invalid_config: 'a setting is missing or malformed (exit status 2)',
  network: 'the API (or the regtest service) could not be reached',
  timeout: 'a wait ran out before the vault or transaction got there',
  bad_intent: 'the intent cannot be built from these parameters (a wallet of another chain, an address or amount the intent format refuses)',
  insufficient_funds: 'the wallet\'s unspent outputs do not cover the outputs plus the fee ceiling',
  bad_response: 'an answer that is not the API\'s (not JSON, or longer than maxResponseBytes: a proxy, a wrong URL)',
  not_signed: 'a Safe owner signature waited for ended without one (rejected or failed: the message carries its reason), or the transaction is not one',
  regtest_refused: 'the local regtest service refused a faucet or mining request (its message says why)',
  internal: 'an unexpected failure inside the SDK or the command-line client: a bug to report',
} as const);

export type SdkErrorCode = keyof typeof SDK_ERROR_CODES;

export class SdkError extends Error {
  constructor(readonly code: SdkErrorCode, message: string, options: { cause?: unknown; status?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SdkError';
    this.status = options.status ?? null;
  }

  /** The HTTP status of a service that answered (regtest_refused), else null. */
  readonly status: number | null;
}

/**
 * The code of an API error answer that carries none (a proxy's page, an older server): the spec's
 * table (vault-api.md "Errors") by status.
 */
export function codeOfHttpStatus(status: number): string {
  const table: Record<number, string> = { 400: 'invalid_request', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 409: 'conflict', 413: 'payload_too_large', 415: 'unsupported_media_type', 429: 'rate_limited', 500: 'internal', 503: 'unavailable' };
  return table[status] ?? (status >= 500 ? 'unavailable' : 'invalid_request');
}
