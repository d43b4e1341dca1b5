// Session ids: 32 bytes, fresh for every session the coordinator opens, and bound to the caller's
// request (docs/sessions.md "Request ids"). Nodes claim each signing session id on disk and never accept
// one twice, and the protocols hash it into every transcript; the 32 fresh random bytes keep it
// unpredictable and unique whatever the request id, which only ties the session to the work it is for.
import { randomBytes } from 'node:crypto';
import { taggedHash } from '../../core/codec/transcript.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';

export const SESSION_ID_TAG = 'custody/session-id/v1';

/** SHA-256 over the tag, the request id (may be empty), the session's ordinal within the request and 32 fresh bytes. */
export function deriveSessionId(requestId: string, attempt: number, fresh: Uint8Array = new Uint8Array(randomBytes(32))): Uint8Array {
  if (fresh.length !== 32) throw new CustodyError('bug', 'a session id takes 32 fresh bytes');
  return taggedHash(SESSION_ID_TAG, [requestId, attempt, fresh]);
}
