// The BffStore contract (docs/platform/bff.md "The store contract"), run against each store: values and
// expiry, setIfAbsent written once among concurrent writers, and the named lock exclusive among every
// instance sharing the store, bounded in its wait, released whatever `fn` does.
import type { Test } from 'tap';
import { BffError, type BffStore } from '../../api/sdk/index.ts';

export interface StoreUnderTest {
  /** Two instances over the same backing (for the in-memory store, the same object: it is one process's). */
  a: BffStore;
  b: BffStore;
  /** Moves the stores' clock forward. */
  advance(ms: number): void;
}

const LOCK = { leaseMs: 60_000, waitMs: 5_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function lockTimeout(t: Test, p: Promise<unknown>, what: string): Promise<void> {
  try {
    await p;
    t.fail(`${what}: resolved`);
  } catch (err) {
    t.ok(err instanceof BffError && err.code === 'lock_timeout', `${what}: lock_timeout`);
  }
}

export function bffStoreContract(t: Test, s: StoreUnderTest): void {
  t.test('values: get, set, overwrite, delete; one instance sees what the other wrote', async (t) => {
    t.equal(await s.a.get('bff:session:none'), undefined, 'absent');
    await s.a.set('bff:session:k1', 'v1.first', 60_000);
    t.equal(await s.b.get('bff:session:k1'), 'v1.first', 'written by one, read by the other');
    await s.b.set('bff:session:k1', 'v1.second', 60_000);
    t.equal(await s.a.get('bff:session:k1'), 'v1.second', 'overwritten');
    t.equal(await s.a.get('bff:session:k2'), undefined, 'keys are distinct');
    await s.b.delete('bff:session:k1');
    t.equal(await s.a.get('bff:session:k1'), undefined, 'deleted');
    await s.a.delete('bff:session:k1');
    t.pass('deleting an absent key is no error');
    for (const ttl of [0, -1, Number.NaN]) {
      await t.rejects(s.a.set('bff:session:k3', 'x', ttl), RangeError, `ttl ${ttl} refused`);
      await t.rejects(s.a.setIfAbsent('bff:session:k3', 'x', ttl), RangeError, `ttl ${ttl} refused by setIfAbsent`);
    }
    t.equal(await s.a.get('bff:session:k3'), undefined, 'and nothing written');
  });

  t.test('expiry: a value is absent once its ttl has passed, and may then be written again', async (t) => {
    await s.a.set('bff:tx:e1', 'short', 1_000);
    await s.a.set('bff:tx:e2', 'long', 10_000);
    s.advance(999);
    t.equal(await s.b.get('bff:tx:e1'), 'short', 'before its expiry');
    s.advance(2);
    t.equal(await s.b.get('bff:tx:e1'), undefined, 'after it');
    t.equal(await s.b.get('bff:tx:e2'), 'long', 'another key keeps its own ttl');
    t.equal(await s.a.setIfAbsent('bff:tx:e1', 'again', 1_000), true, 'an expired key is absent for setIfAbsent');
    t.equal(await s.b.get('bff:tx:e1'), 'again');
    await s.a.set('bff:tx:e2', 'renewed', 20_000);
    s.advance(15_000);
    t.equal(await s.a.get('bff:tx:e2'), 'renewed', 'set renews the ttl');
  });

  t.test('setIfAbsent: one writer wins among concurrent ones on both instances', async (t) => {
    t.equal(await s.a.setIfAbsent('bff:tx:once', 'first', 60_000), true);
    t.equal(await s.b.setIfAbsent('bff:tx:once', 'second', 60_000), false);
    t.equal(await s.a.get('bff:tx:once'), 'first', 'the first value stays');
    const results = await Promise.all([...Array(10)].map((_, i) => (i % 2 ? s.a : s.b).setIfAbsent('bff:tx:race', `w${i}`, 60_000)));
    t.equal(results.filter(Boolean).length, 1, 'exactly one concurrent writer');
    t.equal(await s.b.get('bff:tx:race'), `w${results.indexOf(true)}`, 'its value is the one stored');
  });

  t.test('withLock: exclusive across instances, returns fn\'s value, released after a throw', async (t) => {
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    const work = (i: number) => (i % 2 ? s.a : s.b).withLock('bff-session:shared', LOCK, async () => {
      inside++;
      most = Math.max(most, inside);
      await sleep(10);
      order.push(i);
      inside--;
      return i;
    });
    const got = await Promise.all([...Array(6)].map((_, i) => work(i)));
    t.same(got, [0, 1, 2, 3, 4, 5], 'each caller gets its own fn\'s value');
    t.equal(most, 1, 'never two holders at once');
    t.equal(order.length, 6);

    await t.rejects(s.a.withLock('bff-session:shared', LOCK, async () => { throw new Error('boom'); }), /boom/, 'fn\'s error comes through');
    t.equal(await s.b.withLock('bff-session:shared', { ...LOCK, waitMs: 1_000 }, async () => 'after'), 'after', 'and the lock was released');

    // Other names are not blocked by a held one.
    let release!: () => void;
    const held = s.a.withLock('bff-session:held', LOCK, () => new Promise<void>((r) => { release = r; }));
    await sleep(50);
    t.equal(await s.b.withLock('bff-session:other', { ...LOCK, waitMs: 1_000 }, async () => 'free'), 'free', 'another name runs meanwhile');
    release();
    await held;
  });

  t.test('withLock: the wait is bounded, and a waiter behind one that gave up still runs', async (t) => {
    let release!: () => void;
    const held = s.a.withLock('bff-session:x', LOCK, () => new Promise<void>((r) => { release = r; }));
    await sleep(50);
    let ran = false;
    await lockTimeout(t, s.b.withLock('bff-session:x', { ...LOCK, waitMs: 100 }, async () => { ran = true; }), 'the other instance');
    await lockTimeout(t, s.a.withLock('bff-session:x', { ...LOCK, waitMs: 100 }, async () => { ran = true; }), 'the same instance');
    t.notOk(ran, 'a waiter that timed out never ran');
    const queued = [s.a.withLock('bff-session:x', LOCK, async () => 'next a'), s.b.withLock('bff-session:x', LOCK, async () => 'next b')];
    release();
    await held;
    t.same(await Promise.all(queued), ['next a', 'next b'], 'the waiters queued behind it run once it is released');
  });
}
