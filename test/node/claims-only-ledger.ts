// For session tests whose grants are not real intents: a ledger that records no intent but writes what
// rides in its claim's synced batch (the session id's claim, a pooled signing's take), as the real
// IntentLedger does. Dropping that batch would hand out pool entries never written off, which the
// pool's `finish` refuses.
import type { BatchOp, SealedStore } from '../../node/storage/sealed-store.ts';

export function claimsOnlyLedger(store: SealedStore): { claim(grant: unknown, alsoWrite?: BatchOp[]): Promise<void> } {
  return {
    async claim(_grant, alsoWrite = []) {
      if (alsoWrite.length) await store.batch(alsoWrite);
    },
  };
}
