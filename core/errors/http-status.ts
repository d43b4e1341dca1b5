// The HTTP status of an error (docs/architecture.md "Error model"): one status per kind, and a few codes
// whose status is more exact than their kind's. The API's error handler (api/errors.ts) is the only
// server code that turns an error into a status; the SDK reads the table backwards to give an HTTP
// answer its kind. Nothing that throws names a status.
import { ERROR_CODES, type ErrorCode } from './error-codes.ts';
import type { ErrorKind } from './error-kinds.ts';

export const HTTP_STATUS_BY_KIND: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthenticated: 401,
  refused: 403,
  not_found: 404,
  conflict: 409,
  limited: 429,
  aborted: 502,
  unavailable: 503,
  transport: 502,
  bug: 500,
};

/** Codes answered with another status than their kind's (the platform API's 413, 415 and 422). */
export const HTTP_STATUS_BY_CODE: Readonly<Partial<Record<ErrorCode, number>>> = {
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  unknown_event: 422,
  email_domain_invalid: 422,
  address_proof_invalid: 422,
  safe_tx_mismatch: 422,
  safe_signature_invalid: 422,
  call_intent_mismatch: 422,
  mint_not_allowed: 422,
  mint_cap_exceeded: 422,
  not_token_holder: 422,
  token_call_reverted: 422,
  gasless_unavailable: 422,
  forward_signature_invalid: 422,
  gasless_would_revert: 422,
  module_call_mismatch: 422,
  module_call_refused: 422,
  asset_schema_invalid: 422,
  field_value_invalid: 422,
  attestation_signature_invalid: 422,
  precondition_failed: 412,
  precondition_required: 428,
};

/** The status a registered code is answered with. */
export function httpStatusOfCode(code: ErrorCode): number {
  return HTTP_STATUS_BY_CODE[code] ?? HTTP_STATUS_BY_KIND[ERROR_CODES[code].kind];
}

/**
 * The kind an HTTP error status stands for, read from the table backwards: the one kind whose registered
 * codes are answered with it. Undefined where two kinds share a status (502: aborted or transport) and
 * for a status the table does not give (an older or newer server, a proxy).
 */
export function kindOfHttpStatus(status: number): ErrorKind | undefined {
  const kinds = new Set<ErrorKind>();
  for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) if (httpStatusOfCode(code) === status) kinds.add(ERROR_CODES[code].kind);
  return kinds.size === 1 ? [...kinds][0] : undefined;
}
