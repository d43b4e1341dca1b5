// Session ids as the coordinator makes them (core/session/session-id.ts): the deadline in the first 8
// bytes, fresh bytes after. Tests that open sessions by hand use these, so that the open's deadline_ms
// is the id's and the node's checks of the id pass.
import { randomBytes } from 'node:crypto';
import { sessionIdAt, sessionIdTime, SESSION_ID_RANDOM_BYTES } from '../../core/session/session-id.ts';

/** A fresh id whose deadline is `timeoutMs` from `nowMs`. */
export const newSessionId = (timeoutMs = 60_000, nowMs = Date.now()): Uint8Array<ArrayBuffer> => sessionIdAt(nowMs + timeoutMs, new Uint8Array(randomBytes(SESSION_ID_RANDOM_BYTES)));

/** The deadline_ms a SessionOpen of `id` names. */
export const deadlineOf = (id: Uint8Array): bigint => sessionIdTime(id);

/** A fresh id in hex, as claims name it. */
export const newSessionIdHex = (timeoutMs = 60_000, nowMs = Date.now()): string => Buffer.from(newSessionId(timeoutMs, nowMs)).toString('hex');

/** The sessionId and deadlineMs fields of a SessionOpen for a fresh id. */
export const sessionIdFields = (timeoutMs = 60_000, nowMs = Date.now()): { sessionId: Uint8Array<ArrayBuffer>; deadlineMs: bigint } => {
  const sessionId = newSessionId(timeoutMs, nowMs);
  return { sessionId, deadlineMs: deadlineOf(sessionId) };
};
