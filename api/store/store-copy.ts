// `npm run admin -- store copy --from-data-dir <dir>`: moves a LevelDB deployment's records onto the
// PostgreSQL that API_DATABASE_URL names (docs/api-storage.md "Moving from LevelDB to PostgreSQL").
//
// Records and index entries are copied verbatim (RecordStore.exportRaw -> PostgresRecordStore.importRaw):
// same bytes, so walks, positions and cursors carry over. The LevelDB job queue's records are not: its
// unfinished jobs are enqueued again on the PostgreSQL queue, in id order (ordering keys keep their
// order), a leased one as queued and due now (its worker is gone with the stopped API); done and dead jobs
// stay behind. Refused, with nothing written, while an API instance serves the target (the instance
// lock, held here for the whole copy) or holds the LevelDB directory (LevelDB's own lock), and when the
// target holds any record, index entry or job. Counts are compared once the copy is written.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Job } from '../jobs/job-queue.ts';
import { connection, takeInstanceLock } from './open-store.ts';
import type { ConnectionOptions } from './postgres/migrate.ts';
import { PostgresRecordStore } from './postgres/postgres-record-store.ts';
import { RecordStore } from './record-store.ts';

/** The LevelDB job queue's collections (api/jobs/record-job-queue.ts): moved as jobs, not as records. */
const QUEUE_COLLECTIONS = new Set(['queue_jobs', 'queue_dedupe', 'queue_seq']);

export interface StoreCopySettings {
  /** The LevelDB directory (the old API_DATA_DIR). */
  fromDataDir: string;
  databaseUrl: string;
  databasePasswordFile?: string | undefined;
  /** Rows per transaction. */
  batchSize?: number;
}

export interface StoreCopySummary {
  records: number;
  index_entries: number;
  /** Per collection copied: its records and index entries (the queue's collections not among them). */
  collections: Record<string, { records: number; index_entries: number }>;
  jobs: { moved: number; queued: number; leased_requeued: number; skipped_done: number; skipped_dead: number; queue_records_not_copied: number };
  verified: true;
}

type RawEntry = RecordStore['exportRaw'] extends () => AsyncGenerator<infer E> ? E : never;
type Counts = Map<string, { records: number; index_entries: number }>;

function bump(counts: Counts, collection: string, field: 'records' | 'index_entries'): void {
  const c = counts.get(collection) ?? { records: 0, index_entries: 0 };
  c[field]++;
  counts.set(collection, c);
}

/** The LevelDB store, with a readable refusal for a missing directory or one an API process holds. */
async function openSource(dir: string): Promise<RecordStore> {
  // LevelDB creates a missing database: a mistyped path would copy nothing, successfully.
  if (!existsSync(join(dir, 'CURRENT'))) throw new CustodyError('usage', `--from-data-dir ${dir}: no LevelDB database there (no CURRENT file)`);
  try {
    return await RecordStore.open(dir);
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code === 'LEVEL_LOCKED') throw new CustodyError('conflict', `--from-data-dir ${dir}: another process holds this LevelDB database (an API process?); stop the API first`);
    throw err;
  }
}

