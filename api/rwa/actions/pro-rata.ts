// The arithmetic of distributions and corporate actions (docs/platform/rwa.md "Distributions and corporate
// actions"): integers only. A holder's share of `total` is floor(total × units / supply); what the floors
// leave (less than one base unit per holder) is the remainder, which is never sent and stays in the admin
// Safe. A split of n:d gives each holder floor(units × (n − d) / d) new units. Holders are in address order,
// so the same cap table always gives the same plan and the same batches.
import type { Hex } from 'viem';

export interface Share { holder: Hex; units: bigint; amount: bigint }

export interface ProRata {
  /** Holders with a payout above zero, in address order. */
  shares: Share[];
  /** The units counted: every holder's at the record block, the excluded left out. */
  supply: bigint;
  paid: bigint;
  /** total − paid: stays where the payout came from. */
  remainder: bigint;
}

const byAddress = (a: [Hex, bigint], b: [Hex, bigint]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/** The holders to count: positive balances, lower-case, `exclude` left out, in address order. */
export function holdersOf(balances: ReadonlyMap<Hex, bigint>, exclude: readonly string[] = []): [Hex, bigint][] {
  const out = new Set(exclude.map((a) => a.toLowerCase()));
  return [...balances].map(([a, u]): [Hex, bigint] => [a.toLowerCase() as Hex, u]).filter(([a, u]) => u > 0n && !out.has(a)).sort(byAddress);
}

/** `total` split over `balances` pro rata, floor per holder. */
export function proRata(total: bigint, balances: ReadonlyMap<Hex, bigint>, exclude: readonly string[] = []): ProRata {
  if (total <= 0n) throw new RangeError('the total must be above zero');
  const holders = holdersOf(balances, exclude);
  const supply = holders.reduce((s, [, u]) => s + u, 0n);
  if (supply === 0n) return { shares: [], supply, paid: 0n, remainder: total };
  const shares = holders.map(([holder, units]) => ({ holder, units, amount: (total * units) / supply })).filter((s) => s.amount > 0n);
  const paid = shares.reduce((s, x) => s + x.amount, 0n);
  return { shares, supply, paid, remainder: total - paid };
}

/** A split of `numerator`:`denominator` (numerator above denominator): the units minted to each holder. */
export function splitShares(numerator: bigint, denominator: bigint, balances: ReadonlyMap<Hex, bigint>, exclude: readonly string[] = []): ProRata {
  if (denominator <= 0n || numerator <= denominator) throw new RangeError('a split needs numerator > denominator > 0');
  const holders = holdersOf(balances, exclude);
  const supply = holders.reduce((s, [, u]) => s + u, 0n);
  const shares = holders.map(([holder, units]) => ({ holder, units, amount: (units * (numerator - denominator)) / denominator })).filter((s) => s.amount > 0n);
  const paid = shares.reduce((s, x) => s + x.amount, 0n);
  // What the floors leave is not minted: exact new supply would be supply × n / d.
  return { shares, supply, paid, remainder: (supply * (numerator - denominator)) / denominator - paid };
}

/** A redemption at `price` base units of the payout asset per unit: each holder's units burned and paid units × price. */
export function redemptionShares(price: bigint, balances: ReadonlyMap<Hex, bigint>, exclude: readonly string[] = []): ProRata {
  if (price <= 0n) throw new RangeError('the price must be above zero');
  const holders = holdersOf(balances, exclude);
  const supply = holders.reduce((s, [, u]) => s + u, 0n);
  const shares = holders.map(([holder, units]) => ({ holder, units, amount: units * price }));
  return { shares, supply, paid: supply * price, remainder: 0n };
}

/** `items` in consecutive batches of at most `size`. */
export function batchesOf<T>(items: readonly T[], size: number): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError('a batch size of at least 1');
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
