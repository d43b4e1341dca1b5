// The repository contract (repository-contract.ts) against PostgreSQL: a real server, started for this
// file on a free loopback port (test/support/postgres.ts), and the migrations that build its schema.
import pg from 'pg';
import t from 'tap';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { migrate, schemaVersion } from '../../api/store/postgres/migrate.ts';
import { MIGRATIONS } from '../../api/store/postgres/migrations.ts';
import { LOCKS_APPLICATION } from '../../api/store/postgres/advisory-locks.ts';
import { PostgresRecordStore } from '../../api/store/postgres/postgres-record-store.ts';
import { newDatabase, startPostgres } from '../support/postgres.ts';
import { repositoryContract } from './repository-contract.ts';

const server = await startPostgres();
const closers: (() => Promise<unknown>)[] = [];
// One teardown, in order: clients end before the server, whose shutdown would fail their connections.
t.teardown(async () => {
  for (const close of closers.reverse()) await close();
  await server.stop();
});
t.comment(`PostgreSQL started in ${server.startMs} ms on port ${server.port}`);

const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
closers.push(() => admin.end());
const database = () => newDatabase(server, 'db');

const idleErrors: Error[] = [];
const storeUrl = await database();
const store = await PostgresRecordStore.open({ connectionString: storeUrl, onIdleError: (err) => idleErrors.push(err) });
closers.push(() => store.close());

t.test('the repository contract', async (t) => {
  repositoryContract(t, store);
});

t.test('instances starting at once apply each migration once', async (t) => {
  const url = await database();
  const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: url, max: 2 }));
  t.teardown(() => Promise.all(pools.map((p) => p.end())));
  t.equal(await schemaVersion(pools[0]!), 0);
  const applied = await Promise.all(pools.map((p) => migrate(p)));
  t.same(applied.flat(), MIGRATIONS.map((m) => m.version), 'every version applied by exactly one instance');
  t.equal(await schemaVersion(pools[0]!), MIGRATIONS.length);
  t.same(await migrate(pools[1]!), [], 'a restart applies nothing');
  const { rows } = await pools[0]!.query<{ version: number }>('SELECT version FROM migrations ORDER BY version');
  t.same(rows.map((r) => r.version), MIGRATIONS.map((m) => m.version));
});

t.test('a failing migration leaves the schema as it was; a newer schema is refused', async (t) => {
  const url = await database();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  t.teardown(() => pool.end());
  const broken = [...MIGRATIONS, { version: MIGRATIONS.length + 1, name: 'broken', sql: 'CREATE TABLE extra (x int); SELECT no_such_function()' }];
  await t.rejects(migrate(pool, broken));
  t.equal(await schemaVersion(pool), 0, 'the whole run rolled back');
  t.equal((await pool.query("SELECT to_regclass('records') AS r")).rows[0].r, null);
  t.same(await migrate(pool, broken.slice(0, 1)), [1]);
  await pool.query("INSERT INTO migrations (version, name) VALUES (99, 'from a newer release')");
  await t.rejects(migrate(pool), new CustodyError('bad_version', `the database schema is at version 99, newer than this release knows (${MIGRATIONS.length})`));
  await t.rejects(PostgresRecordStore.open({ connectionString: url }), { code: 'bad_version' });
  await t.rejects(migrate(pool, [{ version: 2, name: 'gap', sql: '' }]), { code: 'bad_version' }, 'versions start at 1 without gaps');
});

t.test('an idle connection the server ends is dropped, and the store goes on', async (t) => {
  await store.put('idle', 'k', { v: 1 });
  const db = new URL(storeUrl).pathname.slice(1);
  const { rows } = await admin.query<{ n: number }>(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> $2',
    [db, LOCKS_APPLICATION],
  );
  const ended = rows[0]!.n;
  t.ok(ended >= 1, 'the store had an idle connection to end');
  for (let i = 0; idleErrors.length < ended && i < 250; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(idleErrors.length, ended, 'the pool reported each ended connection instead of throwing');
  t.same(await store.get('idle', 'k'), { v: 1 }, 'the next read opens a new connection');
});

t.test('exclusive holds across two stores on one database (two instances); a lost lock session is reported and replaced', async (t) => {
  const url = await database();
  const lost: Error[] = [];
  const a = await PostgresRecordStore.open({ connectionString: url, onLocksLost: (err) => lost.push(err) });
  const b = await PostgresRecordStore.open({ connectionString: url });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let inside = 0;
  let peak = 0;
  const section = async () => {
    inside++;
    peak = Math.max(peak, inside);
    const n = ((await a.get<number>('counter', 'n')) ?? 0) + 1;
    await sleep(5);
    await b.put('counter', 'n', n);
    inside--;
  };
  await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).exclusive('org:acme', section)));
  t.equal(peak, 1, 'one holder across both stores');
  t.equal(await a.get('counter', 'n'), 10, 'no read-modify-write lost');
  t.same(await a.exclusive('org:acme', () => b.tryExclusive('org:acme', async () => 'b')), { ran: false }, 'the other store cannot take a held name');
  t.same(await b.tryExclusive('org:acme', async () => 'b'), { ran: true, value: 'b' }, 'released by the holder');

  await a.exclusive('warm', async () => undefined);
  const db = new URL(url).pathname.slice(1);
  const { rows } = await admin.query<{ n: number }>('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [db, LOCKS_APPLICATION]);
  t.equal(rows[0]!.n, 2, 'each store has one lock session');
  for (let i = 0; lost.length === 0 && i < 250; i++) await sleep(20);
  t.equal(lost.length, 1, 'the store whose lock session failed said so');
  t.same(await a.tryExclusive('after', async () => 'again'), { ran: true, value: 'again' }, 'the next lock opens a new session');
});
