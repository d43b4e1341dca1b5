// PostgresBffStore (docs/platform/bff.md "The PostgreSQL store") on a real PostgreSQL server started for
// this file (test/support/postgres.ts): the store contract (bff-store-contract.ts) with two stores on
// separate pools as two BFF instances have them, the schema setup, what the table holds, the lease, and
// two BFF helper instances on one database against the real API: one refresh per expiry, and a sign-out on
// one instance seen by the other.
import t from 'tap';
import pg from 'pg';
import { createHash } from 'node:crypto';
import { BffError, PostgresBffStore } from '../../api/sdk/index.ts';
import { newDatabase, startPostgres } from '../support/postgres.ts';
import { bffStoreContract } from './bff-store-contract.ts';
import { setupBff } from './bff-harness.ts';

const server = await startPostgres();
const closers: (() => Promise<unknown>)[] = [];
// Pools end before the server, whose shutdown would fail their connections.
t.teardown(async () => {
  for (const close of closers.reverse()) await close();
  await server.stop();
});

async function pools(n: number, max = 4): Promise<pg.Pool[]> {
  const url = await newDatabase(server, 'bff');
  const made = Array.from({ length: n }, () => {
    const p = new pg.Pool({ connectionString: url, max });
    // pool.end() resolves before its idle connections have closed: the server's shutdown (57P01) may
    // still reach them. Any other error of an idle connection fails the file.
    p.on('error', (err) => { if ((err as { code?: string }).code !== '57P01') throw err; });
    return p;
  });
  closers.push(() => Promise.all(made.map((p) => p.end())));
  return made;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('the store contract, two instances on one database', async (t) => {
  const [p1, p2] = await pools(2);
  // Instances starting together each run the setup; again later, it changes nothing.
  await Promise.all([PostgresBffStore.setupSchema(p1!), PostgresBffStore.setupSchema(p2!), PostgresBffStore.setupSchema(p2!)]);
  await PostgresBffStore.setupSchema(p1!);
  let now = Date.parse('2026-01-01T00:00:00Z');
  const clock = () => now;
  bffStoreContract(t, {
    a: new PostgresBffStore({ pool: p1!, now: clock }),
    b: new PostgresBffStore({ pool: p2!, now: clock }),
    advance: (ms) => { now += ms; },
  });
});

t.test('the table: keys as SHA-256 digests, values as given, expiry on the database clock, bounded sweeps', async (t) => {
  const [pool] = await pools(1);
  t.throws(() => new PostgresBffStore({ pool: pool!, table: 'bff; drop table x' }), TypeError, 'a table name that is not an identifier');
  t.throws(() => new PostgresBffStore({ pool: pool!, table: 'BffStore' }), TypeError);
  await PostgresBffStore.setupSchema(pool!, 'bff_sessions');
  const store = new PostgresBffStore({ pool: pool!, table: 'bff_sessions' });
  const key = `bff:session:bfr_${'A'.repeat(43)}`;
  await store.set(key, 'v1.sealed', 60_000);
  const { rows } = await pool!.query<{ key_sha256: Buffer; value: string; ttl: number }>(
    'SELECT key_sha256, value, extract(epoch FROM expires_at - now())::float8 AS ttl FROM bff_sessions',
  );
  t.equal(rows.length, 1);
  t.same(rows[0]!.key_sha256, createHash('sha256').update(key).digest(), 'the key is kept as its digest');
  t.notOk(JSON.stringify(rows).includes('bfr_'), 'the session reference is nowhere in the table');
  t.equal(rows[0]!.value, 'v1.sealed');
  t.ok(rows[0]!.ttl > 58 && rows[0]!.ttl <= 60, 'expiry from the database clock');

  await store.set('bff:tx:soon', 'x', 1);
  await sleep(20);
  t.equal(await store.get('bff:tx:soon'), undefined, 'expired on the database clock');
  t.equal(await store.sweep(), 1, 'the sweep deletes the expired row');
  t.equal(await store.get(key), 'v1.sealed', 'and keeps the live one');
});

t.test('the lease: a holder past leaseMs loses the lock to the other instance; a lost connection is not reused', async (t) => {
  const [p1, p2] = await pools(2);
  await PostgresBffStore.setupSchema(p1!);
  const a = new PostgresBffStore({ pool: p1! });
  const b = new PostgresBffStore({ pool: p2! });
  const events: string[] = [];
  const hung = a.withLock('bff-session:lease', { leaseMs: 300, waitMs: 1_000 }, async () => {
    events.push('a holds');
    await sleep(1_500);
    events.push('a done');
    return 'a';
  });
  await sleep(50);
  const started = Date.now();
  const got = await b.withLock('bff-session:lease', { leaseMs: 60_000, waitMs: 5_000 }, async () => { events.push('b holds'); return 'b'; });
  t.equal(got, 'b');
  const waited = Date.now() - started;
  t.ok(waited >= 200 && waited < 1_400, `b got the lock once a's lease ran out (${waited} ms)`);
  t.equal(await hung, 'a', 'a\'s work finished and its result stands');
  t.same(events, ['a holds', 'b holds', 'a done']);
  t.equal(p1!.totalCount, p1!.idleCount, 'no connection left checked out');
  t.equal(await a.withLock('bff-session:lease', { leaseMs: 60_000, waitMs: 1_000 }, async () => 'again'), 'again', 'the lock works again on a fresh connection');

  // A lock_timeout from the database's own wait.
  let release!: () => void;
  const held = a.withLock('bff-session:t', { leaseMs: 60_000, waitMs: 1_000 }, () => new Promise<void>((r) => { release = r; }));
  await sleep(50);
  const code = await b.withLock('bff-session:t', { leaseMs: 60_000, waitMs: 150 }, async () => 'ran').catch((err: unknown) => (err instanceof BffError ? err.code : String(err)));
  t.equal(code, 'lock_timeout', 'the database\'s wait ends in lock_timeout');
  release();
  await held;
  t.equal(p2!.totalCount, p2!.idleCount, 'the timed-out waiter gave its connection back');

  // A pool with every connection in use: the wait for one is bounded by waitMs too.
  const [one] = await pools(1, 1);
  const c = new PostgresBffStore({ pool: one! });
  let free!: () => void;
  const busy = c.withLock('bff-session:busy', { leaseMs: 60_000, waitMs: 1_000 }, () => new Promise<void>((r) => { free = r; }));
  await sleep(50);
  const asked = Date.now();
  const code2 = await c.withLock('bff-session:other', { leaseMs: 60_000, waitMs: 150 }, async () => 'ran').catch((err: unknown) => (err instanceof BffError ? err.code : String(err)));
  t.equal(code2, 'lock_timeout', 'no connection within waitMs: lock_timeout');
  t.ok(Date.now() - asked < 1_000, 'without waiting for the pool');
  free();
  await busy;
  t.equal(await c.withLock('bff-session:other', { leaseMs: 60_000, waitMs: 1_000 }, async () => 'ran'), 'ran', 'the connection that came late went back to the pool');
});

t.test('two BFF instances on one database: one refresh per expiry, both see the rotated session, a sign-out on one is seen by the other', async (t) => {
  const b = await setupBff(t);
  const [p1, p2] = await pools(2);
  await PostgresBffStore.setupSchema(p1!);
  const one = b.instance({ store: new PostgresBffStore({ pool: p1!, now: b.h.platform.clock }) });
  const two = b.instance({ store: new PostgresBffStore({ pool: p2!, now: b.h.platform.clock }) });
  const REFRESH = '/v1/member-auth/refresh';

  const { reference } = await b.signIn(one, 'ida');
  const first = await two.session(reference);
  t.equal(first.memberId, (await one.session(reference)).memberId, 'a sign-in on one instance is a session on the other');

  b.h.advance(901);
  const got = await Promise.all([...Array(8)].map((_, i) => (i % 2 ? one : two).session(reference)));
  t.equal(b.net.calls(REFRESH).length, 1, 'exactly one refresh reached the API');
  t.equal(b.net.calls(REFRESH)[0]!.status, 200);
  t.equal(new Set(got.map((s) => s.sessionId)).size, 1, 'every caller on both instances got the one rotated session');
  t.not(got[0]!.sessionId, first.sessionId);
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 0, 'no credential was presented twice');
  t.equal((await one.context(reference)).member.id, got[0]!.memberId);
  t.equal((await two.context(reference)).member.id, got[0]!.memberId);

  // Twice more, so the credential the first refresh rotated in is the one spent next, once.
  b.h.advance(901);
  await Promise.all([one.context(reference), two.context(reference), one.session(reference), two.session(reference)]);
  t.equal(b.net.calls(REFRESH).length, 2);
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 0);

  const out = await two.signOut(reference);
  t.equal(out.revoked_sessions, 1, 'signed out on the second instance');
  try {
    await one.session(reference);
    t.fail('resolved');
  } catch (err) {
    t.equal((err as BffError).code, 'signed_out', 'the first instance sees the reference signed out');
  }
  const rows = await p1!.query('SELECT count(*)::int AS n FROM bff_store WHERE value LIKE $1', ['v1.%']);
  t.ok(rows.rows[0]!.n >= 1, 'records are sealed (v1.…) in the table');
  const all = await p1!.query<{ value: string }>('SELECT value FROM bff_store');
  t.notOk(all.rows.some((r) => r.value.includes(first.sessionId) || r.value.includes(reference)), 'no session id or reference in clear');
});
