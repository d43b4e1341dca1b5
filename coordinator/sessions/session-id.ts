// Session ids: 32 bytes, fresh for every session the coordinator opens, and bound to the caller's
// request (docs/sessions.md "Session ids", "Request ids"). The first 8 bytes are the session's deadline
// (core/session/session-id.ts): nodes refuse an id whose deadline has passed, so they may forget their
// claims of old ones. The other 24 bytes are a tagged hash of the request id, the session's ordinal and
// 32 fresh random bytes: unpredictable and unique whatever the request id, which only ties the session
// to the work it is for. Nodes claim each signing session id on disk and the protocols hash it into
// every transcript.
import { randomBytes } from 'node:crypto';
import { taggedHash } from '../../core/codec/transcript.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { sessionIdAt } from '../../core/session/session-id.ts';

export const SESSION_ID_TAG = 'custody/session-id/v2';

/**
 * The deadline `deadlineMs`, then the first 24 bytes of SHA-256 over the tag, the request id (may be
 * empty), the session's ordinal within the request, the deadline and 32 fresh bytes.
 */
export function deriveSessionId(requestId: string, attempt: number, deadlineMs: number, fresh: Uint8Array = new Uint8Array(randomBytes(32))): Uint8Array {
  if (fresh.length !== 32) throw new CustodyError('bug', 'a session id takes 32 fresh bytes');
  return sessionIdAt(deadlineMs, taggedHash(SESSION_ID_TAG, [requestId, attempt, BigInt(deadlineMs), fresh]));
}
