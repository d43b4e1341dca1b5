// The coordinator's side of the inventory exchange (docs/transport.md "Inventory"): asks one attached
// node which of some keys it holds, page by page, and reads each answer as untrusted input. A node from
// before the exchange (it did not announce it in its hello) is reported as such, not asked.
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AttachResponseSchema, InventoryPage } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { INVENTORY_PAGE_MAX, INVENTORY_VERSION, readInventoryEntry, type InventoryKey } from '../../core/link/inventory.ts';
import { InputError } from '../../core/errors/protocol-errors.ts';
import type { NodeRegistry } from './node-registry.ts';

export type InventoryAnswer =
  | { nodeId: string; status: 'answered'; signingKey: string; keys: InventoryKey[] }
  | { nodeId: string; status: 'unsupported' | 'failed'; reason: string };

/** At most this many pages from one node in one listing: a node cannot keep a rebuild busy forever. */
const MAX_PAGES = 1000;

export class InventoryClient {
  private readonly waiting = new Map<string, { nodeId: string; done: (page: InventoryPage | Error) => void }>();

  constructor(private readonly registry: NodeRegistry, private readonly timeoutMs = 10_000) {}

  /** A page from a node's link; one that answers no request of ours, or comes from another node, is dropped. */
  fromNode(nodeId: string, page: InventoryPage): void {
    const id = bytesToHex(page.requestId);
    const w = this.waiting.get(id);
    if (!w || w.nodeId !== nodeId) return;
    this.waiting.delete(id);
    w.done(page);
  }

  /** One request and its page, or an Error (detached, no answer in time). */
  private request(nodeId: string, body: { afterKeyId?: string; keyIds?: string[] }): Promise<InventoryPage | Error> {
    const requestId = new Uint8Array(randomBytes(16));
    const id = bytesToHex(requestId);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(new Error(`no inventory page within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.waiting.set(id, { nodeId, done: (p) => { clearTimeout(timer); resolve(p); } });
      const msg: MessageInitShape<typeof AttachResponseSchema> = { body: { case: 'inventoryRequest', value: { version: INVENTORY_VERSION, requestId, limit: INVENTORY_PAGE_MAX, ...body } } };
      if (!this.registry.send(nodeId, msg)) {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(new Error('not attached'));
      }
    });
  }

  /** What `nodeId` holds of `keyIds` (every key it holds when absent). */
  async ask(nodeId: string, keyIds?: readonly string[]): Promise<InventoryAnswer> {
    const node = this.registry.get(nodeId);
    if (!node) return { nodeId, status: 'failed', reason: 'not attached' };
    if (!node.inventoryVersion) return { nodeId, status: 'unsupported', reason: 'the node does not answer inventory requests (a node from before them)' };
    const keys: InventoryKey[] = [];
    const batches = keyIds ? chunks([...new Set(keyIds)], INVENTORY_PAGE_MAX).map((b) => ({ keyIds: b })) : undefined;
    let after = '';
    for (let i = 0; batches ? i < batches.length : i < MAX_PAGES; i++) {
      const page = await this.request(nodeId, batches ? batches[i]! : { afterKeyId: after });
      if (page instanceof Error) return { nodeId, status: 'failed', reason: page.message };
      if (page.errorCode) return { nodeId, status: 'failed', reason: `${page.errorCode}: ${page.errorMessage.slice(0, 200)}` };
      if (page.entries.length > INVENTORY_PAGE_MAX) return { nodeId, status: 'failed', reason: 'a page longer than asked' };
      try {
        for (const e of page.entries) {
          const k = readInventoryEntry(e);
          if (batches && !batches[i]!.keyIds.includes(k.keyId)) throw new InputError('invalid_request', `inventory: key ${k.keyId} was not asked for`);
          keys.push(k);
        }
      } catch (err) {
        if (err instanceof InputError) return { nodeId, status: 'failed', reason: err.message };
        throw err;
      }
      if (batches) continue;
      const last = page.entries.at(-1)?.keyId;
      if (!page.more || !last || `${last}/` <= `${after}/`) break;
      after = last;
    }
    return { nodeId, status: 'answered', signingKey: bytesToHex(node.signingKey), keys };
  }
}

function chunks<T>(list: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}
