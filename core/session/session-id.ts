// The session id's form (docs/sessions.md "Session ids"): 32 bytes, the first 8 the session's deadline
// as big-endian milliseconds since the epoch (the SessionOpen's deadline_ms), the other 24 fresh. An id
// thus carries its own expiry: a node refuses an open whose id is past, or further ahead than any
// session lasts, so an id whose time is behind a node's clock can never be accepted again and the
// node may forget that it claimed it (docs/storage.md "Pruning"). Ids sort by time as bytes and as hex.
import { CustodyError } from '../errors/custody-error.ts';
import type { ErrorCode } from '../errors/error-codes.ts';

export const SESSION_ID_BYTES = 32;
const TIME_BYTES = 8;
export const SESSION_ID_RANDOM_BYTES = SESSION_ID_BYTES - TIME_BYTES;

/**
 * How far ahead of a node's clock an id's deadline may lie. Longer than any session kind's timeout (the
 * coordinator's longest is 10 minutes, coordinator/config.ts), plus room for clocks that disagree.
 */
export const SESSION_ID_MAX_AHEAD_MS = 15 * 60_000;

/** The id of a session whose deadline is `deadlineMs`, with `fresh` (24 bytes) for the rest. */
export function sessionIdAt(deadlineMs: number, fresh: Uint8Array): Uint8Array<ArrayBuffer> {
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs < 0) throw new CustodyError('bug', 'a session deadline is a non-negative integer of milliseconds');
  if (fresh.length < SESSION_ID_RANDOM_BYTES) throw new CustodyError('bug', `a session id takes ${SESSION_ID_RANDOM_BYTES} fresh bytes`);
  const id = new Uint8Array(SESSION_ID_BYTES);
  new DataView(id.buffer).setBigUint64(0, BigInt(deadlineMs));
  id.set(fresh.subarray(0, SESSION_ID_RANDOM_BYTES), TIME_BYTES);
  return id;
}

/** The deadline an id carries, in milliseconds (a bigint: an id's 8 bytes may exceed a safe number). */
export function sessionIdTime(id: Uint8Array): bigint {
  if (id.length !== SESSION_ID_BYTES) throw new CustodyError('bad_session', `a session id is ${SESSION_ID_BYTES} bytes`);
  return new DataView(id.buffer, id.byteOffset, id.byteLength).getBigUint64(0);
}

/** The same for an id in lower-case hex (how claims name it). */
export function sessionIdTimeHex(idHex: string): bigint {
  if (!/^[0-9a-f]{64}$/.test(idHex)) throw new CustodyError('bad_session', 'a session id is 32 bytes of lower-case hex');
  return BigInt('0x' + idHex.slice(0, TIME_BYTES * 2));
}

/** The hex prefix of every id whose time is `ms`: ids of earlier times sort below it. */
export function sessionIdTimePrefix(ms: number | bigint): string {
  const t = typeof ms === 'bigint' ? ms : BigInt(Math.floor(ms));
  return (t < 0n ? 0n : t).toString(16).padStart(TIME_BYTES * 2, '0');
}

export interface SessionIdProblem {
  code: Extract<ErrorCode, 'bad_session' | 'session_expired'>;
  message: string;
}

/**
 * Why a node refuses to open a session with id `id` and deadline `deadlineMs` at `nowMs`, or undefined:
 * the id's time must be the deadline, not past, and at most SESSION_ID_MAX_AHEAD_MS ahead.
 */
export function sessionIdProblem(id: Uint8Array, deadlineMs: bigint, nowMs: number): SessionIdProblem | undefined {
  if (id.length !== SESSION_ID_BYTES) return { code: 'bad_session', message: `a session id is ${SESSION_ID_BYTES} bytes` };
  const at = sessionIdTime(id);
  if (at !== deadlineMs) return { code: 'bad_session', message: `the session id carries deadline ${at}, the open says ${deadlineMs}` };
  if (at < BigInt(Math.floor(nowMs))) return { code: 'session_expired', message: `the session id's deadline ${at} has passed (now ${Math.floor(nowMs)})` };
  if (at > BigInt(Math.floor(nowMs)) + BigInt(SESSION_ID_MAX_AHEAD_MS)) {
    return { code: 'bad_session', message: `the session id's deadline ${at} is more than ${SESSION_ID_MAX_AHEAD_MS / 60_000} minutes ahead (now ${Math.floor(nowMs)})` };
  }
  return undefined;
}
