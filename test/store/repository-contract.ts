// The contract of RecordRepository (api/store/record-repository.ts), run against LevelDB
// (repository-leveldb.unit.ts) and PostgreSQL (repository-postgres.test.ts): what both must do the same,
// down to the byte order of walks and the positions cursors carry.
import type { Test } from 'tap';
import { Collection } from '../../api/store/collection.ts';
import { CursorCodec, indexPage, type IndexList } from '../../api/store/pagination.ts';
import type { Op, RecordRepository } from '../../api/store/record-repository.ts';

interface Rec {
  id: string;
  org: string;
  created_at: string;
  n: number;
}

const pad = (n: number) => String(n).padStart(6, '0');
const rec = (i: number, org = 'o1'): Rec => ({ id: `r${pad(i)}`, org, created_at: `2026-01-01T00:00:${pad(i)}`, n: i });
/** The vault API's index shape: `<org>/<created_at>/<id>`, the position being `<created_at>/<id>`. */
const ix = (r: Rec) => `org/${r.org}/${r.created_at}/${r.id}`;

export function repositoryContract(t: Test, store: RecordRepository): void {
  let n = 0;
  /** Each case writes its own collections, so cases share one store without seeing each other. */
  const fresh = () => `c${++n}_${Math.random().toString(36).slice(2, 8)}`;

  t.test('put, get and delete a record; a missing one is undefined', async (t) => {
    const c = fresh();
    t.equal(await store.get(c, 'a'), undefined);
    await store.put(c, 'a', { x: 1 });
    t.same(await store.get(c, 'a'), { x: 1 });
    await store.put(c, 'a', { x: 2 });
    t.same(await store.get(c, 'a'), { x: 2 }, 'a put replaces');
    await store.batch([{ type: 'del', collection: c, id: 'a' }]);
    t.equal(await store.get(c, 'a'), undefined);
    t.equal(await store.get(fresh(), 'a'), undefined, 'collections are separate');
  });

  t.test('a value comes back as written: key order, NUL inside strings, ids holding NUL, unicode', async (t) => {
    const c = fresh();
    const v = { z: 1, a: 'x\x00y', m: [1, 'é', { q: null, b: true }], nested: { b: 2, a: 1 }, n: -1.5e-7 };
    const id = `dom.example\x00ws_é`;
    await store.put(c, id, v);
    const back = await store.get<typeof v>(c, id);
    t.equal(JSON.stringify(back), JSON.stringify(v));
    t.same([...(await collect(store.entries(c)))].map((e) => e.id), [id]);
  });

  t.test('a batch applies every operation in order, or none when one fails', async (t) => {
    const c = fresh();
    const d = fresh();
    await store.put(c, 'keep', { v: 'before' }, ['k/1']);
    await t.rejects(
      store.batch([
        { type: 'put', collection: c, id: 'keep', value: { v: 'after' } },
        { type: 'put', collection: d, id: 'new', value: { v: 1 }, index: ['k/2'] },
        { type: 'del', collection: c, id: 'keep', index: ['k/1'] },
        // A BigInt cannot be serialized: the batch fails after the first three operations.
        { type: 'put', collection: c, id: 'bad', value: { v: 1n } },
      ]),
    );
    t.same(await store.get(c, 'keep'), { v: 'before' }, 'nothing changed');
    t.equal(await store.get(d, 'new'), undefined);
    t.same(await store.byIndex(c, 'k/'), [{ v: 'before' }], 'index entries unchanged');
    t.same(await store.byIndex(d, 'k/'), []);
    await store.batch([
      { type: 'put', collection: c, id: 'x', value: 1 },
      { type: 'del', collection: c, id: 'x' },
      { type: 'del', collection: c, id: 'y' },
      { type: 'put', collection: c, id: 'y', value: 2 },
    ]);
    t.equal(await store.get(c, 'x'), undefined, 'put then del: gone');
    t.equal(await store.get(c, 'y'), 2, 'del then put: there');
    await store.batch([]);
  });

  t.test('unindex removes an entry, except one the same put names again', async (t) => {
    const c = fresh();
    await store.put(c, 'a', { s: 'pending' }, ['state/pending/', 'all/']);
    await store.batch([{ type: 'put', collection: c, id: 'a', value: { s: 'done' }, index: ['state/done/', 'all/'], unindex: ['state/pending/', 'all/'] }]);
    t.same(await store.byIndex(c, 'state/pending/'), []);
    t.same(await store.byIndex(c, 'state/done/'), [{ s: 'done' }]);
    t.same(await store.byIndex(c, 'all/'), [{ s: 'done' }]);
  });

  t.test('index walks: byte order, prefixes, after, limits, stale entries', async (t) => {
    const c = fresh();
    const ops: Op[] = [];
    for (const i of [5, 1, 3, 2, 4]) ops.push({ type: 'put', collection: c, id: `r${i}`, value: { i }, index: [`p/${i}`, `q/${i}`] });
    // Byte order, not locale order: 'B' < 'a' < 'é'; a NUL separator sorts before everything.
    ops.push({ type: 'put', collection: c, id: 'u1', value: { i: 'a' }, index: ['u/a'] });
    ops.push({ type: 'put', collection: c, id: 'u2', value: { i: 'B' }, index: ['u/B'] });
    ops.push({ type: 'put', collection: c, id: 'u3', value: { i: 'é' }, index: ['u/é'] });
    ops.push({ type: 'put', collection: c, id: 'u4', value: { i: 'nul' }, index: ['u/\x00z'] });
    await store.batch(ops);
    t.same((await store.byIndex<{ i: number }>(c, 'p/')).map((v) => v.i), [1, 2, 3, 4, 5]);
    t.same((await store.byIndex<{ i: number }>(c, 'p/', 2)).map((v) => v.i), [1, 2]);
    t.same((await store.byIndex<{ i: string }>(c, 'u/')).map((v) => v.i), ['nul', 'B', 'a', 'é']);
    t.same((await store.byIndexAfter<{ i: number }>(c, 'p/', '2', 10)).map((v) => v.i), [3, 4, 5]);
    t.same((await store.byIndexAfter<{ i: number }>(c, 'p/', undefined, 2)).map((v) => v.i), [1, 2]);
    t.same(await store.byIndex(c, 'nope/'), []);
    const fwd = await store.byIndexEntries<{ i: number }>(c, 'p/', undefined, 10);
    t.same(fwd.map((e) => e.position), ['1', '2', '3', '4', '5']);
    t.same((await store.byIndexEntries(c, 'p/', '3', 10)).map((e) => e.position), ['4', '5']);
    t.same((await store.byIndexEntries(c, 'p/', undefined, 10, true)).map((e) => e.position), ['5', '4', '3', '2', '1']);
    t.same((await store.byIndexEntries(c, 'p/', '3', 10, true)).map((e) => e.position), ['2', '1']);
    t.same((await store.byIndexEntries(c, 'p/', '3', 1, true)).map((e) => e.position), ['2']);
    // A record deleted without its entries: the walk still sees the entry, with no value, and steps past it.
    await store.batch([{ type: 'del', collection: c, id: 'r3' }]);
    const stale = await store.byIndexEntries<{ i: number }>(c, 'p/', '2', 2);
    t.same(stale, [{ position: '3', value: undefined }, { position: '4', value: { i: 4 } }]);
    t.same((await store.byIndex<{ i: number }>(c, 'p/')).map((v) => v.i), [1, 2, 4, 5], 'byIndex skips it');
    await store.batch([{ type: 'del', collection: c, id: 'r4', index: ['p/4'] }]);
    t.same((await store.byIndexEntries(c, 'p/', undefined, 10)).map((e) => e.position), ['1', '2', '3', '5'], 'a del with index removes the entry');
  });

  t.test('indexPage walks every record once, oldest or newest first, with stale and filtered entries', async (t) => {
    const c = fresh();
    const codec = new CursorCodec(new Uint8Array(32).fill(7));
    const ops: Op[] = [];
    for (let i = 1; i <= 47; i++) {
      const r = rec(i, i % 5 === 0 ? 'o2' : 'o1');
      // Every record is also listed under o1, so o2's records are entries `keep` refuses.
      ops.push({ type: 'put', collection: c, id: r.id, value: r, index: [ix(r), ix({ ...r, org: 'o1' })] });
    }
    await store.batch(ops);
    await store.batch([{ type: 'del', collection: c, id: rec(7).id }]);
    const list = (newestFirst: boolean): IndexList<Rec> => ({ list: 'recs', scope: 'o1', filters: { newestFirst }, collection: c, prefix: 'org/o1/', keep: (r) => r.org === 'o1', newestFirst });
    const want = Array.from({ length: 47 }, (_, k) => k + 1).filter((i) => i % 5 !== 0 && i !== 7);
    for (const newestFirst of [false, true]) {
      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      for (;;) {
        const page = await indexPage(store, codec, list(newestFirst), cursor, 10);
        seen.push(...page.data.map((r) => r.n));
        t.equal(page.has_more, page.next_cursor !== null);
        pages++;
        if (!page.next_cursor) break;
        cursor = page.next_cursor;
      }
      t.same(seen, newestFirst ? [...want].reverse() : want, newestFirst ? 'newest first' : 'oldest first');
      t.equal(pages, Math.ceil(want.length / 10));
    }
    const none = await indexPage(store, codec, { ...list(false), prefix: undefined }, undefined, 10);
    t.same(none, { data: [], next_cursor: null, has_more: false });
  });

  t.test('range, entries, all and count: id order, after, lt, limit', async (t) => {
    const c = fresh();
    const ids = Array.from({ length: 1203 }, (_, i) => `k${pad(i)}`);
    for (let i = 0; i < ids.length; i += 400) await store.batch(ids.slice(i, i + 400).map((id) => ({ type: 'put' as const, collection: c, id, value: { id } })));
    t.equal(await store.count(c), 1203);
    t.equal(await store.count(fresh()), 0);
    const all = (await collect(store.all<{ id: string }>(c))).map((v) => v.id);
    t.same(all, ids, 'all, in id order, across pages');
    t.same((await collect(store.range<{ id: string }>(c, { after: ids[1198], lt: ids[1202] }))).map((v) => v.id), ids.slice(1199, 1202));
    t.same((await collect(store.entries(c, { limit: 3 }))).map((e) => e.id), ids.slice(0, 3));
    t.same((await collect(store.entries(c, { after: ids[500], limit: 2 }))).map((e) => e.id), ids.slice(501, 503));
    t.same((await collect(store.entries(c, { lt: ids[2] }))).map((e) => e.id), ids.slice(0, 2));
  });

  t.test('reindex gives stored records their entries once per version', async (t) => {
    const c = fresh();
    await store.batch([1, 2, 3].map((i) => ({ type: 'put' as const, collection: c, id: `r${i}`, value: { i } })));
    t.equal(await store.reindex<{ i: number }>(c, 1, (r) => [`by/${r.i}`]), 3);
    t.equal(await store.reindex<{ i: number }>(c, 1, (r) => [`by/${r.i}`]), 0, 'the version was reached');
    t.same((await store.byIndexEntries(c, 'by/', undefined, 10)).map((e) => e.position), ['1', '2', '3']);
    t.equal(await store.reindex<{ i: number }>(c, 2, (r) => [`two/${r.i}`]), 3);
    t.same((await store.byIndex<{ i: number }>(c, 'two/')).map((v) => v.i), [1, 2, 3]);
  });

  t.test('concurrent writes: distinct puts all land, one insertIfAbsent wins, crossing batches all commit', async (t) => {
    const c = fresh();
    await Promise.all(Array.from({ length: 40 }, (_, i) => store.put(c, `p${pad(i)}`, { i }, [`i/${pad(i)}`])));
    t.equal(await store.count(c), 40);
    t.equal((await store.byIndex(c, 'i/')).length, 40);
    const wins = await Promise.all(Array.from({ length: 20 }, (_, i) => store.insertIfAbsent(c, 'once', { by: i }, ['once/'])));
    t.equal(wins.filter(Boolean).length, 1, 'exactly one insert wins');
    const winner = wins.indexOf(true);
    t.same(await store.get(c, 'once'), { by: winner });
    t.same(await store.byIndex(c, 'once/'), [{ by: winner }]);
    // Batches writing the same two records in opposite orders (a deadlock for a database that locks rows).
    await Promise.all(Array.from({ length: 20 }, (_, i) => {
      const a: Op = { type: 'put', collection: c, id: 'A', value: { by: i } };
      const b: Op = { type: 'put', collection: c, id: 'B', value: { by: i } };
      return store.batch(i % 2 ? [a, b] : [b, a]);
    }));
    const [a, b] = [await store.get<{ by: number }>(c, 'A'), await store.get<{ by: number }>(c, 'B')];
    t.ok(a && b && a.by >= 0 && b.by >= 0);
    t.equal(a?.by, b?.by, 'the last batch wrote both: batches do not interleave');
  });

  t.test('Collection<T> binds the name and type', async (t) => {
    const recs = new Collection<Rec>(store, fresh());
    const r = rec(1);
    await recs.put(r.id, r, [ix(r)]);
    t.same(await recs.get(r.id), r);
    t.equal(await recs.insertIfAbsent(r.id, r), false);
    const r2 = rec(2);
    await store.batch([recs.putOp(r2.id, r2, { index: [ix(r2)] })]);
    t.same((await recs.byIndex('org/o1/')).map((x) => x.n), [1, 2]);
    t.same((await recs.byIndexAfter('org/o1/', `${r.created_at}/${r.id}`, 5)).map((x) => x.n), [2]);
    t.same((await recs.byIndexEntries('org/o1/', undefined, 5, true)).map((e) => e.value?.n), [2, 1]);
    t.same((await collect(recs.entries())).map((e) => e.id), [r.id, r2.id]);
    t.same((await collect(recs.all())).length, 2);
    await recs.delete(r.id, [ix(r)]);
    t.equal(await recs.count(), 1);
    t.same((await recs.byIndex('org/o1/')).map((x) => x.n), [2]);
  });

  t.test('ping answers while open', async () => {
    await store.ping();
  });

  t.test('exclusive runs one holder of a name at a time; tryExclusive runs only when the name is free', async (t) => {
    const name = fresh();
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    let inside = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(Array.from({ length: 6 }, (_, i) => store.exclusive(name, async () => {
      inside++;
      peak = Math.max(peak, inside);
      await sleep(10);
      order.push(i);
      inside--;
    })));
    t.equal(peak, 1, 'never two holders');
    t.equal(order.length, 6, 'each ran');
    const other = await Promise.all([store.exclusive(`${name}-a`, async () => { await sleep(30); return 'a'; }), store.exclusive(`${name}-b`, async () => 'b')]);
    t.same(other, ['a', 'b'], 'other names do not wait');
    await t.rejects(store.exclusive(name, async () => { throw new Error('inside'); }), /inside/);
    t.same(await store.tryExclusive(name, async () => 'free again'), { ran: true, value: 'free again' }, 'a throw releases the name');
    const held = await store.exclusive(name, async () => store.tryExclusive(name, async () => 'nested'));
    t.same(held, { ran: false }, 'tryExclusive refuses a held name');
    let waited = false;
    const first = store.exclusive(name, () => sleep(40));
    await sleep(5);
    await store.exclusive(name, async () => { waited = true; });
    await first;
    t.ok(waited, 'a waiter runs once the holder is done');
  });
}

async function collect<T>(g: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of g) out.push(v);
  return out;
}
