// A BffStore shared by every instance of a BFF through one PostgreSQL database (docs/platform/bff.md
// "The PostgreSQL store"). The integrator passes its own pool (`new pg.Pool(...)` of the `pg` package, or
// anything with the same `query` and `connect`), and calls `PostgresBffStore.setupSchema(pool)` once at
// start: it creates the table and its index when they are missing, and is safe to run from every instance
// at once.
//
// - One row per key: the SHA-256 of the key (the key names a session reference or a transaction id, the
//   browser's cookie values, which are not kept in clear), the value as BffSessions sealed it, and its
//   expiry. A row past its expiry reads as absent and is swept in bounded batches.
// - `withLock` takes a transaction-scoped advisory lock on a 64-bit hash of the name on a connection of
//   its own, held while `fn` runs: the wait is bounded by `lock_timeout` (waitMs), the hold by
//   `idle_in_transaction_session_timeout` (leaseMs), so a holder that hangs has its session ended by the
//   server and the lock released; a crashed one releases it with its connection. Within one process the
//   waiters of one name queue first, so a process sends one connection per name to the database.
import { createHash } from 'node:crypto';
import { LocalLockQueue, lockTimeout } from './bff-local-locks.ts';
import type { BffLockOptions, BffStore } from './bff-store.ts';

