// The job queue (job-queue.ts) on the embedded record store (LevelDB, record-store.ts): one process holds
// the database, so one in-process lock around every change stands in for PostgreSQL's row locks. Tokens,
// lease expiry (`leasedUntil < now`), ordering and dedupe behave as in postgres-job-queue.ts; the same
// contract suite (test/jobs/job-queue-contract.ts) runs on both.
//
// Records: `jobs/<id>` (id `j` + 12-digit sequence, so ids sort in enqueue order), `job_dedupe/<kind>\0<key>`
// naming the job a dedupe key took, `job_seq/next`. Index entries of a job, by state:
//   queued  q\0<kind>\0<runAt>\0<id>        walked by claims in due order
//   leased  l\0<kind>\0<leasedUntil>\0<id>  lapsed leases are claimable again
//   both    o\0<orderingKey>\0<id>          the first entry of a key is its earliest unfinished job
import { randomUUID } from 'node:crypto';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import type { EnqueueOptions, EnqueueResult, Job, JobQueue, KindStats, LeasedJob } from './job-queue.ts';
import { LeaseLostError } from './lease-lost-error.ts';

const SEP = '\x00';
const JOBS = 'jobs';
const PAGE = 100;

interface JobRecord extends Job {
  leaseToken?: string;
}

const time = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');
const jobId = (seq: number) => `j${String(seq).padStart(12, '0')}`;

function indexOf(r: JobRecord): string[] {
  const out: string[] = [];
  if (r.state === 'queued') out.push(['q', r.kind, time(r.runAt), r.id].join(SEP));
  if (r.state === 'leased') out.push(['l', r.kind, time(r.leasedUntil ?? 0), r.id].join(SEP));
  if ((r.state === 'queued' || r.state === 'leased') && r.orderingKey !== undefined) out.push(`o${SEP}${r.orderingKey}`);
  return out;
}

function publicJob<P>(r: JobRecord): Job<P> {
  const { leaseToken: _, ...job } = r;
  return job as Job<P>;
}

export interface RecordJobQueueOptions {
  /** Epoch milliseconds; the lease and due-time clock. */
  clock?: () => number;
}

export class RecordJobQueue implements JobQueue {
  /** One key: every change and every claim runs alone. */
  private readonly lock = new KeyedMutex();
  private readonly clock: () => number;

