// The API's records in PostgreSQL: the RecordRepository of record-store.ts for several API instances
// sharing one database (docs/api-storage.md). Every range is the byte range record-store.ts gives LevelDB,
// over bytea columns that compare as LevelDB does, so walks, positions and cursors are identical.
import type pg from 'pg';
import type { IndexEntry, Op, RecordRepository } from '../record-repository.ts';
import { inTransaction, openMigratedPool, type ConnectionOptions } from './migrate.ts';
import { insertJob, PostgresJobQueue } from '../../jobs/postgres-job-queue.ts';
import { AdvisoryLocks, advisoryKey } from './advisory-locks.ts';
import type { TryResult } from '../local-locks.ts';
import { createLogger } from '../../../common/logger.ts';
import { PostgresRateLimitCounters } from '../../rate-limits/postgres-rate-limit-store.ts';

const log = createLogger('postgres');

const SEP = '\x00';
/** LevelDB's upper bound of a prefix range in record-store.ts: the string '\xff', i.e. UTF-8 C3 BF. */
const TOP = '\xff';
/** How many rows a generator reads per query. */
const PAGE = 500;
/** PostgreSQL's serialization failure and deadlock: a batch that lost to another is run again. */
const RETRYABLE = new Set(['40001', '40P01']);
const ATTEMPTS = 5;
/** The advisory lock class of reindex runs, one lock per collection. */
const REINDEX_LOCK = 0x72656978;

const b = (s: string): Buffer => Buffer.from(s, 'utf8');
const s = (x: Buffer): string => x.toString('utf8');

/** The advisory lock of one record, over its collection and id. */
const lockKey = (collection: string, id: string): bigint => advisoryKey(collection, id);

type Queryable = Pick<pg.PoolClient, 'query'>;

/** postgres://user@host:port/database, an optional password source, pool size. */
export interface PostgresRecordStoreOptions extends ConnectionOptions {
  /** Told when the connection holding this process's `exclusive` locks fails (advisory-locks.ts); logged when not given. */
  onLocksLost?: (err: Error) => void;
}

export class PostgresRecordStore implements RecordRepository {
  private constructor(private readonly pool: pg.Pool, private readonly locks: AdvisoryLocks) {}

