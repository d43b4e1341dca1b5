// A node's id, derived from its Ed25519 signing key: the nodes, the coordinator, rosters and trust
// entries all name nodes by it, so every side must derive it the same way.
import { taggedHash } from '../codec/transcript.ts';
import { toHex } from '../../common/bytes.ts';

/** `n` followed by 20 hex characters of a tagged hash of the Ed25519 public key. */
export function nodeIdFor(signingKey: Uint8Array): string {
  return 'n' + toHex(taggedHash('mpc/v1/node-id', [signingKey])).slice(0, 20);
}
