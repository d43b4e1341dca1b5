// The inventory exchange on the node link (proto/mpc/v1/node_link.proto, docs/transport.md "Inventory"):
// the coordinator asks which keys a node holds, the node answers with public data only, page by page.
// Both ends read the wire through here; the coordinator checks every field, since a node may lie.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { InventoryEntry, InventoryPage } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { InventoryEntrySchema } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { readKeyPackage, MAX_SESSION_PARTIES, type KeyPackage } from '../session/key-package.ts';
import { InputError } from '../errors/protocol-errors.ts';
import { TIER_NAMES } from '../tiers.ts';

/** The version of the exchange this code speaks (InventoryRequest.version, Hello.inventory_version). */
export const INVENTORY_VERSION = 1;

/** At most this many keys in one page, and named in one request. */
export const INVENTORY_PAGE_MAX = 100;

export interface InventoryMember {
  index: number;
  nodeId: string;
  /** Hex, as the node pinned it. */
  signingKey: string;
  encryptionKey: string;
}

/** One key as a node reports it, checked. */
export interface InventoryKey {
  keyId: string;
  owner: string;
  tier: string;
  /** The committed epoch the node holds, if any. */
  current?: { pkg: KeyPackage; committee: InventoryMember[]; receipts: { party: number; signature: string }[] } | undefined;
  /** A pending epoch of a reshare not committed here. */
  pendingEpoch?: number | undefined;
}

const bad = (what: string, problem: string): never => {
  throw new InputError('invalid_request', `inventory ${what}: ${problem}`);
};

const hexOf = (b: Uint8Array, what: string, len: number): string => (b.length === len ? bytesToHex(b) : bad(what, `must be ${len} bytes`));

/** Reads one entry of a node's page; throws InputError naming the field when it is malformed. */
export function readInventoryEntry(e: InventoryEntry): InventoryKey {
  if (!e.keyId || e.keyId.length > 128) bad('key_id', '1 to 128 characters');
  if (e.owner.length > 128) bad(`${e.keyId}.owner`, 'at most 128 characters');
  if (e.tier && !(TIER_NAMES as readonly string[]).includes(e.tier)) bad(`${e.keyId}.tier`, `one of ${TIER_NAMES.join(', ')}`);
  const out: InventoryKey = { keyId: e.keyId, owner: e.owner, tier: e.tier || 'hosted' };
  if (e.pendingEpoch) out.pendingEpoch = e.pendingEpoch;
  if (!e.hasCurrent) {
    if (!out.pendingEpoch) bad(e.keyId, 'neither a current nor a pending epoch');
    return out;
  }
  if (e.package.length > 64 * 1024) bad(`${e.keyId}.package`, 'too long');
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(e.package));
  } catch {
    bad(`${e.keyId}.package`, 'not JSON');
  }
  const pkg = readKeyPackage(raw, `${e.keyId}.package`);
  if (pkg.keyId !== e.keyId) bad(`${e.keyId}.package`, `names key ${pkg.keyId}`);
  if (e.committee.length === 0 || e.committee.length > MAX_SESSION_PARTIES) bad(`${e.keyId}.committee`, `1 to ${MAX_SESSION_PARTIES} members`);
  const committee = e.committee.map((m, i) => ({
    index: m.index, nodeId: m.nodeId || bad(`${e.keyId}.committee[${i}].node_id`, 'empty'),
    signingKey: hexOf(m.signingKey, `${e.keyId}.committee[${i}].signing_key`, 32), encryptionKey: hexOf(m.encryptionKey, `${e.keyId}.committee[${i}].encryption_key`, 32),
  }));
  const indexes = committee.map((m) => m.index).sort((a, b) => a - b);
  if (new Set(committee.map((m) => m.nodeId)).size !== committee.length || indexes.join() !== [...pkg.parties].sort((a, b) => a - b).join()) {
    bad(`${e.keyId}.committee`, 'its members and indexes are not the package\'s parties');
  }
  if (e.receipts.length > MAX_SESSION_PARTIES) bad(`${e.keyId}.receipts`, 'too many');
  const receipts = e.receipts.map((r, i) => ({ party: r.party, signature: hexOf(r.signature, `${e.keyId}.receipts[${i}]`, 64) }));
  out.current = { pkg, committee: committee.sort((a, b) => a.index - b.index), receipts };
  return out;
}

/** A node's entry for the wire, from what it stores (public parts only). */
export function inventoryEntry(k: InventoryKey): MessageInitShape<typeof InventoryEntrySchema> {
  return {
    keyId: k.keyId, owner: k.owner, tier: k.tier, hasCurrent: k.current !== undefined,
    package: k.current ? new TextEncoder().encode(JSON.stringify(k.current.pkg)) : new Uint8Array(),
    committee: (k.current?.committee ?? []).map((m) => ({ index: m.index, nodeId: m.nodeId, signingKey: hexToBytes(m.signingKey), encryptionKey: hexToBytes(m.encryptionKey) })),
    pendingEpoch: k.pendingEpoch ?? 0,
    receipts: (k.current?.receipts ?? []).map((r) => ({ party: r.party, signature: hexToBytes(r.signature) })),
  };
}

export type { InventoryPage };
