// The relayer's spend per tenant and chain (api/tokenization/relay-budget.ts): a relay still `sent` counts its
// reservation, a finished one what it cost (0 when nothing went out); a new relay passes only when its worst
// case fits in what remains, exactly at the cap included; the rolling period starts `window` seconds ago.
import t from 'tap';
import { budgetAllows, periodStart, relayBudget, relayCharge } from '../../../api/tokenization/relay-budget.ts';

const sent = (reserved: string) => ({ state: 'sent' as const, reserved_wei: reserved, cost_wei: null });
const done = (state: 'confirmed' | 'failed', reserved: string, cost: string | null) => ({ state, reserved_wei: reserved, cost_wei: cost });

t.test('a relay counts its reservation while sent, then its cost', async (t) => {
  t.equal(relayCharge(sent('100')), 100n);
  t.equal(relayCharge(done('confirmed', '100', '70')), 70n, 'confirmed: the actual cost, not the reservation');
  t.equal(relayCharge(done('failed', '100', '65')), 65n, 'reverted on chain: its gas was spent');
  t.equal(relayCharge(done('failed', '100', '0')), 0n, 'never sent: nothing');
});

t.test('the budget sums the period\'s relays; a relay passes when its worst case fits, at the cap included', async (t) => {
  const b = relayBudget([sent('100'), done('confirmed', '100', '70'), done('failed', '100', '0')], 400n);
  t.same(b, { cap: 400n, used: 170n, remaining: 230n });
  t.equal(budgetAllows(b, 230n), true, 'exactly what remains');
  t.equal(budgetAllows(b, 231n), false, 'one wei over');
  t.same(relayBudget([sent('500')], 400n), { cap: 400n, used: 500n, remaining: 0n }, 'over the cap (a cap lowered since): nothing remains');
  t.same(relayBudget([], 0n), { cap: 0n, used: 0n, remaining: 0n });
  t.equal(budgetAllows(relayBudget([], 0n), 1n), false, 'a zero cap lets nothing through');
});

t.test('the rolling period starts window seconds ago, as ISO times compare', async (t) => {
  const now = Date.parse('2026-03-02T12:00:00.000Z');
  t.equal(periodStart(now, 86_400), '2026-03-01T12:00:00.000Z');
  t.ok(periodStart(now, 60) < new Date(now).toISOString());
});
