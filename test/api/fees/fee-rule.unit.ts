// Fee math (docs/platform/fees.md "Rules"): clamp(fixed + floor(amount * bps / 10000), min, max) in
// integers only, at the edges (floor, min, max, 0 bps, amounts near 2^256); the most specific rule wins,
// and rules equally specific for one payment are refused when the schedule is checked.
import t from 'tap';
import { checkRules, matchRule, ruleFee, type FeeRule, type FeeRuleJson } from '../../../api/fees/fee-rule.ts';
import { MAX_UINT256, parseAsset, parseBaseUnits } from '../../../api/fees/base-units.ts';
import { platformFeeOf } from '../../../api/fees/platform-fee.ts';

const rule = (r: Partial<FeeRule>): FeeRule => ({ payment_kind: '*', asset: '*', basis_points: 0, fixed: 0n, min: 0n, max: null, ...r });
const json = (r: Partial<FeeRuleJson>): FeeRuleJson => ({ payment_kind: '*', asset: '*', basis_points: 0, fixed: '0', min: '0', max: null, ...r });
const USDC = 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3';

t.test('the fee is floored, never rounded', async (t) => {
  t.equal(ruleFee(rule({ basis_points: 30 }), 333n), 0n, '333 * 30 / 10000 = 0.999 -> 0');
  t.equal(ruleFee(rule({ basis_points: 30 }), 334n), 1n, '1.002 -> 1');
  t.equal(ruleFee(rule({ basis_points: 1 }), 9_999n), 0n);
  t.equal(ruleFee(rule({ basis_points: 1 }), 10_000n), 1n);
  t.equal(ruleFee(rule({ basis_points: 10_000 }), 12_345n), 12_345n, '100%');
  t.equal(ruleFee(rule({ basis_points: 25, fixed: 7n }), 1_000_000n), 2_507n, 'fixed is added before clamping');
});

t.test('min and max clamp the fee; null max is no bound', async (t) => {
  const r = rule({ basis_points: 100, fixed: 0n, min: 50n, max: 500n });
  t.equal(ruleFee(r, 0n), 50n, 'below min: min');
  t.equal(ruleFee(r, 4_999n), 50n, '49 -> 50');
  t.equal(ruleFee(r, 10_000n), 100n, 'between: as computed');
  t.equal(ruleFee(r, 50_000n), 500n, 'at max');
  t.equal(ruleFee(r, 10n ** 30n), 500n, 'above max: max');
  t.equal(ruleFee(rule({ basis_points: 100, min: 5n, max: 5n }), 10n ** 20n), 5n, 'min = max: a flat fee');
  t.equal(ruleFee(rule({ basis_points: 100 }), 10n ** 30n), 10n ** 28n, 'no max');
  t.equal(ruleFee(rule({ basis_points: 0, fixed: 0n }), 10n ** 30n), 0n, '0 bps and nothing fixed: free');
  t.equal(ruleFee(rule({ basis_points: 0, fixed: 21n }), 1n), 21n, '0 bps: the fixed part only');
});

t.test('amounts near 2^256 stay exact (bigint, no float)', async (t) => {
  const bps = 9_999;
  const got = ruleFee(rule({ basis_points: bps, fixed: 1n }), MAX_UINT256);
  t.equal(got, 1n + (MAX_UINT256 * 9_999n) / 10_000n);
  t.equal(got.toString().length, 78);
  t.ok(got > MAX_UINT256 - MAX_UINT256 / 1000n && got < MAX_UINT256, 'just under the amount');
  t.equal(ruleFee(rule({ basis_points: 10_000, fixed: 1n }), MAX_UINT256), MAX_UINT256 + 1n, 'can exceed uint256: the quote checks the total');
  const digits78 = '9'.repeat(78);
  t.equal(parseBaseUnits(digits78), 10n ** 78n - 1n, '78 digits parse');
  t.equal(parseBaseUnits('1' + '0'.repeat(78)), undefined, '79 digits do not');
});

t.test('base units and asset ids: digits without leading zeros; contract in lower case', async (t) => {
  for (const bad of ['', '01', '-1', '1.5', '1e3', ' 1', '0x10', '１']) t.equal(parseBaseUnits(bad), undefined, JSON.stringify(bad));
  t.equal(parseBaseUnits('0'), 0n);
  t.same(parseAsset('evm-local:0x5FbDB2315678afecb367f032d93F642f64180aa3'), { chain: 'evm-local', token: '0x5fbdb2315678afecb367f032d93f642f64180aa3', id: USDC });
  t.same(parseAsset('bitcoin-regtest:native'), { chain: 'bitcoin-regtest', token: 'native', id: 'bitcoin-regtest:native' });
  for (const bad of ['native', 'evm-local:', 'evm-local:0x12', 'EVM:native', 'evm-local:usdc', '*']) t.equal(parseAsset(bad), undefined, bad);
});