  /** Connects and applies the missing migrations before anything is read. */
  static async open(opts: PostgresRecordStoreOptions): Promise<PostgresRecordStore> {
    const pool = await openMigratedPool(opts);
    const onLost = opts.onLocksLost ?? ((err: Error) => log.error({ err: err.message }, 'the connection holding this process\'s locks failed; a critical section may have run unguarded'));
    return new PostgresRecordStore(pool, new AdvisoryLocks(opts, onLost));
  }

  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(name, fn);
  }

  tryExclusive<T>(name: string, fn: () => Promise<T>): Promise<TryResult<T>> {
    return this.locks.tryRun(name, fn);
  }

  /** Runs `fn` in one transaction, again when PostgreSQL aborted it for a conflict with another. */
  private async tx<R>(fn: (c: Queryable) => Promise<R>): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await inTransaction(this.pool, fn);
      } catch (err) {
        if (attempt >= ATTEMPTS || !RETRYABLE.has((err as { code?: string }).code ?? '')) throw err;
      }
    }
  }

  async get<T>(collection: string, id: string): Promise<T | undefined> {
    const { rows } = await this.pool.query<{ value: string }>('SELECT value::text AS value FROM records WHERE collection = $1 AND id = $2', [collection, b(id)]);
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].value) as T);
  }

  private async apply(c: Queryable, op: Op): Promise<void> {
    if (op.type === 'enqueue') {
      const { job, created } = await insertJob(c, op.kind, op.key, op.payload, op.opts);
      op.out = { id: job.id, created };
      return;
    }
    const id = b(op.id);
    if (op.type === 'put') {
      await c.query('INSERT INTO records (collection, id, value) VALUES ($1, $2, $3::json) ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value', [op.collection, id, JSON.stringify(op.value)]);
      // Removed before the entries are written, so an entry named in both stays (as in record-store.ts).
      for (const ix of op.unindex ?? []) await c.query('DELETE FROM index_entries WHERE collection = $1 AND entry = $2', [op.collection, b(ix + SEP + op.id)]);
      for (const ix of op.index ?? []) {
        await c.query('INSERT INTO index_entries (collection, entry, id) VALUES ($1, $2, $3) ON CONFLICT (collection, entry) DO UPDATE SET id = excluded.id', [op.collection, b(ix + SEP + op.id), id]);
      }
    } else {
      await c.query('DELETE FROM records WHERE collection = $1 AND id = $2', [op.collection, id]);
      for (const ix of op.index ?? []) await c.query('DELETE FROM index_entries WHERE collection = $1 AND entry = $2', [op.collection, b(ix + SEP + op.id)]);
    }
  }

  async batch(ops: Op[]): Promise<void> {
    if (ops.length === 0) return;
    const keys = [...new Set(ops.flatMap((op) => (op.type === 'enqueue' ? [] : [lockKey(op.collection, op.id)])))].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    await this.tx(async (c) => {
      // Row locks are taken in operation order, so two batches naming the same records in another order
      // would deadlock; a lock per record, taken first and in one order, serializes them instead.
      await c.query('SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) WITH ORDINALITY AS u(k, o)', [keys.map(String)]);
      for (const op of ops) await this.apply(c, op);
    });
  }

  /** The job queue in this database, on this store's pool: what the `enqueue` operations of `batch` write. */
  jobQueue(): PostgresJobQueue {
    return new PostgresJobQueue(this.pool);
  }

  /** The rate-limit counters in this database, on this store's pool (api/rate-limits/rate-limits.ts). */
  rateLimitCounters(): PostgresRateLimitCounters {
    return new PostgresRateLimitCounters(this.pool);
  }

  put(collection: string, id: string, value: unknown, index?: string[]): Promise<void> {
    return this.batch([{ type: 'put', collection, id, value, ...(index ? { index } : {}) }]);
  }

  /** The conditional insert record-store.ts emulates with a lock: the row's primary key decides the winner. */
  insertIfAbsent(collection: string, id: string, value: unknown, index?: string[]): Promise<boolean> {
    return this.tx(async (c) => {
      const r = await c.query('INSERT INTO records (collection, id, value) VALUES ($1, $2, $3::json) ON CONFLICT (collection, id) DO NOTHING', [collection, b(id), JSON.stringify(value)]);
      if (r.rowCount !== 1) return false;
      for (const ix of index ?? []) await c.query('INSERT INTO index_entries (collection, entry, id) VALUES ($1, $2, $3) ON CONFLICT (collection, entry) DO UPDATE SET id = excluded.id', [collection, b(ix + SEP + id), b(id)]);
      return true;
    });
  }

  /** Entries in [lower, upper) (lower exclusive when `gt`), with their records, in byte order. */
  private async walk(collection: string, lower: { gte: string } | { gt: string }, upper: string, limit: number, reverse: boolean): Promise<{ entry: string; id: string; value: string | null }[]> {
    const [op, bound] = 'gt' in lower ? ['>', lower.gt] : ['>=', lower.gte];
    const { rows } = await this.pool.query<{ entry: Buffer; id: Buffer; value: string | null }>(
      `SELECT e.entry, e.id, r.value::text AS value FROM index_entries e
         LEFT JOIN records r ON r.collection = e.collection AND r.id = e.id
        WHERE e.collection = $1 AND e.entry ${op} $2 AND e.entry < $3
        ORDER BY e.entry ${reverse ? 'DESC' : 'ASC'} LIMIT $4`,
      [collection, b(bound), b(upper), limit],
    );
    return rows.map((r) => ({ entry: s(r.entry), id: s(r.id), value: r.value }));
  }

  async byIndex<T>(collection: string, prefix: string, limit = 1000): Promise<T[]> {
    const rows = await this.walk(collection, { gte: prefix }, prefix + TOP, limit, false);
    return rows.flatMap((r) => (r.value === null ? [] : [JSON.parse(r.value) as T]));
  }

  async byIndexAfter<T>(collection: string, prefix: string, after: string | undefined, limit: number): Promise<T[]> {
    const lower = after === undefined ? { gte: prefix } : { gt: prefix + after + SEP + TOP };
    const rows = await this.walk(collection, lower, prefix + TOP, limit, false);
    return rows.flatMap((r) => (r.value === null ? [] : [JSON.parse(r.value) as T]));
  }

  async byIndexEntries<T>(collection: string, prefix: string, after: string | undefined, limit: number, reverse = false): Promise<IndexEntry<T>[]> {
    const rows = reverse
      ? await this.walk(collection, { gte: prefix }, after === undefined ? prefix + TOP : prefix + after, limit, true)
      : await this.walk(collection, after === undefined ? { gte: prefix } : { gt: prefix + after + SEP + TOP }, prefix + TOP, limit, false);
    return rows.map((r) => ({ position: r.entry.slice(prefix.length, r.entry.length - SEP.length - r.id.length), value: r.value === null ? undefined : (JSON.parse(r.value) as T) }));
  }

  /**
   * As in record-store.ts, once per `version`; here in one transaction under a lock per collection, so
   * instances starting together index once, and an interrupted run leaves nothing half done.
   */
  reindex<T>(collection: string, version: number, indexOf: (record: T) => string[]): Promise<number> {
    return this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [REINDEX_LOCK, collection]);
      const v = await c.query<{ value: string }>('SELECT value::text AS value FROM records WHERE collection = $1 AND id = $2', ['index_versions', b(collection)]);
      const reached = v.rows[0] === undefined ? undefined : (JSON.parse(v.rows[0].value) as number);
      if (reached !== undefined && reached >= version) return 0;
      const { rows } = await c.query<{ id: Buffer; value: string }>('SELECT id, value::text AS value FROM records WHERE collection = $1 ORDER BY id', [collection]);
      for (const r of rows) {
        const id = s(r.id);
        for (const ix of indexOf(JSON.parse(r.value) as T)) {
          await c.query('INSERT INTO index_entries (collection, entry, id) VALUES ($1, $2, $3) ON CONFLICT (collection, entry) DO UPDATE SET id = excluded.id', [collection, b(ix + SEP + id), r.id]);
        }
      }
      await this.apply(c, { type: 'put', collection: 'index_versions', id: collection, value: version });
      return rows.length;
    });
  }

  /** Records with ids in (after, lt), in byte order, read `PAGE` at a time (each page its own snapshot). */
  async *entries<T>(collection: string, opts: { after?: string; lt?: string; limit?: number } = {}): AsyncGenerator<{ id: string; value: T }> {
    let left = opts.limit ?? Infinity;
    let lower: { gte: Buffer } | { gt: Buffer } = opts.after === undefined ? { gte: b('') } : { gt: b(opts.after) };
    const upper = b(opts.lt ?? TOP);
    while (left > 0) {
      const n = Math.min(PAGE, left);
      const { rows } = await this.pool.query<{ id: Buffer; value: string }>(
        `SELECT id, value::text AS value FROM records WHERE collection = $1 AND id ${'gt' in lower ? '>' : '>='} $2 AND id < $3 ORDER BY id LIMIT $4`,
        [collection, 'gt' in lower ? lower.gt : lower.gte, upper, n],
      );
      for (const r of rows) yield { id: s(r.id), value: JSON.parse(r.value) as T };
      left -= rows.length;
      if (rows.length < n) return;
      lower = { gt: rows[rows.length - 1]!.id };
    }
  }

  async *range<T>(collection: string, opts: { after?: string; lt?: string } = {}): AsyncGenerator<T> {
    for await (const e of this.entries<T>(collection, opts)) yield e.value;
  }

  async *all<T>(collection: string): AsyncGenerator<T> {
    for await (const e of this.entries<T>(collection)) yield e.value;
  }

  async count(collection: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM records WHERE collection = $1', [collection]);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Writes records and index entries exported by another store (RecordStore.exportRaw) verbatim: JSON
   * text as given, ids and entries as their UTF-8 bytes. `batchSize` rows (records and entries together)
   * per transaction. Plain inserts: a row already present fails the import instead of being overwritten,
   * so it is meant for a store that holds none of them (api/store/store-copy.ts checks it is empty).
   * Returns how many records and index entries it wrote.
   */
  async importRaw(
    entries: AsyncIterable<{ kind: 'record'; collection: string; id: string; value: string } | { kind: 'index'; collection: string; entry: string; id: string }>,
    opts: { batchSize?: number } = {},
  ): Promise<{ records: number; indexEntries: number }> {
    const size = Math.max(1, opts.batchSize ?? 1000);
    const recs = { collection: [] as string[], id: [] as Buffer[], value: [] as string[] };
    const ixs = { collection: [] as string[], entry: [] as Buffer[], id: [] as Buffer[] };
    const done = { records: 0, indexEntries: 0 };
    const flush = async () => {
      if (recs.id.length + ixs.id.length === 0) return;
      await this.tx(async (c) => {
        if (recs.id.length > 0) await c.query('INSERT INTO records (collection, id, value) SELECT * FROM unnest($1::text[], $2::bytea[], $3::json[])', [recs.collection, recs.id, recs.value]);
        if (ixs.id.length > 0) await c.query('INSERT INTO index_entries (collection, entry, id) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])', [ixs.collection, ixs.entry, ixs.id]);
      });
      done.records += recs.id.length;
      done.indexEntries += ixs.id.length;
      for (const a of [recs.collection, recs.id, recs.value, ixs.collection, ixs.entry, ixs.id]) a.length = 0;
    };
    for await (const e of entries) {
      if (e.kind === 'record') {
        recs.collection.push(e.collection);
        recs.id.push(b(e.id));
        recs.value.push(e.value);
      } else {
        ixs.collection.push(e.collection);
        ixs.entry.push(b(e.entry));
        ixs.id.push(b(e.id));
      }
      if (recs.id.length + ixs.id.length >= size) await flush();
    }
    await flush();
    return done;
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.locks.close();
    await this.pool.end();
  }
}