/** What the store uses of a query result (`pg`'s QueryResult). */
export interface BffPgResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** A connection checked out of the pool (`pg`'s PoolClient). */
export interface BffPgClient {
  query(text: string, values?: unknown[]): Promise<BffPgResult>;
  /** With an argument, the connection is discarded rather than reused. */
  release(err?: Error | boolean): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
  removeListener(event: 'error', listener: (err: Error) => void): unknown;
}

/** The integrator's pool (`pg`'s Pool). Locks held at once each use a connection: size `max` for them plus the reads and writes. */
export interface BffPgPool {
  query(text: string, values?: unknown[]): Promise<BffPgResult>;
  connect(): Promise<BffPgClient>;
}

export interface PostgresBffStoreOptions {
  pool: BffPgPool;
  /** The table, `bff_store` by default; a lowercase identifier, optionally schema-qualified (`app.bff_store`). */
  table?: string;
  /**
   * Milliseconds since the epoch for expiry. By default the database's clock decides, one clock for every
   * instance; tests pass their own.
   */
  now?: () => number;
}

const TABLE_NAME = /^(?:[a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,62}$/;
const SWEEP_EVERY = 256;
const SWEEP_BATCH = 500;

function tableOf(name: string | undefined): string {
  const t = name ?? 'bff_store';
  if (!TABLE_NAME.test(t)) throw new TypeError(`the BFF store table must be a lowercase identifier, optionally schema-qualified: ${JSON.stringify(t)}`);
  return t;
}

/** A 64-bit advisory lock key: SHA-256 over a domain tag, the table and the name (a collision only serializes two names). */
function lockKey(table: string, name: string): string {
  return createHash('sha256').update(`bff-store-lock\x00${table}\x00${name}`).digest().readBigInt64BE(0).toString();
}

const keyDigest = (key: string) => createHash('sha256').update(key, 'utf8').digest();

export class PostgresBffStore implements BffStore {
  private readonly pool: BffPgPool;
  private readonly table: string;
  private readonly clock: (() => number) | undefined;
  private readonly queue = new LocalLockQueue();
  private writes = 0;

  constructor(o: PostgresBffStoreOptions) {
    this.pool = o.pool;
    this.table = tableOf(o.table);
    this.clock = o.now;
  }

  /**
   * Creates the store's table and expiry index when missing. Idempotent, and serialized by an advisory
   * lock so that instances starting together do not race on the catalog.
   */
  static async setupSchema(pool: BffPgPool, table?: string): Promise<void> {
    const t = tableOf(table);
    const c = await pool.connect();
    let broken: Error | undefined;
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey(t, 'schema')]);
      await c.query(`CREATE TABLE IF NOT EXISTS ${t} (
        key_sha256 bytea PRIMARY KEY CHECK (octet_length(key_sha256) = 32),
        value text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
      await c.query(`CREATE INDEX IF NOT EXISTS ${t.replace('.', '_')}_expires_at ON ${t} (expires_at)`);
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch((e: Error) => { broken = e; });
      throw err;
    } finally {
      c.release(broken);
    }
  }

  /** `now` as a parameter: the injected clock's time, or null for the database's own (`coalesce($n, now())`). */
  private at(): string | null {
    return this.clock ? new Date(this.clock()).toISOString() : null;
  }

  async get(key: string): Promise<string | undefined> {
    const { rows } = await this.pool.query(`SELECT value FROM ${this.table} WHERE key_sha256 = $1 AND expires_at > coalesce($2::timestamptz, now())`, [keyDigest(key), this.at()]);
    return rows[0]?.value as string | undefined;
  }

  // An autocommitted statement: it resolves once committed (durable unless the server runs with
  // synchronous_commit off, which a BFF store must not).
  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0)) throw new RangeError('ttlMs must be positive');
    await this.pool.query(
      `INSERT INTO ${this.table} AS t (key_sha256, value, expires_at) VALUES ($1, $2, coalesce($4::timestamptz, now()) + $3 * interval '1 millisecond')
       ON CONFLICT (key_sha256) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
      [keyDigest(key), value, Math.ceil(ttlMs), this.at()],
    );
    this.wrote();
  }

  // One statement: of two instances writing one absent key at once, the second finds the first's row
  // (the conflict waits for its commit) unexpired and writes nothing.
  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    if (!(ttlMs > 0)) throw new RangeError('ttlMs must be positive');
    const { rowCount } = await this.pool.query(
      `INSERT INTO ${this.table} AS t (key_sha256, value, expires_at) VALUES ($1, $2, coalesce($4::timestamptz, now()) + $3 * interval '1 millisecond')
       ON CONFLICT (key_sha256) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
       WHERE t.expires_at <= coalesce($4::timestamptz, now())`,
      [keyDigest(key), value, Math.ceil(ttlMs), this.at()],
    );
    this.wrote();
    return rowCount === 1;
  }

  async delete(key: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE key_sha256 = $1`, [keyDigest(key)]);
  }

  /** Deletes up to 500 expired rows; the store calls it every 256 writes, a BFF may also call it on a timer. */
  async sweep(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM ${this.table} WHERE key_sha256 IN (SELECT key_sha256 FROM ${this.table} WHERE expires_at <= coalesce($1::timestamptz, now()) LIMIT ${SWEEP_BATCH})`,
      [this.at()],
    );
    return rowCount ?? 0;
  }

  private wrote(): void {
    // A failed sweep costs nothing: the rows it missed read as absent and go with a later one.
    if (++this.writes % SWEEP_EVERY === 0) this.sweep().catch(() => undefined);
  }

  /** A connection of the pool within `ms` (a pool with every connection in use waits), or `lock_timeout`. */
  private async connectWithin(ms: number, name: string, waitMs: number): Promise<BffPgClient> {
    if (ms <= 0) throw lockTimeout(name, waitMs);
    const pending = this.pool.connect();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([pending, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(lockTimeout(name, waitMs)), ms); })]);
    } catch (err) {
      // A connection that arrives after the wait gave up goes back to the pool.
      pending.then((c) => c.release(), () => undefined);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async withLock<T>(name: string, o: BffLockOptions, fn: () => Promise<T>): Promise<T> {
    return this.queue.run(name, o.waitMs, async (leftMs) => {
      const deadline = Date.now() + leftMs;
      const c = await this.connectWithin(leftMs, name, o.waitMs);
      // The server ends the session when the lease runs out (or the connection fails): the lock is gone
      // then, and the connection is not given back to the pool.
      let lost: Error | undefined;
      const onError = (err: Error) => { lost = err; };
      c.on('error', onError);
      const done = (err?: Error) => {
        c.removeListener('error', onError);
        c.release(err ?? lost);
      };
      try {
        await c.query('BEGIN');
        const left = deadline - Date.now();
        if (left <= 0) throw lockTimeout(name, o.waitMs);
        await c.query("SELECT set_config('lock_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $2, true)", [String(Math.ceil(left)), String(Math.ceil(o.leaseMs))]);
        await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey(this.table, name)]);
      } catch (err) {
        let broken: Error | undefined;
        await c.query('ROLLBACK').catch((e: Error) => { broken = e; });
        done(broken);
        // 55P03 lock_not_available: lock_timeout ran out while another instance held the lock.
        if ((err as { code?: unknown }).code === '55P03') throw lockTimeout(name, o.waitMs);
        throw err;
      }
      try {
        return await fn();
      } finally {
        // Nothing was written in this transaction: its end only releases the lock. When the lease ran out
        // first, the server has released it already and this fails; fn's own writes stand.
        let broken: Error | undefined;
        await c.query('ROLLBACK').catch((e: Error) => { broken = e; });
        done(broken);
      }
    });
  }
}