t.test('the most specific rule wins: exact kind and asset over *', async (t) => {
  const rules = [
    rule({ basis_points: 1 }),
    rule({ payment_kind: 'transfer', basis_points: 2 }),
    rule({ payment_kind: 'transfer', asset: USDC, basis_points: 3 }),
    rule({ payment_kind: 'escrow', asset: USDC, basis_points: 4 }),
  ];
  t.equal(matchRule(rules, 'transfer', USDC)?.basis_points, 3);
  t.equal(matchRule(rules, 'transfer', 'evm-local:native')?.basis_points, 2);
  t.equal(matchRule(rules, 'escrow', USDC)?.basis_points, 4);
  t.equal(matchRule(rules, 'payment_request', USDC)?.basis_points, 1);
  t.equal(matchRule([rule({ payment_kind: 'escrow' })], 'transfer', USDC), undefined, 'no rule matches: none');
  // Order does not matter.
  t.equal(matchRule([...rules].reverse(), 'transfer', USDC)?.basis_points, 3);
});

t.test('checkRules: ties are refused, naming the later rule', async (t) => {
  const same = checkRules([json({ payment_kind: 'transfer', asset: USDC }), json({ payment_kind: 'transfer', asset: USDC, basis_points: 5 })]);
  t.same(same.errors.map((e) => e.field), ['rules[1]'], 'the same kind and asset twice');
  t.match(same.errors[0]!.reason, /the same payment_kind and asset as rules\[0\]/);
  const cross = checkRules([json({ payment_kind: 'transfer' }), json({ asset: USDC })]);
  t.same(cross.errors.map((e) => e.field), ['rules[1]'], 'kind-only and asset-only: equally specific for a transfer of the asset');
  t.match(cross.errors[0]!.reason, /as specific as rules\[0\] for a transfer payment of evm-local:0x5fbd/);
  const settled = checkRules([json({ payment_kind: 'transfer' }), json({ asset: USDC }), json({ payment_kind: 'transfer', asset: USDC })]);
  t.same(settled.errors, [], 'a rule naming both settles it');
  t.same(checkRules([json({}), json({ payment_kind: 'transfer' }), json({ payment_kind: 'escrow' })]).errors, [], 'different kinds never tie');
  t.same(checkRules([json({ asset: USDC.toUpperCase().replace('EVM-LOCAL:0X', 'evm-local:0x') }), json({ asset: USDC })]).errors.map((e) => e.field), ['rules[1]'], 'asset ids compare in lower case');
  t.same(checkRules([json({}), json({})]).errors.map((e) => e.field), ['rules[1]'], '* and * twice');
});

t.test('checkRules: every rejected field at once', async (t) => {
  const r = checkRules([
    json({ payment_kind: 'refund', asset: 'usdc', basis_points: 10_001, fixed: '01', min: '10', max: '9' }),
    json({ basis_points: 1.5, min: '-1', max: '1'.repeat(79) }),
  ]);
  t.same(r.errors.map((e) => e.field), ['rules[0].payment_kind', 'rules[0].asset', 'rules[0].basis_points', 'rules[0].fixed', 'rules[0].max', 'rules[1].basis_points', 'rules[1].min', 'rules[1].max']);
  t.same(checkRules([]).errors.map((e) => e.field), ['rules']);
  t.same(checkRules(Array.from({ length: 51 }, (_, i) => json({ payment_kind: 'transfer', asset: `evm-local:0x${i.toString(16).padStart(40, '0')}` }))).errors.map((e) => e.field), ['rules']);
  const ok = checkRules([json({ payment_kind: 'transfer', asset: USDC, basis_points: 10_000, fixed: '0', min: '5', max: '5' })]);
  t.same(ok.errors, []);
  t.same(ok.rules, [{ payment_kind: 'transfer', asset: USDC, basis_points: 10_000, fixed: 0n, min: 5n, max: 5n }]);
});

t.test('the platform fee is a rule for every payment from the configuration', async (t) => {
  const f = platformFeeOf({ platformFeeBps: '15', platformFeeFixed: '100' });
  t.same({ ...f }, { payment_kind: '*', asset: '*', basis_points: 15, fixed: 100n, min: 0n, max: null });
  t.equal(ruleFee(f, 1_000_000n), 1_600n);
  t.ok(Object.isFrozen(f));
});
