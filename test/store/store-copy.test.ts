// `npm run admin -- store copy` (api/store/store-copy.ts): a real LevelDB in a temp directory copied into a
// real PostgreSQL (test/support/postgres.ts), then read back through both repositories: walks, look-ups
// and the moved jobs must agree; refusals (non-empty target, instance lock, LevelDB lock) write nothing.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import t from 'tap';
import { PostgresJobQueue } from '../../api/jobs/postgres-job-queue.ts';
import { RecordJobQueue } from '../../api/jobs/record-job-queue.ts';
import { INSTANCE_LOCK } from '../../api/store/open-store.ts';
import { PostgresRecordStore } from '../../api/store/postgres/postgres-record-store.ts';
import type { RecordRepository } from '../../api/store/record-repository.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { copyStore } from '../../api/store/store-copy.ts';
import { newDatabase, startPostgres } from '../support/postgres.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

const run = promisify(execFile);
const server = await startPostgres();
const closers: (() => Promise<unknown>)[] = [];
t.teardown(async () => {
  for (const close of closers.reverse()) await close();
  await server.stop();
});

const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
closers.push(() => admin.end());
const database = () => newDatabase(server, 'copy');
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'store-copy-'));
  closers.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What a database holds, as one string: equal before and after means nothing changed. */
async function snapshot(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ r: string | null; i: string | null; j: string | null }>(`SELECT
      (SELECT string_agg(collection || ':' || encode(id, 'hex') || '=' || value::text, ',' ORDER BY collection, id) FROM records) AS r,
      (SELECT string_agg(collection || ':' || encode(entry, 'hex') || '>' || encode(id, 'hex'), ',' ORDER BY collection, entry) FROM index_entries) AS i,
      (SELECT string_agg(concat_ws('|', id, kind, key, payload::text, state, run_at, attempts, dedupe_key, ordering_key, lease_token), ',' ORDER BY id) FROM jobs) AS j`);
    return JSON.stringify(rows[0]);
  } finally {
    await c.end();
  }
}

async function tableExists(url: string, table: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ r: string | null }>('SELECT to_regclass($1)::text AS r', [table])).rows[0]!.r !== null;
  } finally {
    await c.end();
  }
}

// Ids and index strings with \x00 separators and non-ASCII, values with \u0000 and key orders that
// `jsonb` would not keep; a dangling index entry (its record deleted); more rows than one batch.
const ID_LIKE = ['v1', 'v\x00nul', 'ü-日本-🔑', 'z\x00\x00end', 'Zed', '\x00lead', 'é'];
const T = Date.now();
async function populate(dir: string): Promise<void> {
  const store = await RecordStore.open(dir);
  try {
    for (const [n, id] of ID_LIKE.entries()) {
      const value = { b: n, a: `name ${id}`, nested: { z: [1, '\u0000', 'ß'], y: null } };
      await store.put('vaults', id, value, [`by_org\x00${n % 2 ? 'o1' : 'ö2'}\x00${String(1000 + n).padStart(8, '0')}`, `name\x00${id}`]);
    }
    await store.put('mfa_token_uses', 'k\x00123\x00ü', { used: true });
    await store.put('gone', 'x', { v: 1 }, ['state\x00open']);
    await store.batch([{ type: 'del', collection: 'gone', id: 'x' }]); // its entry stays, pointing at nothing
    for (let i = 0; i < 150; i++) await store.put('bulk', `b${String(i).padStart(4, '0')}`, { i }, [`even\x00${i % 2}\x00${i}`]);

    // The job queue on the same store: queued, leased, done and dead jobs, ordering and dedupe keys.
    let now = T;
    const queue = new RecordJobQueue(store, { clock: () => now });
    await queue.enqueue('k', 'a1', { n: 1, s: 'ü\u0000' }, { runAt: T - 5000, orderingKey: 'wallet-ü', dedupeKey: 'd-a1' });
    await queue.enqueue('k', 'a2', { n: 2 }, { runAt: T - 10000, orderingKey: 'wallet-ü' });
    await queue.enqueue('done', 'd', {}, { dedupeKey: 'd-done' });
    const [done] = await queue.claim('old', ['done'], 1, 60000);
    await queue.complete(done!, done!.leaseToken);
    await queue.enqueue('lease', 'l', { n: 4 }, { runAt: T - 60000, orderingKey: 'wallet-2' });
    const [leased] = await queue.claim('old', ['lease'], 1, 3_600_000);
    if (leased?.key !== 'l') throw new Error('the leased job was not claimed');
    await queue.enqueue('k', 'b1', { n: 5 }, { runAt: T - 2000, orderingKey: 'wallet-2' });
    await queue.enqueue('dead', 'x', {});
    const [dead] = await queue.claim('old', ['dead'], 1, 60000);
    await queue.fail(dead!, dead!.leaseToken, null, 'gave up');
    await queue.enqueue('k', 'later', {}, { runAt: T + 3_600_000 });
    await queue.enqueue('k', 'c1', { n: 8 }, { runAt: T - 3000, dedupeKey: 'd-c1' });
    now = T + 1;
  } finally {
    await store.close();
  }
}

