// Applies the schema migrations (migrations.ts) that a database lacks. Several API instances may start at
// once: each takes one transaction-scoped advisory lock first, so one applies the missing migrations and
// the others, once it commits, find nothing left to do. A migration that fails rolls back with all the
// others of that run, leaving the database at the version it had.
import pg, { type Pool } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import { createLogger } from '../../../common/logger.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { MIGRATIONS, type Migration } from './migrations.ts';

/** The advisory lock key of schema changes ("custody" in ASCII), shared by every instance. */
const MIGRATION_LOCK = 0x637573746f6479n;

/** Runs `fn` in one transaction on a client of `pool`: committed when it returns, rolled back when it throws. */
export async function inTransaction<R>(pool: Pool, fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Brings the schema to the newest migration; returns the versions this call applied (empty when none). */
export async function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new CustodyError('bad_version', `migration ${m.name} has version ${m.version}, expected ${i + 1}`);
  });
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK.toString()]);
    await client.query('CREATE TABLE IF NOT EXISTS migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM migrations ORDER BY version');
    const done = new Set(rows.map((r) => r.version));
    const newest = rows[rows.length - 1]?.version ?? 0;
    // A newer release migrated this database: running older code against its schema is refused.
    if (newest > migrations.length) throw new CustodyError('bad_version', `the database schema is at version ${newest}, newer than this release knows (${migrations.length})`);
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}

/** The version the database is at (0: never migrated). */
export async function schemaVersion(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ v: number | null }>("SELECT CASE WHEN to_regclass('migrations') IS NULL THEN 0 END AS v");
  if (rows[0]?.v === 0) return 0;
  const r = await pool.query<{ v: number | null }>('SELECT max(version) AS v FROM migrations');
  return r.rows[0]?.v ?? 0;
}

/** How to reach a database: the URL, and optionally the password apart from it. */
export interface ConnectionOptions {
  /** postgres://user@host:port/database */
  connectionString: string;
  /** Read at each new connection, so a rotated password file takes effect without a restart. */
  password?: () => Promise<string>;
  /** Connections in the pool. */
  max?: number;
  /** Told of an idle connection the server ended; logged when not given. */
  onIdleError?: (err: Error) => void;
}

/** The client settings of `opts`. With a password source the URL is parsed here: given as a
 * connection string, its empty password would override the source. */
export function clientConfig(opts: Pick<ConnectionOptions, 'connectionString' | 'password'>): pg.ClientConfig {
  if (!opts.password) return { connectionString: opts.connectionString };
  return { ...parseIntoClientConfig(opts.connectionString), password: opts.password };
}

/** A pool whose database has every migration applied; closed again when that fails.
 * An idle pooled connection the server ends (a restart, a failover, an administrator's terminate) is
 * reported to `onIdleError` and dropped by the pool, whose next query opens a new one; without the
 * listener the pool's 'error' event would end the process. */
export async function openMigratedPool(opts: ConnectionOptions): Promise<Pool> {
  const pool = new pg.Pool({ ...clientConfig(opts), max: opts.max ?? 10 });
  pool.on('error', opts.onIdleError ?? logIdleError);
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return pool;
}

const log = createLogger('postgres');
function logIdleError(err: Error): void {
  log.warn({ err: err.message }, 'an idle PostgreSQL connection failed; the pool dropped it');
}
