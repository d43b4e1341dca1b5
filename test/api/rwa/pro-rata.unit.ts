// The arithmetic of distributions and corporate actions (docs/platform/rwa.md "Distributions and corporate
// actions"): floor per holder, the remainder what the floors leave, exact at any size, the admin Safe left out.
import t from 'tap';
import type { Hex } from 'viem';
import { batchesOf, holdersOf, proRata, redemptionShares, splitShares } from '../../../api/rwa/actions/pro-rata.ts';

const a = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Hex;
const table = (...xs: [number, bigint][]) => new Map(xs.map(([n, u]) => [a(n), u]));

t.test('floor per holder; the remainder is what the floors leave', async (t) => {
  // 100 over 1:1:1 → 33 each, 1 left.
  const r = proRata(100n, table([1, 5n], [2, 5n], [3, 5n]));
  t.same(r.shares.map((s) => s.amount), [33n, 33n, 33n]);
  t.same([r.supply, r.paid, r.remainder], [15n, 99n, 1n]);
  // 10 over 1:2:7 is exact.
  const exact = proRata(10n, table([3, 7n], [1, 1n], [2, 2n]));
  t.same(exact.shares.map((s) => [s.holder, s.amount]), [[a(1), 1n], [a(2), 2n], [a(3), 7n]], 'in address order');
  t.equal(exact.remainder, 0n);
  // A holder whose floor is zero gets no line; its share is in the remainder.
  const small = proRata(5n, table([1, 1n], [2, 1000n]));
  t.same(small.shares.map((s) => [s.holder, s.amount]), [[a(2), 4n]]);
  t.same([small.paid, small.remainder], [4n, 1n]);
  t.ok(small.remainder < BigInt(table([1, 1n], [2, 1000n]).size), 'the remainder is below one base unit per holder');
});

t.test('the admin Safe and zero balances are not counted; upper-case addresses are one holder', async (t) => {
  const safe = a(9);
  const r = proRata(90n, new Map([[a(1), 1n], [a(2), 0n], [safe, 1000n], [a(3).toUpperCase().replace('0X', '0x') as Hex, 2n]]), [safe.toUpperCase()]);
  t.same(r.shares.map((s) => [s.holder, s.amount]), [[a(1), 30n], [a(3), 60n]]);
  t.equal(r.supply, 3n);
  t.same(holdersOf(new Map([[a(1), 0n]])), []);
  const none = proRata(7n, new Map());
  t.same([none.shares, none.paid, none.remainder], [[], 0n, 7n], 'no holder: nothing paid, everything remains');
  t.throws(() => proRata(0n, table([1, 1n])), RangeError, 'a zero total is refused');
});

t.test('exact at sizes beyond 2^53 and near 2^256', async (t) => {
  const big = (1n << 200n) + 12345n;
  const units = [(1n << 120n) + 1n, (1n << 119n) + 3n, 7n];
  const r = proRata(big, table([1, units[0]!], [2, units[1]!], [3, units[2]!]));
  const supply = units.reduce((s, u) => s + u, 0n);
  t.same(r.shares.map((s) => s.amount), units.map((u) => (big * u) / supply), 'each floor(total × units / supply), no float');
  t.equal(r.paid + r.remainder, big, 'paid and remainder add up to the total');
  t.ok(r.remainder >= 0n && r.remainder < 3n);
  const huge = (1n << 255n) - 1n;
  const h = proRata(huge, table([1, (1n << 255n) - 1n], [2, 1n]));
  t.equal(h.paid + h.remainder, huge);
  // Many holders: the sum of floors never passes the total and misses it by less than one per holder.
  const many = new Map(Array.from({ length: 997 }, (_, i) => [a(i + 1), BigInt(i * 7919 + 13)] as [Hex, bigint]));
  const m = proRata(10n ** 30n + 1n, many);
  t.ok(m.paid <= 10n ** 30n + 1n && m.remainder < 997n, `remainder ${m.remainder} below the holder count`);
});

t.test('a split mints floor(units × (n − d) / d); a redemption pays units × price', async (t) => {
  const s = splitShares(2n, 1n, table([1, 10n], [2, 3n]));
  t.same(s.shares.map((x) => x.amount), [10n, 3n], '2:1 doubles every holding');
  const s32 = splitShares(3n, 2n, table([1, 3n], [2, 4n]));
  t.same(s32.shares.map((x) => x.amount), [1n, 2n], '3:2: floor(3/2)=1, 4/2=2');
  t.equal(s32.remainder, 0n, 'floor(7/2)=3 in all, 3 minted');
  t.equal(splitShares(3n, 2n, table([1, 3n], [2, 3n])).remainder, 1n, 'two halves left unminted');
  t.throws(() => splitShares(1n, 1n, table([1, 1n])), RangeError);
  t.throws(() => splitShares(1n, 2n, table([1, 1n])), RangeError, 'a reverse split is not a mint');
  const r = redemptionShares(250n, table([1, 4n], [2, 6n]));
  t.same([r.shares.map((x) => x.amount), r.paid, r.remainder], [[1000n, 1500n], 2500n, 0n]);
});

t.test('batches keep order and size', async (t) => {
  t.same(batchesOf([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  t.same(batchesOf([], 3), []);
  t.throws(() => batchesOf([1], 0), RangeError);
});
