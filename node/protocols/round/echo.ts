// Echo-broadcast consistency (Goldwasser-Lindell echo broadcast, as the DKG uses it): a value that a
// party broadcasts over point-to-point links is echoed in the next round as a digest of what each
// receiver saw from each sender. A sender that told different peers different things is caught by
// every honest party whose digest differs from a reported one, and named.
import { taggedHashHex, type Part } from '../math/transcript.ts';
import { ProtocolAbort } from './errors.ts';

/** Digest of party `from`'s broadcast values as this party received them (domain-separated, session-bound). */
export function echoDigest(tag: string, context: string, from: number, parts: Part[]): string {
  return taggedHashHex(tag, [context, from, ...parts]);
}

/**
 * Compares the digests `reporter` echoed with ours, party by party. A difference means the party it
 * is about sent different values to different peers: aborts naming that party (reported by
 * `reporter`). `what` describes the values, for the message.
 */
export function checkEcho(mine: Record<string, string>, reported: unknown, reporter: number, what: string): void {
  if (typeof reported !== 'object' || reported === null) throw new ProtocolAbort('bad_message', [reporter], `party ${reporter}: malformed echo`);
  const theirs = reported as Record<string, unknown>;
  for (const [party, digest] of Object.entries(mine)) {
    if (theirs[party] !== digest) throw new ProtocolAbort('equivocation', [Number(party)], `party ${party} sent different ${what} (reported by ${reporter})`);
  }
}
