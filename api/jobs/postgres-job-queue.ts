// The job queue (job-queue.ts) in PostgreSQL, for several API instances sharing one database
// (docs/api-storage.md "Jobs"). A claim is one statement: it picks due jobs `FOR UPDATE SKIP LOCKED`, so
// concurrent claimers pass over each other's rows instead of waiting, and leases them in the same
// statement. Times are the database's (`now()`), the one clock all instances share.
//
// Ordering keys are enforced by a NOT EXISTS in the claim, not by advisory locks: an advisory lock lives
// as long as a session or transaction, while a lease outlives both (the claim commits, the handler runs
// for minutes, the instance may die). The rule is data: a job is claimable only when no earlier job of
// its key is queued or leased, and no other job of its key holds a live lease. Enqueue takes a
// transaction lock per ordering key, so ids of one key are assigned in commit order and "earlier" is the
// order in which claimers can see them.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { inTransaction, openMigratedPool, type ConnectionOptions } from '../store/postgres/migrate.ts';
import type { ClaimOptions, EnqueueOptions, EnqueueResult, Job, JobQueue, JobState, KindStats, LeasedJob } from './job-queue.ts';
import { LeaseLostError } from './lease-lost-error.ts';

/** The advisory lock class of enqueues under one ordering key. */
const ORDERING_LOCK = 0x6a6f6273;

interface Row {
  id: string;
  kind: string;
  key: string;
  payload: unknown;
  state: JobState;
  run_at: Date;
  attempts: number;
  dedupe_key: string | null;
  ordering_key: string | null;
  group_key: string | null;
  lease_owner: string | null;
  lease_token: string | null;
  leased_until: Date | null;
  last_error: string | null;
}

/** The columns of a Row, qualified by `t` (the claim's UPDATE ... FROM names two relations). */
const cols = (t = ''): string =>
  `${t}id::text AS id, ${['kind', 'key', 'payload', 'state', 'run_at', 'attempts', 'dedupe_key', 'ordering_key', 'group_key', 'lease_owner', 'lease_token', 'leased_until', 'last_error'].map((c) => t + c).join(', ')}`;
const COLUMNS = cols();

function toJob<P>(r: Row): Job<P> {
  return {
    id: r.id,
    kind: r.kind,
    key: r.key,
    payload: r.payload as P,
    state: r.state,
    runAt: r.run_at.getTime(),
    attempts: r.attempts,
    ...(r.dedupe_key === null ? {} : { dedupeKey: r.dedupe_key }),
    ...(r.ordering_key === null ? {} : { orderingKey: r.ordering_key }),
    ...(r.group_key === null ? {} : { groupKey: r.group_key }),
    ...(r.lease_owner === null ? {} : { leaseOwner: r.lease_owner }),
    ...(r.leased_until === null ? {} : { leasedUntil: r.leased_until.getTime() }),
    ...(r.last_error === null ? {} : { lastError: r.last_error }),
  };
}

/** A bigint id, or null when `id` is not one (then no job has it). */
function idParam(id: string): string | null {
  return /^[0-9]{1,18}$/.test(id) ? id : null;
}

export type PostgresJobQueueOptions = ConnectionOptions;

/** The advisory lock class claims with a group limit take turns under. */
const CLAIM_LOCK = 0x636c6169;

type ClaimedRow = Row & { lease_token: string; leased_until: Date; lease_owner: string };

/**
 * Due jobs of kinds $2, oldest first: queued ones whose time has come and leased ones whose lease
 * lapsed, each the earliest unfinished job of its ordering key with no live lease on that key.
 */
const DUE = `
  j.kind = ANY($2::text[])
  AND ((j.state = 'queued' AND j.run_at <= now()) OR (j.state = 'leased' AND j.leased_until < now()))
  AND (j.ordering_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM jobs e
         WHERE e.ordering_key = j.ordering_key AND e.id <> j.id
           AND ((e.id < j.id AND e.state IN ('queued', 'leased')) OR (e.state = 'leased' AND e.leased_until >= now()))))`;

/**
 * Up to $3 of them. SKIP LOCKED: a row another claimer is leasing right now is passed over. A row leased
 * and committed since this statement's snapshot is re-checked on its new version by PostgreSQL before it
 * is locked, and then no longer qualifies (its lease is live).
 */
const PICK_DUE = `
  SELECT j.id FROM jobs j WHERE ${DUE}
   ORDER BY j.run_at, j.id
   LIMIT $3
   FOR UPDATE OF j SKIP LOCKED`;