/** Every walk of interest, whole and in pages of 3 (positions as cursors), forward and reverse. */
async function walks(store: RecordRepository): Promise<unknown> {
  const out: Record<string, unknown> = {};
  const prefixes: Record<string, string[]> = {
    vaults: ['', 'by_org\x00', 'by_org\x00o1\x00', 'by_org\x00ö2\x00', 'name\x00', 'name\x00v', 'name\x00ü'],
    gone: ['', 'state\x00'],
    bulk: ['', 'even\x00', 'even\x001\x00'],
    mfa_token_uses: [''],
  };
  for (const [collection, list] of Object.entries(prefixes)) {
    for (const prefix of list) {
      for (const reverse of [false, true]) {
        out[`${collection}|${prefix}|${reverse}|all`] = await store.byIndexEntries(collection, prefix, undefined, 1000, reverse);
        const paged: unknown[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await store.byIndexEntries<unknown>(collection, prefix, after, 3, reverse);
          paged.push(...page);
          if (page.length < 3) break;
          after = page[page.length - 1]!.position;
        }
        out[`${collection}|${prefix}|${reverse}|paged`] = paged;
      }
      out[`${collection}|${prefix}|byIndex`] = await store.byIndex(collection, prefix);
      out[`${collection}|${prefix}|byIndexAfter`] = await store.byIndexAfter(collection, prefix, undefined, 1000);
    }
    const entries: { id: string; value: unknown }[] = [];
    for await (const e of store.entries(collection)) entries.push(e);
    out[`${collection}|entries`] = entries;
    out[`${collection}|get`] = await Promise.all([...entries.map((e) => e.id), 'missing', 'v\x00'].map(async (id) => [id, await store.get(collection, id)]));
    out[`${collection}|count`] = await store.count(collection);
  }
  return out;
}

t.test('copies records and entries byte for byte, and moves the unfinished jobs in order', async (t) => {
  const dir = tempDir();
  await populate(dir);
  const url = await database();
  const summary = await copyStore({ fromDataDir: dir, databaseUrl: url, batchSize: 64 });
  t.same(summary, {
    records: ID_LIKE.length + 1 + 150,
    index_entries: 2 * ID_LIKE.length + 1 + 150,
    collections: {
      bulk: { records: 150, index_entries: 150 },
      gone: { records: 0, index_entries: 1 },
      mfa_token_uses: { records: 1, index_entries: 0 },
      vaults: { records: ID_LIKE.length, index_entries: 2 * ID_LIKE.length },
    },
    // 8 jobs, 3 dedupe records, the sequence: records the queue kept, none copied as records.
    jobs: { moved: 6, queued: 5, leased_requeued: 1, skipped_done: 1, skipped_dead: 1, queue_records_not_copied: 12 },
    verified: true,
  });

  const source = await RecordStore.open(dir);
  const target = await PostgresRecordStore.open({ connectionString: url });
  const queue = await PostgresJobQueue.open({ connectionString: url });
  t.teardown(async () => {
    await queue.close();
    await target.close();
  });

  const [a, b] = [await walks(source), await walks(target)];
  t.same(b, a, 'every walk, page, look-up and count agrees');
  t.equal(JSON.stringify(b), JSON.stringify(a), 'including key order inside values');
  t.equal((a as Record<string, unknown[]>)['vaults||false|all']!.length, 2 * ID_LIKE.length, 'the comparison saw the entries');
  t.same(await target.get('vaults', 'v\x00nul'), { b: 1, a: 'name v\x00nul', nested: { z: [1, '\u0000', 'ß'], y: null } });
  t.same((await target.byIndexEntries('gone', '', undefined, 10)), [{ position: 'state\x00open', value: undefined }], 'the dangling entry came along');

  // The raw rows: what LevelDB holds, as PostgreSQL holds it, and none of the queue's records.
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.teardown(() => c.end());
  const { rows: raw } = await c.query<{ id: Buffer; value: string }>("SELECT id, value::text AS value FROM records WHERE collection = 'vaults' ORDER BY id");
  const fromLevel: { id: string; value: string }[] = [];
  for await (const e of source.exportRaw()) if (e.kind === 'record' && e.collection === 'vaults') fromLevel.push({ id: e.id, value: e.value });
  t.same(raw.map((r) => ({ id: r.id.toString('hex'), value: r.value })), fromLevel.map((e) => ({ id: Buffer.from(e.id).toString('hex'), value: e.value })), 'ids and JSON text byte for byte');
  t.equal((await c.query("SELECT 1 FROM records WHERE collection LIKE 'queue%' UNION ALL SELECT 1 FROM index_entries WHERE collection LIKE 'queue%'")).rowCount, 0);

  // The jobs: queued, in LevelDB id order, the leased one due now; ordering keys still hold them back.
  const first = await queue.claim('new', ['k', 'lease', 'done', 'dead'], 10, 60000);
  t.same(first.map((j) => j.key), ['a1', 'l', 'c1'], 'a2 waits for a1 and b1 for l, later is not due, done and dead were left behind');
  t.same(first.map((j) => j.attempts), [1, 1, 1]);
  t.same(first[0]!.payload, { n: 1, s: 'ü\u0000' });
  t.equal(first[0]!.runAt, T - 5000, 'a queued job keeps its due time');
  t.ok(first[1]!.runAt > T - 1000 && first[1]!.runAt <= Date.now() + 1000, 'the leased one is due at the copy, not at its old due time');
  t.same(first.map((j) => j.orderingKey), ['wallet-ü', 'wallet-2', undefined]);
  t.ok(Number(first[0]!.id) < Number(first[1]!.id) && Number(first[1]!.id) < Number(first[2]!.id), 'ids follow the LevelDB order');
  for (const j of first) await queue.complete(j, j.leaseToken);
  t.same((await queue.claim('new', ['k', 'lease'], 10, 60000)).map((j) => j.key), ['a2', 'b1']);
  const again = await queue.enqueue('k', 'dup', {}, { dedupeKey: 'd-a1' });
  t.same([again.created, again.job.key], [false, 'a1'], 'dedupe keys still hold');
  t.same((await queue.enqueue('k', 'dup', {}, { dedupeKey: 'd-c1' })).created, false);

  // A second copy into the now non-empty target: refused, nothing changed.
  await source.close();
  const before = await snapshot(url);
  await t.rejects(copyStore({ fromDataDir: dir, databaseUrl: url }), { code: 'conflict', message: /not empty/ });
  t.equal(await snapshot(url), before, 'the refused copy wrote nothing');
  t.ok(before.length > 1000, 'the snapshot saw the rows');
});

