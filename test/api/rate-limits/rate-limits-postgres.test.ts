// Rate limits on PostgreSQL (docs/operations.md "Rate limits"): the counters of migration 5 count each
// request with one atomic statement, whatever the number of instances racing on a key; a window ends on
// the database's clock and starts again at 1; pruning deletes only ended windows. Two API instances on
// one database have one budget per address and per key: what one instance counted, the other refuses.
// A store that fails lets requests through. The in-process cases also run on PostgreSQL
// (test/store/api-on-postgres.test.ts imports rate-limits.unit.ts).
import t, { type Test } from 'tap';
import Fastify from 'fastify';
import pg from 'pg';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresRecordStore } from '../../../api/store/postgres/postgres-record-store.ts';
import { PostgresRateLimitCounters } from '../../../api/rate-limits/postgres-rate-limit-store.ts';
import { rateLimits } from '../../../api/rate-limits/rate-limits.ts';
import { createPlatform } from '../../../api/platform.ts';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { newDatabase, startPostgres } from '../../support/postgres.ts';

const server = await startPostgres();
t.teardown(() => server.stop());

/** A pool on a fresh migrated database (PostgresRecordStore.open migrates it). */
async function database(t: Test, tag: string): Promise<{ url: string; pool: pg.Pool }> {
  const url = await newDatabase(server, tag);
  const store = await PostgresRecordStore.open({ connectionString: url });
  await store.close();
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  t.teardown(() => pool.end());
  return { url, pool };
}

t.test('one statement per request: concurrent instances get distinct counts; a window ends and starts again at 1', async (t) => {
  const { pool } = await database(t, 'rl_store');
  const other = new pg.Pool({ connectionString: pool.options.connectionString, max: 8 });
  t.teardown(() => other.end());
  const a = new PostgresRateLimitCounters(pool);
  const b = new PostgresRateLimitCounters(other);
  const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).increment('address:192.0.2.1', 60_000)));
  t.same(counts.map((c) => c.current).sort((x, y) => x - y), Array.from({ length: 40 }, (_, i) => i + 1), 'two pools racing: 1 to 40, each once');
  t.ok(counts.every((c) => c.ttl > 55_000 && c.ttl <= 60_000), 'one window for all of them');
  t.same(await a.increment('address:192.0.2.2', 60_000), { current: 1, ttl: 60_000 }, 'another key its own count');

  const first = await a.increment('key:short', 300);
  t.equal(first.current, 1);
  t.equal((await b.increment('key:short', 300)).current, 2, 'the same window from the other pool');
  await new Promise((r) => setTimeout(r, first.ttl + 20));
  const next = await b.increment('key:short', 300);
  t.equal(next.current, 1, 'past the window: a new one, counted from 1');
  t.ok(next.ttl > 200 && next.ttl <= 300, `its own full window (${next.ttl} ms)`);
});

t.test('pruning deletes the ended windows only', async (t) => {
  const { pool } = await database(t, 'rl_prune');
  const c = new PostgresRateLimitCounters(pool);
  for (let i = 0; i < 5; i++) await c.increment(`address:198.51.100.${i}`, 50);
  await c.increment('address:live', 60_000);
  await new Promise((r) => setTimeout(r, 80));
  t.equal(await c.prune(), 5, 'the five ended windows');
  const { rows } = await pool.query<{ key: string; hits: string }>('SELECT key, hits FROM rate_limit_counters');
  t.same(rows, [{ key: 'address:live', hits: '1' }], 'the live one is kept, with its count');
  t.equal(await c.prune(), 0, 'nothing left to prune');
});

t.test('two API instances on one database share one budget per address and per key', async (t) => {
  const url = await newDatabase(server, 'rl_apps');
  const env = { API_RATE_LIMIT_PER_ADDRESS: '4', API_RATE_LIMIT_PER_KEY: '3' };
  const instances = [];
  for (let i = 0; i < 2; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'rl-api-'));
    const store = await PostgresRecordStore.open({ connectionString: url });
    const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
    const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir, ...env }), logger: createLogger('api', 'silent'), platform });
    t.teardown(async () => {
      await app.close();
      await store.close();
    });
    instances.push({ app, platform });
  }
  const [a, b] = instances as [typeof instances[0], typeof instances[0]];
  const { sandbox } = await a.platform.tenancy.createTenant('Acme');
  const owner = await a.platform.tenancy.createKey(sandbox.id, 'owner');
  const get = (on: typeof a, remoteAddress: string, token?: string) =>
    on.app.inject({ method: 'GET', url: '/v1/tenant', remoteAddress, headers: token ? { authorization: `Bearer ${token}` } : {} });

  // Per address: four requests over both instances, then either refuses.
  const seen: string[] = [];
  for (const on of [a, b, a, b]) {
    const r = await get(on, '203.0.113.7');
    t.equal(r.statusCode, 401);
    seen.push(String(r.headers.ratelimit).replace(/;t=\d+/, ''));
  }
  t.same(seen, ['"address";r=3', '"address";r=2', '"address";r=1', '"address";r=0'], 'each instance counts on from the other\'s count');
  const refused = await get(b, '203.0.113.7');
  t.equal(refused.statusCode, 429, 'the second instance answers 429 once the budget is used');
  t.match(refused.json(), { code: 'rate_limited', error: /from this address/ });
  t.ok(Number(refused.headers['retry-after']) >= 1, 'with Retry-After');
  t.equal((await get(a, '203.0.113.7')).statusCode, 429, 'and so does the first');
  t.equal((await get(b, '203.0.113.8')).statusCode, 401, 'another address has its own budget');

  // Per key: three requests from three addresses over both instances, then either refuses.
  t.same([(await get(a, '192.0.2.1', owner.token)).statusCode, (await get(b, '192.0.2.2', owner.token)).statusCode, (await get(a, '192.0.2.3', owner.token)).statusCode], [200, 200, 200]);
  const keyRefused = await get(b, '192.0.2.4', owner.token);
  t.equal(keyRefused.statusCode, 429, 'the key\'s fourth request, on the other instance from a fourth address');
  t.match(keyRefused.json(), { code: 'rate_limited', error: /with this API key/ });
  t.match(keyRefused.headers.ratelimit, /"key";r=0;t=\d+$/);

  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const { rows } = await c.query<{ key: string }>('SELECT key FROM rate_limit_counters ORDER BY key');
  await c.end();
  t.ok(rows.every((r) => !r.key.includes(owner.key.id) && !r.key.includes(owner.token)), 'the counters hold neither key ids nor tokens');
});

t.test('a failing store lets requests through, and says so in the log', async (t) => {
  const { pool } = await database(t, 'rl_down');
  const broken = new pg.Pool({ connectionString: pool.options.connectionString });
  await broken.end();
  const warnings: string[] = [];
  const app = Fastify();
  await app.register(rateLimits, { windowMs: 60_000, perAddress: 1, perKey: 1, counters: new PostgresRateLimitCounters(broken), log: { warn: (_o: unknown, msg?: string) => void warnings.push(String(msg)) } });
  app.get('/x', async () => 'ok');
  t.teardown(() => app.close());
  const codes = [];
  for (let i = 0; i < 3; i++) codes.push((await app.inject({ method: 'GET', url: '/x' })).statusCode);
  t.same(codes, [200, 200, 200], 'past a budget of 1, uncounted');
  t.equal(warnings.length, 3);
  t.match(warnings[0], /rate limit store failed; request not counted/);
});
