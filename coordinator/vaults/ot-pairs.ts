// Which OT pairs of a vault's committee hold ECDSA material at the current epoch (docs/protocols/
// ecdsa.md "Per-pair setup"), and what that allows: a signer subset serves only when every pair in it
// has material, and a setup run covers exactly the pairs still missing. Pure: the record and a view of
// who is attached in, answers out.
import type { CommitteeMember, VaultRecord } from './vault-store.ts';

/** A pair's name as the record keeps it: "i-j", i < j, committee indices. */
export const pairName = (a: number, b: number): string => (a < b ? `${a}-${b}` : `${b}-${a}`);

/** Every pair among `members`. */
export function pairsAmong(members: readonly { index: number }[]): string[] {
  const ids = members.map((m) => m.index).sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < ids.length; i++) for (let j = i + 1; j < ids.length; j++) out.push(pairName(ids[i]!, ids[j]!));
  return out;
}

/**
 * The pairs with OT material at the vault's epoch. A record from before per-pair setups (otEpoch set,
 * no otPairs) had its setup run on the whole committee: every pair.
 */
export function otPairsOf(v: Pick<VaultRecord, 'epoch' | 'otEpoch' | 'otPairs' | 'committee'>): Set<string> {
  if (v.otEpoch !== v.epoch) return new Set();
  return new Set(v.otPairs ?? pairsAmong(v.committee));
}

/** Whether every pair of `subset` has material. */
export const pairsComplete = (have: ReadonlySet<string>, subset: readonly { index: number }[]): boolean => pairsAmong(subset).every((p) => have.has(p));

/**
 * Setup runs that cover exactly `missing` among `members`: each run is a group of members all of whose
 * pairs are missing (a run sets up every pair among its parties), grown greedily from the lowest pair
 * left. After a DKG that is one run on everyone attached; a member coming back gets one run with the
 * others if they are paired already among themselves, else a run per group.
 */
export function setupRuns<M extends CommitteeMember>(members: readonly M[], missing: ReadonlySet<string>): M[][] {
  const left = new Set(missing);
  const sorted = [...members].sort((a, b) => a.index - b.index);
  const runs: M[][] = [];
  for (const a of sorted) {
    for (const b of sorted) {
      if (b.index <= a.index || !left.has(pairName(a.index, b.index))) continue;
      const run = [a, b];
      for (const c of sorted) {
        if (run.includes(c)) continue;
        if (run.every((m) => left.has(pairName(m.index, c.index)))) run.push(c);
      }
      for (const p of pairsAmong(run)) left.delete(p);
      runs.push(run.sort((x, y) => x.index - y.index));
    }
  }
  return runs;
}

/** Why a vault cannot sign ECDSA now, when it cannot (docs/vault-api.md "Signing readiness"). */
export interface EcdsaReadiness {
  /** Whether some `threshold` attached members have material on every pair among them. */
  ready: boolean;
  /** `members_detached`: fewer than `threshold` members attached; `ot_pairs_missing`: enough attached, but no such subset has every pair set up. */
  reason?: 'members_detached' | 'ot_pairs_missing';
  /** Committee members not attached now (node ids). */
  detached: string[];
  /** Pairs among attached members that have no material, "i-j". */
  missingPairs: string[];
}

/** Whether the vault can sign ECDSA with the members attached now, and if not, why. */
export function ecdsaReadiness(v: Pick<VaultRecord, 'epoch' | 'otEpoch' | 'otPairs' | 'committee' | 'threshold'>, isAttached: (nodeId: string) => boolean): EcdsaReadiness {
  const attached = v.committee.filter((m) => isAttached(m.nodeId));
  const detached = v.committee.filter((m) => !isAttached(m.nodeId)).map((m) => m.nodeId);
  const have = otPairsOf(v);
  const missingPairs = pairsAmong(attached).filter((p) => !have.has(p));
  if (attached.length < v.threshold) return { ready: false, reason: 'members_detached', detached, missingPairs };
  if (someCompleteSubset(attached, v.threshold, have)) return { ready: true, detached, missingPairs };
  return { ready: false, reason: 'ot_pairs_missing', detached, missingPairs };
}

/** Whether some `size` of `members` have every pair among them in `have` (committees are small). */
export function someCompleteSubset(members: readonly { index: number }[], size: number, have: ReadonlySet<string>): boolean {
  const pick = (from: number, chosen: { index: number }[]): boolean => {
    if (chosen.length === size) return true;
    for (let i = from; i < members.length; i++) {
      const m = members[i]!;
      if (chosen.every((c) => have.has(pairName(c.index, m.index))) && pick(i + 1, [...chosen, m])) return true;
    }
    return false;
  };
  return size <= 1 ? members.length >= size : pick(0, []);
}

/** A readiness as one line for a record's `problem`-like fields and logs. */
export function describeReadiness(r: EcdsaReadiness): string | undefined {
  if (r.ready) return undefined;
  if (r.reason === 'members_detached') return `cannot sign ECDSA: too few committee members attached (not attached: ${r.detached.join(', ')})`;
  return `cannot sign ECDSA: no attached signer subset has OT material on every pair (missing: ${r.missingPairs.join(', ')})`;
}
