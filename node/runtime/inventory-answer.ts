// A node's answer to the coordinator's inventory request (docs/transport.md "Inventory"): the keys it
// holds, public parts only, one bounded page at a time. Any coordinator the node attached to may ask; it
// learns nothing it could not see in the sessions it runs, and nothing it could sign with.
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { InventoryPageSchema, InventoryRequest } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { INVENTORY_PAGE_MAX, INVENTORY_VERSION, inventoryEntry } from '../../core/link/inventory.ts';
import type { VaultShareStore } from '../storage/vault-shares.ts';

export async function answerInventory(vault: VaultShareStore, req: InventoryRequest): Promise<MessageInitShape<typeof InventoryPageSchema>> {
  const base = { version: INVENTORY_VERSION, requestId: req.requestId };
  if (req.version !== INVENTORY_VERSION) {
    return { ...base, errorCode: 'invalid_request', errorMessage: `inventory version ${req.version} is not spoken here (want ${INVENTORY_VERSION})` };
  }
  if (req.keyIds.length > INVENTORY_PAGE_MAX) return { ...base, errorCode: 'invalid_request', errorMessage: `at most ${INVENTORY_PAGE_MAX} key ids in one request` };
  const limit = Math.min(INVENTORY_PAGE_MAX, Math.max(1, req.limit || INVENTORY_PAGE_MAX));
  const { keys, more } = await vault.inventory({ after: req.afterKeyId, limit, keyIds: req.keyIds });
  return { ...base, entries: keys.map(inventoryEntry), more };
}
