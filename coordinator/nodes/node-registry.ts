// The coordinator's view of signer nodes: every node that ever attached (persisted, with its identity
// keys pinned) and the ones attached now. A node id is derived from its signing key, so a node that
// presents another key under a known id is refused.
import type { Level } from 'level';
import { EventEmitter } from 'node:events';
import { fromHex, toHex } from '../../common/bytes.ts';

import type { NodeKindName } from '../../core/link/node-kind.ts';
export type { NodeKindName };

export interface KnownNode {
  nodeId: string;
  kind: NodeKindName;
  owner: string;
  signingKey: Uint8Array;
  encryptionKey: Uint8Array;
  firstSeenMs: number;
}

export interface AttachedNodeInfo extends KnownNode {
  attachedAtMs: number;
  connectionId: string;
  /** The inventory exchange version the node said it answers (core/link/inventory.ts); 0: none. */
  inventoryVersion?: number | undefined;
}

interface StoredNode {
  v: 1;
  nodeId: string;
  kind: NodeKindName;
  owner: string;
  signingKey: string;
  encryptionKey: string;
  firstSeenMs: number;
}

export class NodeRegistry extends EventEmitter<{ change: [AttachedNodeInfo[]]; left: [string] }> {
  private readonly attached = new Map<string, AttachedNodeInfo & { detach: () => void; send: (msg: never) => void }>();

  constructor(private readonly db: Level<string, string>) {
    super();
  }

  async known(nodeId: string): Promise<KnownNode | undefined> {
    const raw = await this.db.get(`node/${nodeId}`);
    if (raw === undefined) return undefined;
    const s = JSON.parse(raw) as StoredNode;
    return { nodeId: s.nodeId, kind: s.kind, owner: s.owner, signingKey: fromHex(s.signingKey), encryptionKey: fromHex(s.encryptionKey), firstSeenMs: s.firstSeenMs };
  }

  async remember(node: KnownNode): Promise<void> {
    const s: StoredNode = {
      v: 1, nodeId: node.nodeId, kind: node.kind, owner: node.owner,
      signingKey: toHex(node.signingKey), encryptionKey: toHex(node.encryptionKey), firstSeenMs: node.firstSeenMs,
    };
    await this.db.put(`node/${node.nodeId}`, JSON.stringify(s));
  }

  /** Marks a node attached. A previous stream of the same node (a restart the server has not noticed yet) is closed. */
  attach<M>(info: AttachedNodeInfo, detach: () => void, send: (msg: M) => void): void {
    const prev = this.attached.get(info.nodeId);
    this.attached.set(info.nodeId, { ...info, detach, send: send as (msg: never) => void });
    if (prev && prev.connectionId !== info.connectionId) {
      prev.detach();
      this.emit('left', info.nodeId);
    }
    this.emit('change', this.list());
  }

  /** Removes a node if this connection is still the current one. */
  detach(nodeId: string, connectionId: string): boolean {
    const cur = this.attached.get(nodeId);
    if (!cur || cur.connectionId !== connectionId) return false;
    this.attached.delete(nodeId);
    this.emit('change', this.list());
    this.emit('left', nodeId);
    return true;
  }

  /** Writes a message on the node's current stream; false when it is not attached. */
  send<M>(nodeId: string, msg: M): boolean {
    const cur = this.attached.get(nodeId);
    if (!cur) return false;
    (cur.send as (m: M) => void)(msg);
    return true;
  }

  get(nodeId: string): AttachedNodeInfo | undefined {
    const cur = this.attached.get(nodeId);
    if (!cur) return undefined;
    const { detach: _d, send: _s, ...info } = cur;
    return info;
  }

  list(): AttachedNodeInfo[] {
    return [...this.attached.values()]
      .map(({ detach: _detach, send: _send, ...info }) => info)
      .sort((a, b) => a.nodeId.localeCompare(b.nodeId));
  }

  isAttached(nodeId: string): boolean {
    return this.attached.has(nodeId);
  }
}
