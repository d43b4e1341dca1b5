// The node's presignature pool (docs/protocols/pools.md): entries sealed under (key, epoch, entry id)
// with their binding, kept only by a node with a rollback anchor, taken once with the deletion and the
// used mark on disk before the presignature is handed out, refused with a code of their own when
// unknown, used, expired, or bound to another epoch, signer set or path; a restarted node finds a taken
// entry used, and a directory put back from before the take is refused at open.
import t, { type Test } from 'tap';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { isUnvouchedDiscard } from '../../node/storage/unvouched-records.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { PresignatureStore, type PresignatureBinding } from '../../node/storage/presignature-store.ts';
import type { Presignature } from '../../node/protocols/ecdsa/presignature.ts';
import { committee, online, presign, sid } from '../protocols/ecdsa/harness.ts';
import { checkSignature } from '../protocols/ecdsa/sign-cases.ts';

const storageKey = new Uint8Array(randomBytes(32));
const c = committee(3, 2, 'presignature-store');
const groupKey = c.keys.get(1)!.pkg.groupKey;
const binding: PresignatureBinding = { epoch: 0, signers: [1, 2], path: [], publicKey: groupKey };
const id = (label: string) => sid(label).slice(0, 32);

function tmp(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'presig-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function open(dir: string, opts: { anchor?: boolean; now?: () => number; maxPerKey?: number } = {}) {
  const anchor = opts.anchor === false ? undefined : new FileRollbackAnchor(join(dir, 'anchor'), storageKey);
  const store = await SealedStore.open(join(dir, 'db'), storageKey, { ...(anchor ? { anchor } : {}), discardUnvouched: isUnvouchedDiscard });
  return { store, pool: new PresignatureStore(store, { ...(opts.now ? { now: opts.now } : {}), ...(opts.maxPerKey ? { maxPerKey: opts.maxPerKey } : {}) }) };
}

/** Presignatures of parties 1 and 2 from one run. */
function pair(label: string, signers = [1, 2], path: number[] = []): Map<number, Presignature> {
  const pre = presign(c, signers, label, path);
  if (pre.aborts.size) throw [...pre.aborts.values()][0]!;
  return pre.results;
}

async function refused(t: Test, p: Promise<unknown>, code: string, what: string) {
  await t.rejects(p, { code }, what);
}

t.test('without a rollback anchor the node makes and uses no entries', async (t) => {
  const { store, pool } = await open(tmp(t), { anchor: false });
  t.teardown(() => store.close());
  t.notOk(pool.enabled, 'disabled');
  const p = pair('unanchored').get(1)!;
  await refused(t, pool.admit('k', 0, [id('a')]), 'presignature_pool_unanchored', 'admit refused');
  await refused(t, pool.put('k', binding, [{ entryId: id('a'), presignature: p }]), 'presignature_pool_unanchored', 'put refused');
  await refused(t, pool.check('k', [id('a')], binding), 'presignature_pool_unanchored', 'check refused');
  await refused(t, pool.take('k', [id('a')], binding), 'presignature_pool_unanchored', 'take refused');
  t.notOk(p.used, 'the presignature was not touched');
});

t.test('an entry is sealed, taken once, and signs with its peer\'s', async (t) => {
  const dir = tmp(t);
  const { store, pool } = await open(dir);
  t.ok(pool.enabled, 'enabled with an anchor');
  const made = pair('take once');
  const mine = made.get(1)!;
  const encoded = mine.encode();
  await pool.admit('k', 0, [id('e1')]);
  await pool.put('k', binding, [{ entryId: id('e1'), presignature: mine }]);
  const raw = await store.raw(`presig/k/0/${id('e1')}`);
  t.ok(raw, 'stored under (key, epoch, entry id)');
  t.notOk(bytesToHex(raw!).includes(bytesToHex(encoded.subarray(0, 64))), 'sealed: the presignature is not on disk in the clear');
  t.equal(await pool.count('k', 0), 1, 'one entry held');
  await pool.check('k', [id('e1')], binding);
  t.pass('check accepts the matching binding');
  const [taken] = await pool.take('k', [id('e1')], binding);
  t.equal(taken!.id, mine.id, 'the stored presignature comes back');
  t.equal(await store.raw(`presig/k/0/${id('e1')}`), undefined, 'its record is gone from disk');
  t.ok(await store.raw(`presig-used/k/${id('e1')}`), 'and a used mark is on disk');
  await refused(t, pool.take('k', [id('e1')], binding), 'presignature_used', 'a second take is refused');
  await refused(t, pool.check('k', [id('e1')], binding), 'presignature_used', 'so is a check');
  await refused(t, pool.admit('k', 0, [id('e1')]), 'presignature_exists', 'the id cannot be made again');
  const digest = sid('pooled digest');
  const on = online(new Map([[1, taken!], [2, made.get(2)!]]), digest);
  t.equal(on.results.size, 2, 'the taken entry signs with its peer\'s presignature');
  await checkSignature(t, on.results.get(1)!, digest, groupKey);
  await store.close();

  // Restarted: the take is on disk.
  const again = await open(dir);
  await refused(t, again.pool.take('k', [id('e1')], binding), 'presignature_used', 'after a restart the entry stays used');
  await again.store.close();
});

