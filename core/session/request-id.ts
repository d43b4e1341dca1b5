// The id of the caller's work a session is for (coordinator.proto `request_id`, docs/sessions.md
// "Request ids"): the API sends the transaction id for a signing and the vault and job ids for a key
// generation or reshare. The coordinator binds it into the session ids it derives and both sides put it
// in every log line about the session; it authorizes nothing.
import { CustodyError } from '../errors/custody-error.ts';

export const MAX_REQUEST_ID = 128;
const REQUEST_ID = /^[A-Za-z0-9._:-]*$/;

/** Whether `id` is a request id: empty (none), or at most 128 characters of [A-Za-z0-9._:-]. */
export function isRequestId(id: unknown): id is string {
  return typeof id === 'string' && id.length <= MAX_REQUEST_ID && REQUEST_ID.test(id);
}

/** `id` when it is a request id; otherwise throws CustodyError('invalid_request'). */
export function checkRequestId(id: unknown): string {
  if (!isRequestId(id)) throw new CustodyError('invalid_request', `request_id is at most ${MAX_REQUEST_ID} characters of [A-Za-z0-9._:-]`);
  return id;
}
