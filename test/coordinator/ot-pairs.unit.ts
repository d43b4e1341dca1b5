// Which OT pairs a vault has, which setup runs cover exactly the missing ones, and whether the members
// attached now can sign ECDSA (coordinator/vaults/ot-pairs.ts; docs/protocols/ecdsa.md "Per-pair setup").
import t from 'tap';
import { ecdsaReadiness, otPairsOf, pairsAmong, setupRuns, someCompleteSubset } from '../../coordinator/vaults/ot-pairs.ts';

const committee = (n: number) => Array.from({ length: n }, (_, i) => ({ nodeId: `n${i + 1}`, index: i + 1 }));
const names = (runs: { index: number }[][]) => runs.map((r) => r.map((m) => m.index).join(','));

t.test('the pairs a record has: none at another epoch; every pair for a record from before per-pair setups', async (t) => {
  const c = committee(3);
  t.same([...otPairsOf({ epoch: 1, otEpoch: 0, otPairs: ['1-2'], committee: c })], [], 'another epoch');
  t.same([...otPairsOf({ epoch: 0, otEpoch: undefined, committee: c })], []);
  t.same([...otPairsOf({ epoch: 0, otEpoch: 0, committee: c })], ['1-2', '1-3', '2-3'], 'the old record ran on the whole committee');
  t.same([...otPairsOf({ epoch: 0, otEpoch: 0, otPairs: ['1-2'], committee: c })], ['1-2']);
});

t.test('setup runs cover exactly the missing pairs', async (t) => {
  const c = committee(4);
  t.same(names(setupRuns(c, new Set(pairsAmong(c)))), ['1,2,3,4'], 'nothing set up: one run on everyone');
  t.same(names(setupRuns(c.slice(0, 3), new Set(['1-3', '2-3']))), ['1,3', '2,3'], 'a returning member: one run per pair (1 and 2 are paired already)');
  t.same(names(setupRuns(c, new Set(['1-4', '2-4', '3-4']))), ['1,4', '2,4', '3,4']);
  t.same(names(setupRuns(c, new Set(['1-3', '1-4', '3-4', '2-4']))), ['1,3,4', '2,4'], 'a group whose pairs are all missing shares a run');
  t.same(setupRuns(c, new Set()), []);
  for (const missing of [['1-2'], ['1-3', '2-4'], ['1-2', '1-3', '2-3', '3-4']]) {
    const covered = setupRuns(c, new Set(missing)).flatMap((r) => pairsAmong(r)).sort();
    t.same(covered, [...missing].sort(), `no pair outside ${missing.join(' ')} is set up again`);
  }
});

t.test('readiness: enough attached members, and a threshold of them with every pair', async (t) => {
  const v = { epoch: 0, otEpoch: 0, otPairs: ['1-2'], committee: committee(3), threshold: 2 };
  const attached = (...ids: number[]) => (nodeId: string) => ids.map((i) => `n${i}`).includes(nodeId);
  t.same(ecdsaReadiness(v, attached(1, 2, 3)), { ready: true, detached: [], missingPairs: ['1-3', '2-3'] });
  t.same(ecdsaReadiness(v, attached(1, 3)), { ready: false, reason: 'ot_pairs_missing', detached: ['n2'], missingPairs: ['1-3'] });
  t.same(ecdsaReadiness(v, attached(3)), { ready: false, reason: 'members_detached', detached: ['n1', 'n2'], missingPairs: [] });
  t.equal(ecdsaReadiness({ ...v, otPairs: undefined }, attached(2, 3)).ready, true, 'a record from before per-pair setups has every pair');
  const three = { epoch: 0, otEpoch: 0, otPairs: ['1-2', '1-3', '2-4', '3-4'], committee: committee(4), threshold: 3 };
  t.equal(someCompleteSubset(three.committee, 3, new Set(three.otPairs)), false, 'no triangle among the pairs');
  t.equal(someCompleteSubset(three.committee, 3, new Set([...three.otPairs, '2-3'])), true, '1,2,3 now');
});
