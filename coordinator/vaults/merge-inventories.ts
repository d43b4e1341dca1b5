// Which key record the nodes' inventories support (docs/operations.md "Rebuilding a coordinator's
// records"). Pure: answers in, records and reasons out. A node may lie, so a record is adopted only when
// at least `threshold` members of the committee it names report exactly it, and no member that answered
// says otherwise; the highest such epoch wins (a reshare this coordinator missed). A threshold of at
// least two and the tier's shape (what every node checks before it joins a committee) keep one lying
// node from vouching for a committee of its own.
import { hexToBytes } from '@noble/hashes/utils.js';
import type { InventoryKey, InventoryMember } from '../../core/link/inventory.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import { epochReceiptStatement } from '../../core/session/epoch-receipt.ts';
import { verifyEd25519 } from '../../common/ed25519.ts';

/** One node's complete answer: its id and signing key as it attached, and every key it reported. */
export interface NodeReport {
  nodeId: string;
  /** Hex, the key the node proved on its link. */
  signingKey: string;
  keys: ReadonlyMap<string, InventoryKey>;
}

/** A key record as the nodes support it. */
export interface RebuiltKey {
  vaultId: string;
  owner: string;
  tier: string;
  threshold: number;
  committee: { nodeId: string; index: number }[];
  epoch: number;
  publicKey: string;
  chainCode: string;
  pkg: KeyPackage;
  /** Valid receipts of the epoch, one per member (hex signatures); empty for a generated key. */
  receipts: { party: number; signature: string }[];
  /** The members that reported exactly this record. */
  confirmedBy: string[];
}

export type MergeOutcome = { vaultId: string; rebuilt: RebuiltKey } | { vaultId: string; reason: string };

interface Candidate {
  key: InventoryKey & { current: NonNullable<InventoryKey['current']> };
  reporters: string[];
}

/** What must match for two reports to be the same record (receipts aside: each member holds its own copy). */
function identity(k: InventoryKey & { current: NonNullable<InventoryKey['current']> }): string {
  return JSON.stringify([k.owner, k.tier, k.current.pkg, k.current.committee]);
}

/** The tier's committee shape, as nodes check it: hosted three members, self and customer_tee two; any two sign. */
function shapeProblem(tier: string, committee: readonly InventoryMember[], threshold: number): string | undefined {
  const size = tier === 'hosted' ? 3 : 2;
  if (committee.length !== size || threshold !== 2) return `a ${tier} committee of ${committee.length} with threshold ${threshold} is not one nodes join (${size} members, threshold 2)`;
  return undefined;
}

export function mergeInventories(vaultIds: readonly string[], reports: readonly NodeReport[]): MergeOutcome[] {
  return vaultIds.map((vaultId) => mergeOne(vaultId, reports));
}

function mergeOne(vaultId: string, reports: readonly NodeReport[]): MergeOutcome {
  const skip = (reason: string): MergeOutcome => ({ vaultId, reason });
  const candidates = new Map<string, Candidate>();
  for (const r of reports) {
    const k = r.keys.get(vaultId);
    if (!k?.current) continue;
    const key = k as Candidate['key'];
    const id = identity(key);
    const c = candidates.get(id);
    if (c) c.reporters.push(r.nodeId);
    else candidates.set(id, { key, reporters: [r.nodeId] });
  }
  if (!candidates.size) return skip(reports.some((r) => r.keys.has(vaultId)) ? 'no answering node holds a committed epoch of it' : 'no answering node holds it');
  const all = [...candidates.values()].sort((a, b) => b.key.current.pkg.epoch - a.key.current.pkg.epoch);
  const top = all[0]!;
  const { pkg, committee } = top.key.current;
  const rivals = all.filter((c) => c !== top && c.key.current.pkg.epoch === pkg.epoch);
  if (rivals.length) {
    return skip(`nodes disagree on epoch ${pkg.epoch}: ${[top, ...rivals].map((c) => c.reporters.join(', ')).join(' against ')}`);
  }
  const otherKey = all.find((c) => c.key.current.pkg.groupKey !== pkg.groupKey || c.key.current.pkg.chainCode !== pkg.chainCode || c.key.owner !== top.key.owner);
  if (otherKey) return skip(`nodes report different keys or owners under this id: ${top.reporters.join(', ')} against ${otherKey.reporters.join(', ')}`);
  const shape = shapeProblem(top.key.tier, committee, pkg.threshold);
  if (shape) return skip(`epoch ${pkg.epoch} as ${top.reporters.join(', ')} report it: ${shape}`);

  const byId = new Map(reports.map((r) => [r.nodeId, r]));
  const confirmed: string[] = [];
  const contradictions: string[] = [];
  for (const m of committee) {
    const r = byId.get(m.nodeId);
    if (!r) continue;
    if (r.signingKey !== m.signingKey) {
      contradictions.push(`${m.nodeId} attached with another key than the committee pins`);
      continue;
    }
    const k = r.keys.get(vaultId);
    if (k?.current && identity(k as Candidate['key']) === identity(top.key)) confirmed.push(m.nodeId);
    // A member that missed the commit still holds the epoch as pending: behind, not against. One that
    // holds nothing of the key claims nothing else either: it just does not confirm.
    else if (!k || (k.pendingEpoch === pkg.epoch && (!k.current || k.current.pkg.epoch < pkg.epoch))) continue;
    else contradictions.push(`${m.nodeId} holds ${k.current ? `epoch ${k.current.pkg.epoch}${k.current.pkg.epoch === pkg.epoch ? ' with another package' : ''}` : `only a pending epoch ${k.pendingEpoch ?? 0}`}`);
  }
  if (contradictions.length) return skip(`members disagree with epoch ${pkg.epoch} as ${top.reporters.join(', ')} report it: ${contradictions.join('; ')}`);
  if (confirmed.length < pkg.threshold) {
    return skip(`only ${confirmed.length} of the ${pkg.threshold} committee members needed confirm epoch ${pkg.epoch}${confirmed.length ? ` (${confirmed.join(', ')})` : ''}`);
  }
  return {
    vaultId,
    rebuilt: {
      vaultId, owner: top.key.owner, tier: top.key.tier, threshold: pkg.threshold, committee: committee.map((m) => ({ nodeId: m.nodeId, index: m.index })),
      epoch: pkg.epoch, publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg, receipts: receiptsOf(pkg, committee, confirmed.map((n) => byId.get(n)!.keys.get(vaultId)!)),
      confirmedBy: confirmed,
    },
  };
}

/** The valid receipts any confirming member holds, one per party. */
function receiptsOf(pkg: KeyPackage, committee: readonly InventoryMember[], keys: readonly InventoryKey[]): { party: number; signature: string }[] {
  const statement = epochReceiptStatement(pkg);
  const good = new Map<number, string>();
  for (const r of keys.flatMap((k) => k.current?.receipts ?? [])) {
    const m = committee.find((c) => c.index === r.party);
    if (m && !good.has(r.party) && verifyEd25519(hexToBytes(r.signature), statement, hexToBytes(m.signingKey))) good.set(r.party, r.signature);
  }
  return [...good].sort((a, b) => a[0] - b[0]).map(([party, signature]) => ({ party, signature }));
}