t.test('refusals for unknown ids, another epoch, signer set or path leave the entry usable', async (t) => {
  const { store, pool } = await open(tmp(t));
  t.teardown(() => store.close());
  const made = pair('bindings').get(1)!;
  await pool.put('k', binding, [{ entryId: id('b1'), presignature: made }]);
  await refused(t, pool.take('k', [id('nope')], binding), 'presignature_unknown', 'an unknown id');
  await refused(t, pool.take('k', ['zz'], binding), 'presignature_unknown', 'a malformed id');
  await refused(t, pool.take('other-key', [id('b1')], binding), 'presignature_unknown', 'an id of another key');
  await refused(t, pool.take('k', [id('b1')], { ...binding, epoch: 1 }), 'presignature_wrong_epoch', 'another epoch');
  await refused(t, pool.take('k', [id('b1')], { ...binding, signers: [1, 3] }), 'presignature_wrong_signers', 'another signer set');
  await refused(t, pool.take('k', [id('b1')], { ...binding, path: [0, 1] }), 'presignature_wrong_path', 'another path');
  await refused(t, pool.take('k', [id('b1')], { ...binding, publicKey: c.keys.get(2)!.pkg.groupKey.replace(/^02/, '03') }), 'presignature_wrong_path', 'another public key');
  await refused(t, pool.take('k', [id('b1'), id('b1')], binding), 'presignature_used', 'the same id twice in one request');
  t.equal((await pool.take('k', [id('b1')], { ...binding, signers: [2, 1] })).length, 1, 'the entry is still there for the right request (signers in any order)');
});

t.test('a take of several entries is all or nothing', async (t) => {
  const { store, pool } = await open(tmp(t));
  t.teardown(() => store.close());
  await pool.put('k', binding, [{ entryId: id('m1'), presignature: pair('multi 1').get(1)! }, { entryId: id('m2'), presignature: pair('multi 2').get(1)! }]);
  await refused(t, pool.take('k', [id('m1'), id('missing')], binding), 'presignature_unknown', 'one unknown id refuses the request');
  const both = await pool.take('k', [id('m2'), id('m1')], binding);
  t.equal(both.length, 2, 'then both are taken together');
});

t.test('entries expire, are bounded per key, and a new epoch retires the old ones', async (t) => {
  let now = 1_000_000;
  const { store, pool } = await open(tmp(t), { now: () => now, maxPerKey: 2 });
  t.teardown(() => store.close());
  await pool.put('k', binding, [{ entryId: id('x1'), presignature: pair('exp 1').get(1)! }, { entryId: id('x2'), presignature: pair('exp 2').get(1)! }]);
  await refused(t, pool.admit('k', 0, [id('x3')]), 'presignature_pool_full', 'a third entry is over the bound');
  await refused(t, pool.admit('k', 0, [id('x1')]), 'presignature_exists', 'a held id cannot be made again');
  await refused(t, pool.admit('k', 0, [id('y'), id('y')]), 'presignature_exists', 'nor one named twice');
  now += 24 * 60 * 60 * 1000 + 1;
  await refused(t, pool.take('k', [id('x1')], binding), 'presignature_expired', 'an entry past its lifetime is refused');
  t.equal(await pool.count('k', 0), 0, 'and expired entries are removed');
  t.equal(await store.raw(`presig/k/0/${id('x1')}`), undefined, 'from disk');

  await pool.put('k', binding, [{ entryId: id('o1'), presignature: pair('epoch 0').get(1)! }]);
  await refused(t, pool.take('k', [id('o1')], { ...binding, epoch: 1 }), 'presignature_wrong_epoch', 'a request at the new epoch cannot use it');
  t.equal(await pool.purge('k', 1), 1, 'the move to epoch 1 deletes the epoch-0 entry');
  await refused(t, pool.take('k', [id('o1')], binding), 'presignature_unknown', 'it is gone for every request');
});

