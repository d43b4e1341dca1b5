// A reshare receiver's receipt (docs/sessions.md "Reshare, two phases"): the statement a member of the
// new committee signs with its node identity key once its share of the new epoch is on its disk. A
// node promotes a pending epoch, or retires the share it dealt away, only on receipts of a signing
// threshold of the new committee, each checked against the identity key the node itself pinned for
// that member: a coordinator's word is not evidence that a reshare completed.
import { taggedHash } from '../codec/transcript.ts';
import type { KeyPackage } from './key-package.ts';

const TAG = 'custody/epoch-receipt/v1';

/**
 * The 32 bytes a receipt signs: the key, the epoch and every public value of its package (group key,
 * threshold, parties, verification shares in party order, group commitment, chain code), so a receipt
 * vouches for exactly one epoch of one key, as that reshare made it.
 */
export function epochReceiptStatement(pkg: KeyPackage): Uint8Array {
  const shares = [...pkg.parties].sort((a, b) => a - b).map((p) => `${p}:${pkg.verificationShares[String(p)] ?? ''}`);
  return taggedHash(TAG, [pkg.keyId, pkg.epoch, pkg.threshold, pkg.parties.join(','), pkg.groupKey, shares.join(','), pkg.groupCommitment.join(','), pkg.chainCode]);
}
