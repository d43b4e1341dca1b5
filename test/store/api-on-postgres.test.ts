// The API on PostgreSQL (API_DATABASE_URL): the serving instance's lock, the password file, then route test files of the
// vault API and the platform API run unchanged on a real PostgreSQL server, a fresh database per test
// (test/support/test-store.ts).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { INSTANCE_LOCK, openServingStore, openStore, storeKind, takeInstanceLock } from '../../api/store/open-store.ts';
import { newDatabase, startPostgres } from '../support/postgres.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { traceReceiver } from '../e2e/traces-journey.ts';

const server = await startPostgres();
t.teardown(() => server.stop());
process.env.TEST_POSTGRES_URL = server.url;
const log = createLogger('api', 'silent');


t.test('any number of serving instances per database; a store copy excludes them; the lock goes with its holder', async (t) => {
  const settings = { dataDir: '/nonexistent', databaseUrl: server.url };
  t.equal(storeKind(settings), 'postgresql');
  t.equal(storeKind({ dataDir: '/d' }), 'leveldb');
  let lost = 0;
  const first = await openServingStore(settings, log, () => lost++);
  await first.store.put('probe', 'a', { n: 1 });
  const other = await openServingStore(settings, log, () => lost++);
  t.same(await other.store.get('probe', 'a'), { n: 1 }, 'a second instance serves the same records');
  const copy = (() => takeInstanceLock({ connectionString: server.url }, 'exclusive', 'instances serve it', () => undefined));
  await t.rejects(copy(), { code: 'instance_locked', message: 'instances serve it' }, 'a store copy refuses while any instance serves');
  const admin = await openStore(settings);
  t.same(await admin.get('probe', 'a'), { n: 1 }, 'the admin CLI opens the same records without the lock');
  await admin.close();
  await first.close();
  await t.rejects(copy(), { code: 'instance_locked' }, 'one instance still serves');
  await other.close();
  const copying = await copy();
  await t.rejects(openServingStore(settings, log, () => lost++), { code: 'instance_locked', message: /a store copy is writing this database/ }, 'no instance starts while a copy runs');
  await copying.end();
  const second = await openServingStore(settings, log, () => lost++);
  t.same(await second.store.get('probe', 'a'), { n: 1 }, 'after the copy the next instance serves');

  // The holder's connection ended under it (a failover): the instance is told to stop serving.
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  const { rows } = await c.query<{ n: number }>(
    "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND ((classid::bigint << 32) | objid::bigint) = $1::bigint",
    [INSTANCE_LOCK.toString()],
  );
  await c.end();
  t.equal(rows[0]!.n, 1, 'one connection held the lock');
  for (let i = 0; lost === 0 && i < 250; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(lost, 1, 'losing the lock is reported once');
  await second.store.close();
});

t.test('settings: the URL is never echoed, a password file needs a URL and replaces its password', async (t) => {
  t.equal(loadApiConfig({}).databaseUrl, undefined, 'LevelDB unless configured');
  const err = (() => { try { loadApiConfig({ API_DATABASE_URL: 'mysql://app:hunter2@db/custody' }); } catch (e) { return e as Error; } })();
  t.match(err?.message, /API_DATABASE_URL \(databaseUrl\)/);
  t.notMatch(err?.message, /hunter2/, 'a rejected URL is not printed');
  t.throws(() => loadApiConfig({ API_DATABASE_PASSWORD_FILE: '/run/secrets/pg' }), /needs API_DATABASE_URL/);
  t.throws(() => loadApiConfig({ API_DATABASE_URL: 'postgres://app:pw@db/custody', API_DATABASE_PASSWORD_FILE: '/run/secrets/pg' }), /give it once/);
  t.equal(loadApiConfig({ API_DATABASE_URL: 'postgres://app@db/custody', API_DATABASE_PASSWORD_FILE: '/run/secrets/pg' }).databasePasswordFile, '/run/secrets/pg');
});

t.test('a password file, read at each new connection', async (t) => {
  // A role that must authenticate (the server trusts everything else on loopback).
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  t.teardown(() => admin.end());
  await admin.query("CREATE ROLE app LOGIN PASSWORD 'first-secret'");
  await admin.query('CREATE DATABASE appdb OWNER app');
  const hba = (await admin.query<{ hba_file: string }>('SHOW hba_file')).rows[0]!.hba_file;
  writeFileSync(hba, `host all app 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
  await admin.query('SELECT pg_reload_conf()');

  const dir = mkdtempSync(join(tmpdir(), 'pgpass-'));
  const file = join(dir, 'password');
  const databaseUrl = `postgres://app@127.0.0.1:${server.port}/appdb`;
  await t.rejects(openStore({ dataDir: dir, databaseUrl }), 'without the password the server refuses');
  writeFileSync(file, 'wrong\n');
  await t.rejects(openStore({ dataDir: dir, databaseUrl, databasePasswordFile: file }), { code: '28P01' }, 'a wrong password is refused');
  writeFileSync(file, 'first-secret\n');
  const store = await openStore({ dataDir: dir, databaseUrl, databasePasswordFile: file });
  await store.put('probe', 'p', { ok: true });

  // Rotation: the role's password and the file change; the next connection reads the file again.
  await admin.query("ALTER ROLE app PASSWORD 'second-secret'");
  writeFileSync(file, 'second-secret\n');
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'app'");
  let got: unknown;
  for (let i = 0; got === undefined && i < 50; i++) got = await store.get('probe', 'p').catch(() => undefined);
  t.same(got, { ok: true }, 'a new connection authenticates with the rotated password');
  await store.close();
});

t.test('traced: a store read inside a span is a PostgreSQL child span with the statement and none of its values', async (t) => {
  // A program of its own (tracing is process-wide): tracing on, exporting to the receiver here; the
  // record store on this server; one read of a record whose id is a marker, inside a span.
  const traces = await traceReceiver();
  t.teardown(() => traces.close());
  const url = await newDatabase(server, 'traced');
  const marker = `marker-${randomBytes(12).toString('hex')}`;
  const script = `
    const { startTracing } = await import('./common/tracing/start-tracing.ts');
    const { tracingEnv } = await import('./common/tracing/config.ts');
    const tracing = await startTracing('api', tracingEnv());
    const { trace } = await import('@opentelemetry/api');
    const { openStore } = await import('./api/store/open-store.ts');
    const store = await openStore({ dataDir: '/nonexistent', databaseUrl: process.env.DB_URL });
    await trace.getTracer('probe').startActiveSpan('probe', async (span) => {
      await store.get('vaults', process.env.MARKER);
      span.end();
    });
    await store.close();
    await tracing.shutdown();
    process.exit(0);
  `;
  // Not execFileSync: the receiver answering the program's export runs on this process's event loop.
  await promisify(execFile)(process.execPath, ['--import', './test/setup/ts-loader.mjs', '--input-type=module', '-e', script], {
    cwd: resolve(import.meta.dirname, '../..'), encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', DB_URL: url, MARKER: marker, ...traces.env },
  });
  const probe = traces.spans.find((s) => s.name === 'probe');
  t.ok(probe, 'the program\'s span was exported');
  // The instrumentation's current semantic conventions (db.system.name, db.query.text), or the older names.
  const db = traces.spans.filter((s) => s.parentSpanId === probe?.spanId && (s.attrs['db.system.name'] ?? s.attrs['db.system']) === 'postgresql');
  t.ok(db.length >= 1, `the read is a PostgreSQL span in the same trace (${db.map((s) => s.name).join(', ')})`);
  t.ok(db.every((s) => s.traceId === probe?.traceId));
  t.ok(db.some((s) => /select/i.test(String(s.attrs['db.query.text'] ?? s.attrs['db.statement'] ?? ''))), 'with its statement');
  const all = JSON.stringify(traces.spans.map((s) => s.attrs));
  t.notOk(all.includes(marker), 'none of its values: the record id read is nowhere in the spans');
  t.notOk(all.includes(new URL(server.url).password || '\u0000none'), 'nor the connection\'s password');
});

t.test('two instances on one database: the organization lock holds across them (quota races)', async (t) => {
  const url = await newDatabase(server, 'quota');
  const [a, b] = [await openStore({ dataDir: '/nonexistent', databaseUrl: url }), await openStore({ dataDir: '/nonexistent', databaseUrl: url })];
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const limits = { apiKeysPerOrg: 3, vaultsPerOrg: 4 };
  const [va, vb] = [a, b].map((store) => new VaultService({ store, environment: 'sandbox', limits, verifyTee: undefined }));
  const { org } = await va!.createOrg('Acme', bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())));
  const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => (i % 2 ? va! : vb!).createVault(org.id, { tier: 'hosted', name: `v${i}` })));
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 4, 'four vaults created across both instances');
  t.ok(results.filter((r) => r.status === 'rejected').every((r) => (r.reason as { code?: string }).code === 'rate_limited'), 'the other six refused with rate_limited');
  let stored = 0;
  for await (const _ of b.all('vaults')) stored++;
  t.equal(stored, 4, 'the database holds four');
});

// Route tests, unchanged, on PostgreSQL. Imported while a test of this file runs, so that theirs join
// the queue of a root test that has not ended.
const root = t;
t.test('route test files on PostgreSQL', async (t) => {
  await import('../api/vault/vault-api.unit.ts');
  await import('../api/webhooks/webhook-endpoints.unit.ts');
  await import('../api/tenancy/environments.unit.ts');
  await import('../api/rwa/token-log.unit.ts');
  await import('../api/rate-limits/rate-limits.unit.ts');
  t.pass('queued');
  // Queued after theirs: each of their apps had a database of its own on this server.
  root.test('the route tests ran on PostgreSQL', async (t) => {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    const { rows } = await c.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_database WHERE datname LIKE $1", [`t${process.pid}\\_%`]);
    await c.end();
    t.ok(rows[0]!.n >= 10, `${rows[0]!.n} databases created by the route tests`);
  });
});