t.test('a data directory put back from before a take is refused at open', async (t) => {
  const dir = tmp(t);
  const { store, pool } = await open(dir);
  await pool.put('k', binding, [{ entryId: id('r1'), presignature: pair('rollback').get(1)! }]);
  await store.close();
  const copy = join(tmp(t), 'db-copy');
  cpSync(join(dir, 'db'), copy, { recursive: true });
  const second = await open(dir);
  await second.pool.take('k', [id('r1')], binding);
  await second.store.close();
  rmSync(join(dir, 'db'), { recursive: true, force: true });
  cpSync(copy, join(dir, 'db'), { recursive: true });
  await t.rejects(open(dir), { code: 'rolled_back' }, 'the older copy, which still holds the entry, does not open');
});

t.test('the sweep drops expired entries, old epochs\' entries and those of keys no longer held', async (t) => {
  let now = 5_000_000;
  const { store, pool } = await open(tmp(t), { now: () => now });
  t.teardown(() => store.close());
  await pool.put('k', binding, [{ entryId: id('s1'), presignature: pair('sweep 1').get(1)! }]);
  await pool.put('gone', binding, [{ entryId: id('s2'), presignature: pair('sweep 2').get(1)! }]);
  await pool.put('vault/with/slash', binding, [{ entryId: id('s3'), presignature: pair('sweep 3').get(1)! }]);
  const epochs: Record<string, number | undefined> = { k: 0, 'vault/with/slash': 0 };
  t.equal(await pool.sweep(async (k) => epochs[k]), 1, 'only the entry of the key no longer held goes');
  t.equal(await store.raw(`presig/gone/0/${id('s2')}`), undefined, 'from disk');
  t.equal(await pool.count('vault/with/slash', 0), 1, 'a key id with slashes keeps its entry');
  epochs.k = 1;
  t.equal(await pool.sweep(async (k) => epochs[k]), 1, 'a key that moved to epoch 1 loses its epoch-0 entry');
  now += 24 * 60 * 60 * 1000 + 1;
  t.equal(await pool.sweep(async (k) => epochs[k]), 1, 'an expired entry goes');
  t.equal(await pool.count('vault/with/slash', 0), 0, 'none is left');
});

t.test('an anchor that holds nothing over a written store: every entry is dropped, so a restored copy hands out none again', async (t) => {
  // The attack: keep a copy of the store while entries are unused, let the node take one and sign,
  // then lose the anchor (deleted, an empty volume, an enclave's memory across a restart) and put the
  // copy back. Without the drop the copy opens and hands the same presignature out a second time.
  const dir = tmp(t);
  const made = pair('anchor lost');
  const other = pair('anchor lost 2');
  let { store, pool } = await open(dir);
  await pool.admit('k', 0, [id('l1'), id('l2')]);
  await pool.put('k', binding, [{ entryId: id('l1'), presignature: made.get(1)! }, { entryId: id('l2'), presignature: other.get(1)! }]);
  await store.close();
  cpSync(join(dir, 'db'), join(dir, 'copy'), { recursive: true });
  ({ store, pool } = await open(dir));
  t.equal(store.droppedUnanchored, 0, 'with its anchor the store drops nothing');
  await pool.take('k', [id('l1')], binding);
  await store.close();

  rmSync(join(dir, 'anchor'));
  rmSync(join(dir, 'db'), { recursive: true });
  cpSync(join(dir, 'copy'), join(dir, 'db'), { recursive: true });
  ({ store, pool } = await open(dir));
  t.equal(store.droppedUnanchored, 2, 'both entries of the copy were dropped at open');
  t.ok(pool.enabled, 'the pool works on with the new anchor');
  await refused(t, pool.take('k', [id('l1')], binding), 'presignature_unknown', 'the entry used before is not handed out again');
  await refused(t, pool.take('k', [id('l2')], binding), 'presignature_unknown', 'nor the one no anchor vouches for');
  t.equal(await store.raw(`presig/k/0/${id('l1')}`), undefined, 'gone from disk');

  // New entries made from here on are kept, and a reopen with the anchor keeps them.
  const fresh = pair('anchor new');
  await pool.admit('k', 0, [id('l3')]);
  await pool.put('k', binding, [{ entryId: id('l3'), presignature: fresh.get(1)! }]);
  await store.close();
  ({ store, pool } = await open(dir));
  t.teardown(() => store.close());
  t.equal(store.droppedUnanchored, 0, 'the anchor now vouches for the store');
  const [taken] = await pool.take('k', [id('l3')], binding);
  t.equal(taken!.id, fresh.get(1)!.id, 'the new entry is there');
});