t.test('refused while an API instance holds the instance lock; the command prints no URL', async (t) => {
  const dir = tempDir();
  await populate(dir);
  const url = await database();
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  t.teardown(() => holder.end());
  // As a serving instance holds it: shared (api/store/open-store.ts).
  t.equal((await holder.query('SELECT pg_try_advisory_lock_shared($1::bigint) AS ok', [INSTANCE_LOCK.toString()])).rows[0].ok, true);

  await t.rejects(copyStore({ fromDataDir: dir, databaseUrl: url }), { code: 'instance_locked', message: /stop every API instance/ });
  t.equal(await tableExists(url, 'records'), false, 'nothing written, not even the schema');

  const env = { ...process.env, API_DATABASE_URL: url, API_DATA_DIR: dir };
  const cli = [...programArgs('api/admin/main.ts'), 'store', 'copy', '--from-data-dir', dir];
  const refused = await run(PROGRAM_LAUNCHER, cli, { env }).then(() => undefined, (err: { code: number; stdout: string; stderr: string }) => err);
  t.ok(refused, 'the command failed');
  t.equal(refused?.code, 1);
  t.match(refused?.stderr, /^admin: an API instance serves the target database/);
  t.notMatch(refused?.stderr, String(server.port), 'no URL in the error');
  t.equal(await tableExists(url, 'records'), false);

  await holder.query('SELECT pg_advisory_unlock_shared($1::bigint)', [INSTANCE_LOCK.toString()]);
  const ok = await run(PROGRAM_LAUNCHER, cli, { env });
  const out = JSON.parse(ok.stdout) as { records: number; jobs: { moved: number } };
  t.equal(out.records, ID_LIKE.length + 1 + 150);
  t.equal(out.jobs.moved, 6);
  t.notMatch(ok.stdout + ok.stderr, String(server.port), 'no URL in the summary');
  t.equal((await holder.query('SELECT pg_try_advisory_lock($1::bigint) AS ok', [INSTANCE_LOCK.toString()])).rows[0].ok, true, 'the copy released the lock');
});

t.test('refused while a process holds the LevelDB directory, or when there is none', async (t) => {
  const dir = tempDir();
  await populate(dir);
  const url = await database();
  const api = await RecordStore.open(dir); // the API, still running
  t.teardown(() => api.close());
  await t.rejects(copyStore({ fromDataDir: dir, databaseUrl: url }), { code: 'conflict', message: /another process holds this LevelDB database .*stop the API first/ });
  t.equal(await tableExists(url, 'records'), false, 'nothing written');

  const missing = join(tempDir(), 'typo');
  await t.rejects(copyStore({ fromDataDir: missing, databaseUrl: url }), { code: 'usage', message: /no LevelDB database there/ });
  t.equal(existsSync(missing), false, 'no empty database was created in its place');

  // The lock was released by the refusals: another copy could take it.
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.teardown(() => c.end());
  t.equal((await c.query('SELECT pg_try_advisory_lock($1::bigint) AS ok', [INSTANCE_LOCK.toString()])).rows[0].ok, true);
});
