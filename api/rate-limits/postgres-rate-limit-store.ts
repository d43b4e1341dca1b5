// The rate-limit counters every API instance on one PostgreSQL database shares (docs/operations.md
// "Rate limits"): @fastify/rate-limit's store interface over the `rate_limit_counters` table
// (migration 5). A window starts at a key's first request and ends `timeWindow` later on the database's
// clock, the one every instance shares; each request is one atomic upsert, so instances racing on a key
// each get their own count and together never exceed the budget.
import type pg from 'pg';
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';

/** What a store answers for one request: the count in the current window, milliseconds until it ends. */
export interface WindowCount {
  current: number;
  ttl: number;
}

/** Rows past their window deleted per statement, so no one statement holds many row locks for long. */
const PRUNE_BATCH = 5_000;
/** Statements one prune run issues at most; what is left waits for the next run. */
const PRUNE_BATCHES = 20;

export class PostgresRateLimitCounters {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  /**
   * Counts one request of `key` in its window of `windowMs`, starting a new window when the last one
   * ended. `now()` is the statement's start: one that waited on the row lock of a racing statement which
   * started later can see a little more than `windowMs` left, hence the bound on the ttl.
   */
  async increment(key: string, windowMs: number): Promise<WindowCount> {
    const { rows } = await this.pool.query<{ hits: string; ttl: string }>(
      `INSERT INTO rate_limit_counters AS c (key, hits, reset_at) VALUES ($1, 1, now() + make_interval(secs => $2::double precision / 1000))
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN c.reset_at <= now() THEN 1 ELSE c.hits + 1 END,
         reset_at = CASE WHEN c.reset_at <= now() THEN excluded.reset_at ELSE c.reset_at END
       RETURNING hits, least($2::double precision, greatest(0, ceil(extract(epoch FROM (reset_at - now())) * 1000)))::bigint AS ttl`,
      [key, windowMs],
    );
    const r = rows[0]!;
    return { current: Number(r.hits), ttl: Number(r.ttl) };
  }

  /**
   * Deletes rows whose window has ended (the next request of such a key starts a new window either way,
   * so this only bounds the table); returns how many. In batches, at most PRUNE_BATCHES of them.
   */
  async prune(): Promise<number> {
    let total = 0;
    for (let i = 0; i < PRUNE_BATCHES; i++) {
      const r = await this.pool.query(
        'DELETE FROM rate_limit_counters WHERE key IN (SELECT key FROM rate_limit_counters WHERE reset_at <= now() ORDER BY reset_at LIMIT $1 FOR UPDATE SKIP LOCKED)',
        [PRUNE_BATCH],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < PRUNE_BATCH) break;
    }
    return total;
  }

  /**
   * The store class @fastify/rate-limit instantiates (it takes a constructor, not an instance). Keys
   * already name their policy (rate-limits.ts), so every route's child store is this same one.
   */
  storeClass(): FastifyRateLimitStoreCtor {
    const increment = (key: string, windowMs: number) => this.increment(key, windowMs);
    return class PostgresRateLimitStore implements FastifyRateLimitStore {
      incr(key: string, cb: (err: Error | null, res?: WindowCount) => void, timeWindow: number): void {
        increment(key, timeWindow).then((r) => cb(null, r), (err: Error) => cb(err));
      }

      child(): this {
        return this;
      }
    };
  }
}
