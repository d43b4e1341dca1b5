// The coordinator keeps to the nodes' rule of one ECDSA run per OT pair at a time: each session takes
// a signer subset none of whose pairs is busy, so honest traffic is never refused by the nodes, and a
// 2-of-3 vault still runs three sessions at once.
import t from 'tap';
import { OtPairScheduler } from '../../coordinator/vaults/ot-pair-scheduler.ts';

const members = [1, 2, 3].map((index) => ({ nodeId: `node-${index}`, index }));
const pairs = (s: { index: number }[]) => s.map((m) => m.index).sort().join('-');

t.test('a 2-of-3 vault runs three pair-disjoint sessions at once, and a fourth waits for one to end', async (t) => {
  const s = new OtPairScheduler();
  const a = (await s.take('k', members, 2, 0))!;
  const b = (await s.take('k', members, 2, 0))!;
  const c = (await s.take('k', members, 2, 0))!;
  t.same([a, b, c].map((x) => pairs(x.signers)), ['1-2', '1-3', '2-3'], 'every pair serves one session');
  t.equal(await s.take('k', members, 2, 0), undefined, 'no subset is free');
  const waiting = s.take('k', members, 2, 5_000);
  b.release();
  t.equal(pairs((await waiting)!.signers), '1-3', 'the waiting session takes the pair that was released');
  b.release();
  t.equal(await s.take('k', members, 2, 0), undefined, 'a second release of the same slot frees nothing more');
});

t.test('pairs are per vault; a 2-of-2 vault runs one session at a time', async (t) => {
  const s = new OtPairScheduler();
  const two = members.slice(0, 2);
  const a = (await s.take('k1', two, 2, 0))!;
  t.equal(await s.take('k1', two, 2, 0), undefined, 'the only pair is busy');
  t.ok(await s.take('k2', two, 2, 0), 'another vault\'s pair is free');
  a.release();
  t.ok(await s.take('k1', two, 2, 0), 'free again');
});

t.test('a 3-of-3 session holds every pair of its signers', async (t) => {
  const s = new OtPairScheduler();
  const four = [1, 2, 3, 4].map((index) => ({ nodeId: `n${index}`, index }));
  const a = (await s.take('k', four, 3, 0))!;
  t.equal(pairs(a.signers), '1-2-3');
  t.equal(await s.take('k', four, 3, 0), undefined, 'every 3-subset of 4 shares a pair with {1,2,3}');
  a.release();
});