  constructor(private readonly store: RecordRepository, opts: RecordJobQueueOptions = {}) {
    this.clock = opts.clock ?? Date.now;
  }

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run('jobs', fn);
  }

  /** Writes the record's new state, moving its index entries from those of `before`. */
  private write(before: JobRecord | undefined, after: JobRecord): Promise<void> {
    const next = indexOf(after);
    const gone = before === undefined ? [] : indexOf(before).filter((e) => !next.includes(e));
    return this.store.batch([{ type: 'put', collection: JOBS, id: after.id, value: after, index: next, unindex: gone }]);
  }

  enqueue<P>(kind: string, key: string, payload: P, opts: EnqueueOptions = {}): Promise<EnqueueResult<P>> {
    return this.locked(async () => {
      const dedupeId = opts.dedupeKey === undefined ? undefined : `${kind}${SEP}${opts.dedupeKey}`;
      if (dedupeId !== undefined) {
        const id = await this.store.get<string>('job_dedupe', dedupeId);
        const existing = id === undefined ? undefined : await this.store.get<JobRecord>(JOBS, id);
        if (existing !== undefined) return { job: publicJob<P>(existing), created: false };
      }
      const seq = ((await this.store.get<number>('job_seq', 'next')) ?? 0) + 1;
      const rec: JobRecord = {
        id: jobId(seq), kind, key, payload, state: 'queued', runAt: opts.runAt ?? this.clock(), attempts: 0,
        ...(opts.dedupeKey === undefined ? {} : { dedupeKey: opts.dedupeKey }),
        ...(opts.orderingKey === undefined ? {} : { orderingKey: opts.orderingKey }),
      };
      await this.store.batch([
        { type: 'put', collection: 'job_seq', id: 'next', value: seq },
        ...(dedupeId === undefined ? [] : [{ type: 'put' as const, collection: 'job_dedupe', id: dedupeId, value: rec.id }]),
        { type: 'put', collection: JOBS, id: rec.id, value: rec, index: indexOf(rec) },
      ]);
      return { job: publicJob<P>(rec), created: true };
    });
  }

  /** Records under `prefix` in index order while `keep` holds, page by page. */
  private async *walk(prefix: string, keep: (r: JobRecord) => boolean): AsyncGenerator<JobRecord> {
    let after: string | undefined;
    for (;;) {
      const page = await this.store.byIndexEntries<JobRecord>(JOBS, prefix, after, PAGE);
      for (const e of page) {
        if (e.value === undefined) continue;
        if (!keep(e.value)) return;
        yield e.value;
      }
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.position;
    }
  }

  /** Whether `r` is the earliest unfinished job of its ordering key. */
  private async first(r: JobRecord): Promise<boolean> {
    if (r.orderingKey === undefined) return true;
    const [head] = await this.store.byIndexEntries<JobRecord>(JOBS, `o${SEP}${r.orderingKey}${SEP}`, undefined, 1);
    return head?.value?.id === r.id;
  }

  claim(workerId: string, kinds: readonly string[], limit: number, leaseMs: number): Promise<LeasedJob[]> {
    if (limit <= 0 || kinds.length === 0) return Promise.resolve([]);
    return this.locked(async () => {
      const now = this.clock();
      const found: JobRecord[] = [];
      for (const kind of new Set(kinds)) {
        // Up to `limit` claimable jobs per kind, from the queued and the lapsed; the oldest due overall win.
        for (const [state, due] of [['q', (r: JobRecord) => r.runAt <= now], ['l', (r: JobRecord) => (r.leasedUntil ?? 0) < now]] as const) {
          let n = 0;
          for await (const r of this.walk(`${state}${SEP}${kind}${SEP}`, due)) {
            if (!(await this.first(r))) continue;
            found.push(r);
            if (++n >= limit) break;
          }
        }
      }
      found.sort((a, b) => a.runAt - b.runAt || (a.id < b.id ? -1 : 1));
      const out: LeasedJob[] = [];
      for (const before of found.slice(0, limit)) {
        const after: JobRecord = { ...before, state: 'leased', leaseOwner: workerId, leaseToken: randomUUID(), leasedUntil: now + leaseMs, attempts: before.attempts + 1 };
        await this.write(before, after);
        out.push({ ...publicJob(after), state: 'leased', leaseToken: after.leaseToken!, leasedUntil: after.leasedUntil!, leaseOwner: workerId });
      }
      return out.sort((a, b) => (a.id < b.id ? -1 : 1));
    });
  }

  /** Applies `change` to the job leased under `token`; refuses a stale token. */
  private leased(id: string, token: string, change: (r: JobRecord) => JobRecord): Promise<JobRecord> {
    return this.locked(async () => {
      const before = await this.store.get<JobRecord>(JOBS, id);
      if (before === undefined || before.state !== 'leased' || before.leaseToken !== token) throw new LeaseLostError(id);
      const after = change(before);
      await this.write(before, after);
      return after;
    });
  }

  /** A record leaving the leased state: no token, no lease end. */
  private static unleased(r: JobRecord): JobRecord {
    const { leaseToken: _t, leasedUntil: _u, ...rest } = r;
    return rest;
  }

  async complete(job: Pick<Job, 'id'>, leaseToken: string): Promise<void> {
    await this.leased(job.id, leaseToken, (r) => ({ ...RecordJobQueue.unleased(r), state: 'done' }));
  }

  async fail(job: Pick<Job, 'id'>, leaseToken: string, retryAt: number | null, error: string): Promise<void> {
    await this.leased(job.id, leaseToken, (r) =>
      retryAt === null ? { ...RecordJobQueue.unleased(r), state: 'dead', lastError: error } : { ...RecordJobQueue.unleased(r), state: 'queued', runAt: retryAt, lastError: error },
    );
  }

  async extend(job: Pick<Job, 'id'>, leaseToken: string, leaseMs: number): Promise<number> {
    const r = await this.leased(job.id, leaseToken, (r) => ({ ...r, leasedUntil: this.clock() + leaseMs }));
    return r.leasedUntil!;
  }

  async release(job: Pick<Job, 'id'>, leaseToken: string): Promise<void> {
    await this.leased(job.id, leaseToken, (r) => ({ ...RecordJobQueue.unleased(r), state: 'queued', runAt: Math.min(r.runAt, this.clock()), attempts: Math.max(0, r.attempts - 1) }));
  }

  async get<P = unknown>(id: string): Promise<Job<P> | undefined> {
    const r = await this.store.get<JobRecord>(JOBS, id);
    return r === undefined ? undefined : publicJob<P>(r);
  }

  async stats(): Promise<KindStats[]> {
    const now = this.clock();
    const by = new Map<string, KindStats & { due?: number }>();
    for (const state of ['q', 'l']) {
      for await (const r of this.walk(`${state}${SEP}`, () => true)) {
        const s = by.get(r.kind) ?? { kind: r.kind, depth: 0, leased: 0, lagMs: 0 };
        by.set(r.kind, s);
        s.depth++;
        const due = r.state === 'queued' ? (r.runAt <= now ? r.runAt : undefined) : (r.leasedUntil ?? 0) < now ? r.leasedUntil : undefined;
        if (r.state === 'leased' && due === undefined) s.leased++;
        if (due !== undefined) s.due = Math.min(s.due ?? due, due);
      }
    }
    return [...by.values()]
      .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0))
      .map(({ due, ...s }) => ({ ...s, lagMs: due === undefined ? 0 : Math.max(0, now - due) }));
  }
}
