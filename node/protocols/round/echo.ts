// Echo-broadcast consistency (Goldwasser-Lindell echo broadcast, as the DKG uses it): a value that a
// party broadcasts over point-to-point links is echoed in the next round as a digest of what each
// receiver saw from each sender. A sender that told different peers different things is caught by
// every honest party whose digest differs from a reported one. Who is named: a differing digest only
// shows that the reporter or the subject lied, so both are named; when the subject is the reporter
// itself or the verifying party (whose own values are known), the reporter alone.
import { type Part } from '../../../core/codec/transcript.ts';
import { ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import { noblePrimitives, taggedHashHexWith, type Primitives } from '../math/primitives.ts';

/**
 * Digest of party `from`'s broadcast values as this party received them (domain-separated, session-bound),
 * its SHA-256 from the given provider (the same digest from any).
 */
export function echoDigest(tag: string, context: string, from: number, parts: Part[], prims: Primitives = noblePrimitives): string {
  return taggedHashHexWith(prims, tag, [context, from, ...parts]);
}

/**
 * Compares the digests `reporter` echoed with ours (`me` is the verifying party), party by party, and
 * aborts on a difference. A difference about `me` or about the reporter's own values proves the
 * reporter dishonest: it is named alone. A difference about a third party p means that p equivocated
 * or that the reporter lies about what it received: both are named, never p alone, so a lying reporter
 * cannot get an honest party named by itself. `what` describes the values, for the message.
 */
export function checkEcho(mine: Record<string, string>, reported: unknown, reporter: number, me: number, what: string): void {
  if (typeof reported !== 'object' || reported === null) throw new ProtocolAbort('bad_message', [reporter], `party ${reporter}: malformed echo`);
  const theirs = reported as Record<string, unknown>;
  const differs = Object.keys(mine).filter((party) => theirs[party] !== mine[party]).map(Number);
  if (!differs.length) return;
  const self = differs.find((p) => p === me || p === reporter);
  if (self !== undefined) {
    const whose = self === me ? 'ours' : 'its own';
    throw new ProtocolAbort('equivocation', [reporter], `party ${reporter} echoed ${what} of party ${self} (${whose}) that differ from what was sent`);
  }
  const subject = differs[0]!;
  throw new ProtocolAbort('equivocation', [reporter, subject].sort((a, b) => a - b), `party ${reporter} echoed other ${what} of party ${subject} than we received: one of them is dishonest`);
}