/** Copies the LevelDB store under `fromDataDir` into the empty PostgreSQL database; throws, writing nothing, when refused. */
export async function copyStore(settings: StoreCopySettings): Promise<StoreCopySummary> {
  const conn: ConnectionOptions = { ...connection(settings), max: 2 };

  // The instance lock, exclusively, on a connection of its own for the whole copy: no API instance starts
  // on a half-copied database, and none serves while the copy runs.
  let lockLost: Error | undefined;
  const holder = await takeInstanceLock(conn, 'exclusive', 'an API instance serves the target database (it holds the instance lock); stop every API instance on it first', (err) => {
    lockLost ??= err;
  });
  let source: RecordStore | undefined;
  let target: PostgresRecordStore | undefined;
  try {
    source = await openSource(settings.fromDataDir);
    target = await PostgresRecordStore.open(conn);
    // On the store's own pool, migrated by its open.
    const queue = target.jobQueue();

    const present = await holder.query<{ records: string; index_entries: string; jobs: string }>(
      'SELECT (SELECT count(*) FROM records) AS records, (SELECT count(*) FROM index_entries) AS index_entries, (SELECT count(*) FROM jobs) AS jobs',
    );
    const p = present.rows[0]!;
    if (Number(p.records) + Number(p.index_entries) + Number(p.jobs) > 0) {
      throw new CustodyError('conflict', `the target database is not empty (${p.records} records, ${p.index_entries} index entries, ${p.jobs} jobs); copy into an empty database only`);
    }

    // Records and index entries, the queue's kept apart; jobs collected for the queue.
    const counts: Counts = new Map();
    const jobs: Job[] = [];
    let queueRecords = 0;
    const stream = source.exportRaw();
    async function* copied(): AsyncGenerator<RawEntry> {
      for await (const e of stream) {
        if (lockLost) throw new CustodyError('unavailable', `the connection holding the instance lock failed (${lockLost.message}); the target holds a partial copy`);
        if (QUEUE_COLLECTIONS.has(e.collection)) {
          if (e.kind === 'record') {
            queueRecords++;
            if (e.collection === 'queue_jobs') jobs.push(JSON.parse(e.value) as Job);
          }
          continue;
        }
        bump(counts, e.collection, e.kind === 'record' ? 'records' : 'index_entries');
        yield e;
      }
    }
    let written: { records: number; indexEntries: number };
    try {
      written = await target.importRaw(copied(), settings.batchSize === undefined ? {} : { batchSize: settings.batchSize });
    } catch (err) {
      throw partial(err);
    }

    // Unfinished jobs, in id order: PostgreSQL assigns ids in enqueue order, which ordering keys follow.
    jobs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const moved = { moved: 0, queued: 0, leased_requeued: 0, skipped_done: 0, skipped_dead: 0 };
    try {
      for (const j of jobs) {
        if (j.state === 'done' || j.state === 'dead') {
          moved[j.state === 'done' ? 'skipped_done' : 'skipped_dead']++;
          continue;
        }
        if (lockLost) throw new CustodyError('unavailable', `the connection holding the instance lock failed (${lockLost.message})`);
        const r = await queue.enqueue(j.kind, j.key, j.payload, {
          // A leased job's worker stopped with the API: due now, as a release would leave it.
          ...(j.state === 'queued' ? { runAt: j.runAt } : {}),
          ...(j.dedupeKey === undefined ? {} : { dedupeKey: j.dedupeKey }),
          ...(j.orderingKey === undefined ? {} : { orderingKey: j.orderingKey }),
          ...(j.groupKey === undefined ? {} : { groupKey: j.groupKey }),
        });
        if (!r.created) throw new CustodyError('conflict', `job ${j.id}: its dedupe key names job ${r.job.id} already`);
        moved.moved++;
        moved[j.state === 'queued' ? 'queued' : 'leased_requeued']++;
      }
    } catch (err) {
      throw partial(err);
    }

    // Verification: what the target holds now against what was read.
    const mismatches: string[] = [];
    const got: Counts = new Map();
    for (const [table, field] of [['records', 'records'], ['index_entries', 'index_entries']] as const) {
      const { rows: byCollection } = await holder.query<{ collection: string; n: string }>(`SELECT collection, count(*) AS n FROM ${table} GROUP BY collection`);
      for (const r of byCollection) {
        const c = got.get(r.collection) ?? { records: 0, index_entries: 0 };
        c[field] = Number(r.n);
        got.set(r.collection, c);
      }
    }
    for (const name of new Set([...counts.keys(), ...got.keys()])) {
      const want = counts.get(name) ?? { records: 0, index_entries: 0 };
      const have = got.get(name) ?? { records: 0, index_entries: 0 };
      if (want.records !== have.records || want.index_entries !== have.index_entries) {
        mismatches.push(`${name}: read ${want.records} records and ${want.index_entries} index entries, the target holds ${have.records} and ${have.index_entries}`);
      }
    }
    const total = (f: 'records' | 'index_entries') => [...counts.values()].reduce((n, c) => n + c[f], 0);
    if (written.records !== total('records') || written.indexEntries !== total('index_entries')) mismatches.push('the rows written differ from the rows read');
    const jobRows = await holder.query<{ n: string; queued: string }>("SELECT count(*) AS n, count(*) FILTER (WHERE state = 'queued') AS queued FROM jobs");
    if (Number(jobRows.rows[0]!.n) !== moved.moved || Number(jobRows.rows[0]!.queued) !== moved.moved) mismatches.push(`jobs: moved ${moved.moved}, the target holds ${jobRows.rows[0]!.n} (${jobRows.rows[0]!.queued} queued)`);
    if (mismatches.length) throw new CustodyError('internal', `verification failed: ${mismatches.join('; ')}`);

    const collections = Object.fromEntries([...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return {
      records: total('records'),
      index_entries: total('index_entries'),
      collections,
      jobs: { ...moved, queue_records_not_copied: queueRecords },
      verified: true,
    };
  } finally {
    await target?.close().catch(() => undefined);
    await source?.close().catch(() => undefined);
    // Ending the connection releases the instance lock.
    await holder.end().catch(() => undefined);
  }
}

/** A failure once writing began: the target holds part of the copy, which a new run refuses. */
function partial(err: unknown): Error {
  const message = err instanceof Error ? err.message : String(err);
  return new CustodyError(err instanceof CustodyError ? err.code : 'unavailable', `${message}; the target database now holds a partial copy: empty it (TRUNCATE records, index_entries, jobs) before running the copy again`, { cause: err });
}
