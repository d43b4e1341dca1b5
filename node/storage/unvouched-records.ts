// What a node deletes when it opens a store its rollback anchor does not vouch for (sealed-store.ts
// `discardUnvouched`, docs/storage.md "Rollback anchor"): every record whose reuse could leak a secret
// if the store were an older copy. ECDSA OT setups and their retirement records (an old copy would
// un-retire pairs a peer probed, one more guess at Δ each time), and the pool entries made ahead
// (presignatures, precommitted FROST nonces, single use only while the anchor holds). A fresh OT setup
// and fresh pool entries follow; shares, committees, claims and used marks stay.
import { PRESIGNATURE_PREFIX } from './presignature-store.ts';
import { FROST_NONCE_PREFIX } from './frost-nonce-store.ts';

const OT_RECORD = /^key\/[^/]+\/current\/ot(-retired)?$/;

export function isUnvouchedDiscard(key: string): boolean {
  return OT_RECORD.test(key) || key.startsWith(`${PRESIGNATURE_PREFIX}/`) || key.startsWith(`${FROST_NONCE_PREFIX}/`);
}
