// Instance session ids of a multi-digest signing session: each digest's run binds its own id.
import { taggedHash } from '../../../core/codec/transcript.ts';

/** A distinct session id per digest of a multi-digest session. */
export function sessionDigest(sessionId: Uint8Array, i: number): Uint8Array {
  return taggedHash('custody/sign/instance/v1', [sessionId, String(i)]);
}
