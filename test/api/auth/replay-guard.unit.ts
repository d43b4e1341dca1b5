// The durable nonce guard (api/auth/replay-guard.ts) on a real LevelDB store: a (key id, nonce) pair is
// claimed once, ever: across a reopened store, under concurrent claims, and past its signature's
// expiry until the claim is pruned, which happens only well after that.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordStore } from '../../../api/store/record-store.ts';
import { NONCE_COLLECTION, RETAIN_SECONDS, ReplayGuard } from '../../../api/auth/replay-guard.ts';

const NOW = 1_800_000_000;
const stored = async (store: RecordStore) => {
  let n = 0;
  for await (const _ of store.all(NONCE_COLLECTION)) n++;
  return n;
};

t.test('a pair is claimed once; other keys and nonces are independent', async (t) => {
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'nonces-')));
  t.teardown(() => store.close());
  const guard = new ReplayGuard(store);
  t.equal(await guard.claim('key_a', 'nonce-0123456789ab', NOW + 60, NOW), true);
  t.equal(await guard.claim('key_a', 'nonce-0123456789ab', NOW + 60, NOW + 1), false, 'the same pair again');
  t.equal(await guard.claim('key_a', 'nonce-0123456789ab', NOW + 300, NOW + 2), false, 'the same pair with another expires');
  t.equal(await guard.claim('key_b', 'nonce-0123456789ab', NOW + 60, NOW), true, 'the nonce under another key');
  t.equal(await guard.claim('key_a', 'nonce-0123456789ac', NOW + 60, NOW), true, 'another nonce under the key');
  t.equal(await new ReplayGuard(store).claim('key_a', 'nonce-0123456789ab', NOW + 60, NOW), false, 'a second guard on the store (another plugin) sees the claim');
  t.equal(await stored(store), 3);
});

t.test('claims survive closing and reopening the store (a restart)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nonces-'));
  const first = await RecordStore.open(dir);
  t.equal(await new ReplayGuard(first).claim('key_a', 'restart-nonce-000001', NOW + 60, NOW), true);
  await first.close();
  const second = await RecordStore.open(dir);
  t.teardown(() => second.close());
  t.equal(await new ReplayGuard(second).claim('key_a', 'restart-nonce-000001', NOW + 60, NOW + 5), false, 'refused after the reopen');
});

t.test('concurrent claims of one pair: exactly one wins', async (t) => {
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'nonces-')));
  t.teardown(() => store.close());
  // Two guards, as the two APIs' plugins have over one store: the atomicity is the store's, not a guard's.
  const guards = [new ReplayGuard(store), new ReplayGuard(store)];
  for (let round = 0; round < 5; round++) {
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => guards[i % 2]!.claim('key_a', `concurrent-nonce-${round}-0000`, NOW + 60, NOW)));
    t.equal(results.filter(Boolean).length, 1, `round ${round}: one of 16 concurrent claims passes`);
  }
  const inserts = await Promise.all(Array.from({ length: 16 }, () => store.insertIfAbsent('things', 'x', { v: 1 })));
  t.equal(inserts.filter(Boolean).length, 1, 'insertIfAbsent itself: one of 16');
});

t.test('a claim is kept well past expires, and pruned only after that', async (t) => {
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'nonces-')));
  t.teardown(() => store.close());
  const guard = new ReplayGuard(store);
  t.ok(RETAIN_SECONDS >= 10 * 330, 'retention is ten times the longest accepted window (300 s validity, 30 s skew)');
  t.equal(await guard.claim('key_a', 'old-nonce-000000001', NOW + 60, NOW), true);
  t.equal(await guard.claim('key_a', 'new-nonce-000000001', NOW + 600, NOW + 500), true);
  t.equal(await guard.prune(NOW + 61), 0, 'nothing pruned just after expires');
  t.equal(await guard.claim('key_a', 'old-nonce-000000001', NOW + 60, NOW + 61), false, 'still refused after expires');
  t.equal(await guard.prune(NOW + 60 + RETAIN_SECONDS), 0, 'kept up to the end of its retention');
  t.equal(await guard.prune(NOW + 61 + RETAIN_SECONDS), 1, 'then pruned');
  t.equal(await stored(store), 1, 'the later claim is kept');
  t.equal(await guard.prune(NOW + 601 + RETAIN_SECONDS), 1);
  t.equal(await stored(store), 0);
  // Pruning also runs from claim, at most once a minute: old claims do not pile up.
  const busy = new ReplayGuard(store);
  for (let i = 0; i < 5; i++) t.ok(await busy.claim('key_a', `pile-nonce-${i}-000000`, NOW + 60, NOW));
  t.ok(await busy.claim('key_a', 'pile-nonce-late-000000', NOW + 2 * RETAIN_SECONDS + 60, NOW + 2 * RETAIN_SECONDS));
  t.equal(await stored(store), 1, 'the claim after the retention pruned the expired ones');
});
