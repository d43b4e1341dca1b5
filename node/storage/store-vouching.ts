// How a node program opens its store against its rollback anchor (docs/storage.md "Rollback anchor"):
// outside development mode an open the anchor does not vouch for is refused, unless the operator
// accepts it for this start (NODE_STORE_ACCEPT_UNVOUCHED); an accepted one deletes the records whose
// reuse could leak a secret (unvouched-records.ts).
import type { NodeConfig } from '../config.ts';
import type { SealedStoreOptions } from './sealed-store.ts';
import { isUnvouchedDiscard } from './unvouched-records.ts';

export function storeVouching(config: Pick<NodeConfig, 'development' | 'storeAcceptUnvouched' | 'storeAdopt'>): SealedStoreOptions {
  return { adoptUnheaded: config.storeAdopt, discardUnvouched: isUnvouchedDiscard, requireVouched: !config.development && !config.storeAcceptUnvouched };
}