/** The same, leaving out jobs past their group's limit $5: live leases of the group plus its rank among the due. */
const PICK_DUE_PER_GROUP = `
  WITH live AS (
    SELECT group_key, count(*)::int AS n FROM jobs
     WHERE state = 'leased' AND leased_until >= now() AND group_key IS NOT NULL
     GROUP BY group_key
  ), due AS (
    SELECT j.id, j.run_at, j.group_key FROM jobs j WHERE ${DUE}
  ), ranked AS (
    SELECT d.id, d.run_at,
           d.group_key IS NULL OR COALESCE(l.n, 0) + row_number() OVER (PARTITION BY d.group_key ORDER BY d.run_at, d.id) <= $5 AS fits
      FROM due d LEFT JOIN live l ON l.group_key = d.group_key
  )
  SELECT j.id FROM jobs j JOIN ranked r ON r.id = j.id
   WHERE r.fits
   ORDER BY r.run_at, j.id
   LIMIT $3
   FOR UPDATE OF j SKIP LOCKED`;

/** Leases the jobs `pick` selects to $1 for $4 ms, in one statement. */
const claimStatement = (pick: string): string => `
  WITH picked AS (${pick})
  UPDATE jobs SET state = 'leased', lease_owner = $1, lease_token = gen_random_uuid(),
         leased_until = now() + $4 * interval '1 millisecond', attempts = jobs.attempts + 1, updated_at = now()
    FROM picked WHERE jobs.id = picked.id
  RETURNING ${cols('jobs.')}`;

/**
 * Inserts a queued job inside the caller's transaction (PostgresJobQueue.enqueue, and the `enqueue`
 * operations of PostgresRecordStore.batch), or finds the job its dedupe key names. Under an ordering key
 * it first takes that key's transaction lock, so the key's ids follow commit order.
 */
export async function insertJob<P>(client: Pick<pg.PoolClient, 'query'>, kind: string, key: string, payload: P, opts: EnqueueOptions = {}): Promise<EnqueueResult<P>> {
  if (opts.orderingKey !== undefined) {
    const k = createHash('sha256').update(opts.orderingKey).digest().readInt32BE(0);
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [ORDERING_LOCK, k]);
  }
  const ins = await client.query<Row>(
    `INSERT INTO jobs (kind, key, payload, run_at, dedupe_key, ordering_key, group_key)
     VALUES ($1, $2, $3::json, COALESCE($4, now()), $5, $6, $7)
     ON CONFLICT (kind, dedupe_key) DO NOTHING RETURNING ${COLUMNS}`,
    [kind, key, JSON.stringify(payload), opts.runAt === undefined ? null : new Date(opts.runAt), opts.dedupeKey ?? null, opts.orderingKey ?? null, opts.groupKey ?? null],
  );
  if (ins.rows[0] !== undefined) return { job: toJob<P>(ins.rows[0]), created: true };
  // The conflicting row is committed (ON CONFLICT waited for its inserter), so this read finds it.
  const { rows } = await client.query<Row>(`SELECT ${COLUMNS} FROM jobs WHERE kind = $1 AND dedupe_key = $2`, [kind, opts.dedupeKey]);
  return { job: toJob<P>(rows[0]!), created: false };
}

export class PostgresJobQueue implements JobQueue {
  /** `pool` must reach a database migrated to version 2 at least (`open` migrates). */
  constructor(private readonly pool: pg.Pool, private readonly ownsPool = false) {}

  static async open(opts: PostgresJobQueueOptions): Promise<PostgresJobQueue> {
    const pool = await openMigratedPool(opts);
    return new PostgresJobQueue(pool, true);
  }

  enqueue<P>(kind: string, key: string, payload: P, opts: EnqueueOptions = {}): Promise<EnqueueResult<P>> {
    return inTransaction(this.pool, (client) => insertJob<P>(client, kind, key, payload, opts));
  }

  async claim(workerId: string, kinds: readonly string[], limit: number, leaseMs: number, opts: ClaimOptions = {}): Promise<LeasedJob[]> {
    if (limit <= 0 || kinds.length === 0) return [];
    const { perGroup } = opts;
    const rows = perGroup === undefined
      ? (await this.pool.query<ClaimedRow>(claimStatement(PICK_DUE), [workerId, kinds, limit, leaseMs])).rows
      : await inTransaction(this.pool, async (client) => {
        // Two claims at once could each find a group below its limit and together pass it: claims with a
        // group limit take turns (one short statement each), and each sees the leases the last one made.
        await client.query('SELECT pg_advisory_xact_lock($1, 0)', [CLAIM_LOCK]);
        return (await client.query<ClaimedRow>(claimStatement(PICK_DUE_PER_GROUP), [workerId, kinds, limit, leaseMs, perGroup])).rows;
      });
    return rows
      .map((r) => ({ ...toJob(r), state: 'leased' as const, leaseToken: r.lease_token, leasedUntil: r.leased_until.getTime(), leaseOwner: r.lease_owner }))
      .sort((a, b) => Number(a.id) - Number(b.id));
  }

