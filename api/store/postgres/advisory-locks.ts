// `RecordRepository.exclusive` on PostgreSQL: named locks that hold across every API instance sharing the
// database, as session advisory locks on one connection of their own per process. A name is first taken
// in-process (local-locks.ts): a session's advisory locks are re-entrant, so two callers of one process
// would otherwise both hold it. The database lock is then asked for with pg_try_advisory_lock, again and
// again with a growing pause while another instance holds it: a blocking pg_advisory_lock would stall the
// one connection every other lock of the process goes through. Critical sections run their queries on
// the store's pool, never on this connection.
//
// A lock lives as long as its session. If the connection fails, every lock this process held is gone and
// another instance may take them while a section still runs: `onLost` is told (the serving process stops
// itself, as it does when it loses the instance lock), and the next lock opens a new session.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { LocalLocks, type TryResult } from '../local-locks.ts';
import { clientConfig, type ConnectionOptions } from './migrate.ts';

/** An advisory lock key: 64 bits of SHA-256 over the parts, \x00-separated (a collision only serializes two locks). */
export function advisoryKey(...parts: string[]): bigint {
  return createHash('sha256').update(parts.join('\x00')).digest().readBigInt64BE(0);
}

/** The key of an `exclusive` name, under its own domain tag. */
const lockKey = (name: string): string => advisoryKey('custody-exclusive', name).toString();

/** How the lock session names itself in pg_stat_activity. */
export const LOCKS_APPLICATION = 'custody-locks';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class AdvisoryLocks {
  private readonly local = new LocalLocks();
  private session: Promise<pg.Client> | undefined;
  private closed = false;
  /** The session's queries, one at a time: a pg client runs one query at once. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly conn: Pick<ConnectionOptions, 'connectionString' | 'password'>, private readonly onLost: (err: Error) => void) {}

  private client(): Promise<pg.Client> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    this.session ??= (async () => {
      const c = new pg.Client({ ...clientConfig(this.conn), application_name: LOCKS_APPLICATION });
      let reported = false;
      c.on('error', (err) => {
        this.session = undefined;
        if (reported || this.closed) return;
        reported = true;
        this.onLost(err);
      });
      try {
        await c.connect();
      } catch (err) {
        this.session = undefined;
        throw err;
      }
      return c;
    })();
    return this.session;
  }

  private serial<T>(query: () => Promise<T>): Promise<T> {
    const next = this.last.then(query, query);
    this.last = next.catch(() => undefined);
    return next;
  }

  private async tryDatabase(key: string): Promise<{ c: pg.Client; ok: boolean }> {
    const c = await this.client();
    const { rows } = await this.serial(() => c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]));
    return { c, ok: rows[0]?.ok === true };
  }

  private async unlock(c: pg.Client, key: string): Promise<void> {
    // A failed session released its locks already.
    await this.serial(() => c.query('SELECT pg_advisory_unlock($1::bigint)', [key])).catch(() => undefined);
  }

  async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const key = lockKey(name);
    return this.local.run(name, async () => {
      let got = await this.tryDatabase(key);
      for (let pause = 5; !got.ok; pause = Math.min(pause * 2, 100)) {
        await sleep(pause);
        got = await this.tryDatabase(key);
      }
      try {
        return await fn();
      } finally {
        await this.unlock(got.c, key);
      }
    });
  }

  async tryRun<T>(name: string, fn: () => Promise<T>): Promise<TryResult<T>> {
    const key = lockKey(name);
    if (!this.local.tryAcquire(name)) return { ran: false };
    try {
      const got = await this.tryDatabase(key);
      if (!got.ok) return { ran: false };
      try {
        return { ran: true, value: await fn() };
      } finally {
        await this.unlock(got.c, key);
      }
    } finally {
      this.local.release(name);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const s = this.session;
    this.session = undefined;
    if (s) await (await s.catch(() => undefined))?.end().catch(() => undefined);
  }
}
