// The kinds every error of the system falls into (STYLE.md habit 4; viem's BaseError, cggmp21's split
// into aborted-with-blame, I/O and bug). A kind says what the caller can do about the error; the code
// (core/errors/error-codes.ts) says exactly what happened. Edges map kinds to statuses: gRPC in
// core/rpc/rpc-error.ts, HTTP in api/errors.ts. Nothing else names a status.

export const ERROR_KINDS = [
  /** The caller's input is malformed or out of range; sending it again changes nothing. */
  'invalid',
  /** The caller did not prove who it is (missing or bad request signature). */
  'unauthenticated',
  /** A check refused the operation: policy, limits, authorization, an intent already used. */
  'refused',
  /** The named thing does not exist, or is not visible to the caller. */
  'not_found',
  /** The thing exists but its state does not allow the operation (or it exists already). */
  'conflict',
  /** A quota or rate limit was reached; retry later. */
  'limited',
  /** A protocol run stopped because a party misbehaved; `culprits` names who. */
  'aborted',
  /** A dependency is not there now (a node not attached, a backend not configured); retry later. */
  'unavailable',
  /** Talking to another process or service failed (gRPC, a chain backend, a provider). */
  'transport',
  /** A broken invariant of our own. */
  'bug',
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];