  /** Runs an update of the job leased under `token`; refuses when no row matched. */
  private async leased(id: string, token: string, set: string, params: unknown[] = []): Promise<Row> {
    const { rows } = await this.pool.query<Row>(
      `UPDATE jobs SET ${set}, updated_at = now() WHERE id = $1 AND state = 'leased' AND lease_token = $2 RETURNING ${COLUMNS}`,
      [idParam(id), /^[0-9a-f-]{36}$/i.test(token) ? token : null, ...params],
    );
    if (rows[0] === undefined) throw new LeaseLostError(id);
    return rows[0];
  }

  async complete(job: Pick<Job, 'id'>, leaseToken: string): Promise<void> {
    await this.leased(job.id, leaseToken, "state = 'done', lease_token = NULL, leased_until = NULL");
  }

  async fail(job: Pick<Job, 'id'>, leaseToken: string, retryAt: number | null, error: string): Promise<void> {
    if (retryAt === null) await this.leased(job.id, leaseToken, "state = 'dead', lease_token = NULL, leased_until = NULL, last_error = $3", [error]);
    else await this.leased(job.id, leaseToken, "state = 'queued', lease_token = NULL, leased_until = NULL, last_error = $3, run_at = $4", [error, new Date(retryAt)]);
  }

  async extend(job: Pick<Job, 'id'>, leaseToken: string, leaseMs: number): Promise<number> {
    const r = await this.leased(job.id, leaseToken, "leased_until = now() + $3 * interval '1 millisecond'", [leaseMs]);
    return r.leased_until!.getTime();
  }

  async release(job: Pick<Job, 'id'>, leaseToken: string, runAt?: number): Promise<void> {
    await this.leased(job.id, leaseToken, "state = 'queued', lease_token = NULL, leased_until = NULL, run_at = COALESCE($3, LEAST(run_at, now())), attempts = GREATEST(attempts - 1, 0)", [runAt === undefined ? null : new Date(runAt)]);
  }

  async get<P = unknown>(id: string): Promise<Job<P> | undefined> {
    const { rows } = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM jobs WHERE id = $1`, [idParam(id)]);
    return rows[0] === undefined ? undefined : toJob<P>(rows[0]);
  }

  async prune(before: number, limit: number): Promise<number> {
    if (limit <= 0) return 0;
    // A finished job's updated_at is when it finished (nothing changes it afterwards); the dedupe key goes with the row.
    const r = await this.pool.query(
      `DELETE FROM jobs WHERE id IN (
         SELECT id FROM jobs WHERE state IN ('done', 'dead') AND updated_at < $1 ORDER BY updated_at LIMIT $2)`,
      [new Date(before), limit],
    );
    return r.rowCount ?? 0;
  }

  async stats(): Promise<KindStats[]> {
    const { rows } = await this.pool.query<{ kind: string; depth: string; leased: string; lag_ms: number | null }>(
      `SELECT kind, count(*) AS depth,
              count(*) FILTER (WHERE state = 'leased' AND leased_until >= now()) AS leased,
              extract(epoch FROM now() - min(CASE WHEN state = 'queued' AND run_at <= now() THEN run_at
                                                  WHEN state = 'leased' AND leased_until < now() THEN leased_until END)) * 1000 AS lag_ms
         FROM jobs WHERE state IN ('queued', 'leased') GROUP BY kind ORDER BY kind`,
    );
    return rows.map((r) => ({ kind: r.kind, depth: Number(r.depth), leased: Number(r.leased), lagMs: Math.max(0, Math.round(Number(r.lag_ms ?? 0))) }));
  }

  /** Ends an owned pool once every connection has closed (`pool.end()` resolves before the sockets do). */
  async close(): Promise<void> {
    if (!this.ownsPool) return;
    let left = this.pool.totalCount;
    const closed = new Promise<void>((ok) => {
      if (left === 0) ok();
      this.pool.on('remove', () => {
        if (--left <= 0) ok();
      });
    });
    await this.pool.end();
    await closed;
  }
}