t.test('concurrent takes: one entry goes to exactly one of them, different entries to each', async (t) => {
  const dir = tmp(t);
  const { store, pool } = await open(dir);
  t.teardown(() => store.close());
  const made = [0, 1, 2, 3].map((i) => pair(`concurrent ${i}`).get(1)!);
  const ids = made.map((_, i) => id(`c${i}`));
  await pool.admit('k', 0, ids);
  await pool.put('k', binding, made.map((presignature, i) => ({ entryId: ids[i]!, presignature })));

  // Two signings name the same entry at once: exactly one gets it, the other is refused as used.
  const same = await Promise.allSettled([pool.take('k', [ids[0]!], binding), pool.take('k', [ids[0]!], binding)]);
  t.equal(same.filter((r) => r.status === 'fulfilled').length, 1, 'one take of the same entry succeeds');
  const lost = same.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  t.equal((lost.reason as { code: string }).code, 'presignature_used', 'the other is refused as used');

  // Three signings with three different entries at once all get theirs, each its own.
  const got = await Promise.all(ids.slice(1).map((e) => pool.take('k', [e], binding)));
  t.same(got.map(([p]) => p!.id), made.slice(1).map((p) => p.id), 'each take returns its own entry');
  for (const e of ids) {
    t.equal(await store.raw(`presig/k/0/${e}`), undefined, `${e.slice(0, 6)}: gone from disk`);
    t.ok(await store.raw(`presig-used/k/${e}`), `${e.slice(0, 6)}: marked used`);
  }
  await refused(t, pool.take('k', [ids[2]!], binding), 'presignature_used', 'and none can be taken again');
});

t.test('a reserved take: its write rides in another batch; nothing is handed out unless that batch landed', async (t) => {
  const dir = tmp(t);
  const { store, pool } = await open(dir);
  t.teardown(() => store.close());
  const made = [0, 1].map((i) => pair(`reserve ${i}`).get(1)!);
  const ids = [id('r0'), id('r1')];
  await pool.admit('k', 0, ids);
  await pool.put('k', binding, made.map((presignature, i) => ({ entryId: ids[i]!, presignature })));

  // Reserved, then the caller's batch is never written: finish refuses, and the entry is usable again.
  const lost = await pool.reserve('k', [ids[0]!], binding);
  await refused(t, pool.take('k', [ids[0]!], binding), 'presignature_used', 'a reserved entry is refused to another take');
  await t.rejects(lost.finish(), /was not written off before it was handed out/, 'finish without the write hands nothing out');
  const released = await pool.reserve('k', [ids[0]!], binding);
  released.release();
  t.pass('after a release the entry can be reserved again');

  // Reserved, its ops written in the caller's own batch with another record: finish hands it out once.
  const held = await pool.reserve('k', [ids[0]!], binding);
  await store.batch([{ type: 'put', key: 'used/' + 'aa'.repeat(32), value: new Uint8Array([1]) }, ...held.ops]);
  const [p] = await held.finish();
  t.equal(p!.id, made[0]!.id, 'the value comes back after the batch landed');
  await t.rejects(held.finish(), /finished twice/, 'a second finish hands out nothing');
  await refused(t, pool.take('k', [ids[0]!], binding), 'presignature_used', 'and the entry is used');
  const [q] = await pool.take('k', [ids[1]!], binding);
  t.equal(q!.id, made[1]!.id, 'the other entry is untouched');
});
