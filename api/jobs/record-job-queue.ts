// The job queue (job-queue.ts) on the embedded record store (LevelDB, record-store.ts): one process holds
// the database, so one in-process lock around every change stands in for PostgreSQL's row locks. Tokens,
// lease expiry (`leasedUntil < now`), ordering and dedupe behave as in postgres-job-queue.ts; the same
// contract suite (test/jobs/job-queue-contract.ts) runs on both.
//
// Records: `queue_jobs/<id>` (id `j` + 12-digit sequence, so ids sort in enqueue order), `queue_dedupe/<kind>\0<key>`
// naming the job a dedupe key took, `queue_seq/next`. Index entries of a job, by state:
//   queued  q\0<kind>\0<runAt>\0<id>        walked by claims in due order
//   leased  l\0<kind>\0<leasedUntil>\0<id>  lapsed leases are claimable again
//   both    o\0<orderingKey>\0<id>          the first entry of a key is its earliest unfinished job
//   leased  g\0<groupKey>\0<id>             a group's leases, counted against a claim's `perGroup`
import { randomUUID } from 'node:crypto';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { collection } from '../store/collection.ts';
import type { ClaimOptions, EnqueueOptions, EnqueueResult, Job, JobQueue, KindStats, LeasedJob } from './job-queue.ts';
import { LeaseLostError } from './lease-lost-error.ts';

const SEP = '\x00';
const PAGE = 100;

interface JobRecord extends Job {
  leaseToken?: string;
  /** When it became done or dead (the prune index). */
  finishedAt?: number;
}

const QUEUE_JOBS = collection<JobRecord>('queue_jobs');
/** `<kind> NUL <dedupe key>` → the id of the job that key took. */
const QUEUE_DEDUPE = collection<string>('queue_dedupe');
/** `next` → the sequence that numbers jobs' ids. */
const QUEUE_SEQ = collection<number>('queue_seq');

const time = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');
const jobId = (seq: number) => `j${String(seq).padStart(12, '0')}`;

function indexOf(r: JobRecord): string[] {
  const out: string[] = [];
  if ((r.state === 'done' || r.state === 'dead') && r.finishedAt !== undefined) out.push(['f', time(r.finishedAt), r.id].join(SEP));
  if (r.state === 'queued') out.push(['q', r.kind, time(r.runAt), r.id].join(SEP));
  if (r.state === 'leased') out.push(['l', r.kind, time(r.leasedUntil ?? 0), r.id].join(SEP));
  if ((r.state === 'queued' || r.state === 'leased') && r.orderingKey !== undefined) out.push(`o${SEP}${r.orderingKey}`);
  if (r.state === 'leased' && r.groupKey !== undefined) out.push(`g${SEP}${r.groupKey}`);
  return out;
}

function publicJob<P>(r: JobRecord): Job<P> {
  const { leaseToken: _, finishedAt: _f, ...job } = r;
  return job as Job<P>;
}

type EnqueueOp = Extract<Op, { type: 'enqueue' }>;

/**
 * The LevelDB records of the `enqueue` operations of a batch (RecordStore.batch): each becomes a queued
 * job record with its index entries, its dedupe record and the next sequence number, or nothing when its
 * dedupe key names a job already (then `out` names that job). The caller holds the one lock under which
 * jobs are enqueued and writes the result in the batch's own atomic write, so ids follow commit order.
 */
export async function enqueueRecords(store: RecordRepository, ops: readonly Op[], now: number): Promise<Op[]> {
  let seq = (await QUEUE_SEQ.in(store).get('next')) ?? 0;
  const taken = new Map<string, string>();
  const out: Op[] = [];
  for (const op of ops) {
    if (op.type !== 'enqueue') {
      out.push(op);
      continue;
    }
    const opts = op.opts ?? {};
    const dedupeId = opts.dedupeKey === undefined ? undefined : `${op.kind}${SEP}${opts.dedupeKey}`;
    if (dedupeId !== undefined) {
      const id = taken.get(dedupeId) ?? (await QUEUE_DEDUPE.in(store).get(dedupeId));
      if (id !== undefined && (taken.has(dedupeId) || (await QUEUE_JOBS.in(store).get(id)) !== undefined)) {
        op.out = { id, created: false };
        continue;
      }
    }
    const rec: JobRecord = {
      id: jobId(++seq), kind: op.kind, key: op.key, payload: op.payload, state: 'queued', runAt: opts.runAt ?? now, attempts: 0,
      ...(opts.dedupeKey === undefined ? {} : { dedupeKey: opts.dedupeKey }),
      ...(opts.orderingKey === undefined ? {} : { orderingKey: opts.orderingKey }),
      ...(opts.groupKey === undefined ? {} : { groupKey: opts.groupKey }),
    };
    if (dedupeId !== undefined) {
      taken.set(dedupeId, rec.id);
      out.push(QUEUE_DEDUPE.putOp(dedupeId, rec.id));
    }
    out.push(QUEUE_JOBS.putOp(rec.id, rec, { index: indexOf(rec) }));
    op.out = { id: rec.id, created: true };
  }
  out.push(QUEUE_SEQ.putOp('next', seq));
  return out;
}

export interface RecordJobQueueOptions {
  /** Epoch milliseconds; the lease and due-time clock. */
  clock?: () => number;
  /**
   * This queue is the only one over its store in the only process that has it open (LevelDB's lock file
   * makes the process the only one): leases found at its first claim were issued by a process that has
   * stopped, so they are given back at once rather than waited out (a restart after a crash resumes now).
   */
  soleOwner?: boolean;
}

export class RecordJobQueue implements JobQueue {
  /** One key: every change and every claim runs alone. */
  private readonly lock = new KeyedMutex();
  private readonly clock: () => number;

  /** Whether leases of an earlier process still need giving back (`soleOwner`). */
  private recover: boolean;

  constructor(private readonly store: RecordRepository, opts: RecordJobQueueOptions = {}) {
    this.clock = opts.clock ?? Date.now;
    this.recover = opts.soleOwner === true;
  }

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(QUEUE_JOBS.name, fn);
  }

  /** Writes the record's new state, moving its index entries from those of `before`. */
  private write(before: JobRecord | undefined, after: JobRecord): Promise<void> {
    const next = indexOf(after);
    const gone = before === undefined ? [] : indexOf(before).filter((e) => !next.includes(e));
    return this.store.batch([QUEUE_JOBS.putOp(after.id, after, { index: next, unindex: gone })]);
  }

  /** Through the store's batch, so a job enqueued alone and one enqueued with records are written alike. */
  async enqueue<P>(kind: string, key: string, payload: P, opts: EnqueueOptions = {}): Promise<EnqueueResult<P>> {
    const op: EnqueueOp = { type: 'enqueue', kind, key, payload, opts: { ...opts, runAt: opts.runAt ?? this.clock() } };
    await this.store.batch([op]);
    const job = await QUEUE_JOBS.in(this.store).get(op.out!.id);
    return { job: publicJob<P>(job!), created: op.out!.created };
  }

  /** Records under `prefix` in index order while `keep` holds, page by page. */
  private async *walk(prefix: string, keep: (r: JobRecord) => boolean): AsyncGenerator<JobRecord> {
    let after: string | undefined;
    for (;;) {
      const page = await QUEUE_JOBS.in(this.store).byIndexEntries(prefix, after, PAGE);
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
    const [head] = await QUEUE_JOBS.in(this.store).byIndexEntries(`o${SEP}${r.orderingKey}${SEP}`, undefined, 1);
    return head?.value?.id === r.id;
  }

  /** Live leases of `group` now. */
  private async liveLeases(group: string, now: number): Promise<number> {
    let n = 0;
    for await (const r of this.walk(`g${SEP}${group}${SEP}`, () => true)) if ((r.leasedUntil ?? 0) >= now) n++;
    return n;
  }

  claim(workerId: string, kinds: readonly string[], limit: number, leaseMs: number, opts: ClaimOptions = {}): Promise<LeasedJob[]> {
    if (limit <= 0 || kinds.length === 0) return Promise.resolve([]);
    return this.locked(async () => {
      const now = this.clock();
      if (this.recover) {
        for await (const r of this.walk(`l${SEP}`, () => true)) await this.write(r, { ...RecordJobQueue.unleased(r), state: 'queued', runAt: Math.min(r.runAt, now) });
        this.recover = false;
      }
      const found: JobRecord[] = [];
      // Live leases per group key (`perGroup`), read once; `found` per group counts what each walk took.
      const live = new Map<string, number>();
      const liveOf = async (g: string) => live.get(g) ?? live.set(g, await this.liveLeases(g, now)).get(g)!;
      for (const kind of new Set(kinds)) {
        // Up to `limit` claimable jobs per kind, from the queued and the lapsed; the oldest due overall win.
        // Jobs of a group already at its limit are walked past, so they never fill the `limit`.
        for (const [state, due] of [['q', (r: JobRecord) => r.runAt <= now], ['l', (r: JobRecord) => (r.leasedUntil ?? 0) < now]] as const) {
          let n = 0;
          const perWalk = new Map<string, number>();
          for await (const r of this.walk(`${state}${SEP}${kind}${SEP}`, due)) {
            if (!(await this.first(r))) continue;
            if (opts.perGroup !== undefined && r.groupKey !== undefined) {
              const took = perWalk.get(r.groupKey) ?? 0;
              if ((await liveOf(r.groupKey)) + took >= opts.perGroup) continue;
              perWalk.set(r.groupKey, took + 1);
            }
            found.push(r);
            if (++n >= limit) break;
          }
        }
      }
      found.sort((a, b) => a.runAt - b.runAt || (a.id < b.id ? -1 : 1));
      // The oldest first, each group up to its limit over every kind walked.
      const taken: JobRecord[] = [];
      for (const r of found) {
        if (taken.length >= limit) break;
        if (opts.perGroup !== undefined && r.groupKey !== undefined) {
          if ((await liveOf(r.groupKey)) >= opts.perGroup) continue;
          live.set(r.groupKey, live.get(r.groupKey)! + 1);
        }
        taken.push(r);
      }
      const out: LeasedJob[] = [];
      for (const before of taken) {
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
      const before = await QUEUE_JOBS.in(this.store).get(id);
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
    await this.leased(job.id, leaseToken, (r) => ({ ...RecordJobQueue.unleased(r), state: 'done', finishedAt: this.clock() }));
  }

  async fail(job: Pick<Job, 'id'>, leaseToken: string, retryAt: number | null, error: string): Promise<void> {
    await this.leased(job.id, leaseToken, (r) =>
      retryAt === null ? { ...RecordJobQueue.unleased(r), state: 'dead', lastError: error, finishedAt: this.clock() } : { ...RecordJobQueue.unleased(r), state: 'queued', runAt: retryAt, lastError: error },
    );
  }

  /** Walks the finished jobs' index (`f\0<finishedAt>`), oldest first; a job's dedupe record goes with it. */
  prune(before: number, limit: number): Promise<number> {
    if (limit <= 0) return Promise.resolve(0);
    return this.locked(async () => {
      const ops: Op[] = [];
      let n = 0;
      for await (const r of this.walk(`f${SEP}`, (r) => (r.finishedAt ?? Infinity) < before)) {
        ops.push(QUEUE_JOBS.delOp(r.id, indexOf(r)));
        if (r.dedupeKey !== undefined) {
          const dedupeId = `${r.kind}${SEP}${r.dedupeKey}`;
          if ((await QUEUE_DEDUPE.in(this.store).get(dedupeId)) === r.id) ops.push(QUEUE_DEDUPE.delOp(dedupeId));
        }
        if (++n >= limit) break;
      }
      if (ops.length) await this.store.batch(ops);
      return n;
    });
  }

  async extend(job: Pick<Job, 'id'>, leaseToken: string, leaseMs: number): Promise<number> {
    const r = await this.leased(job.id, leaseToken, (r) => ({ ...r, leasedUntil: this.clock() + leaseMs }));
    return r.leasedUntil!;
  }

  async release(job: Pick<Job, 'id'>, leaseToken: string, runAt?: number): Promise<void> {
    await this.leased(job.id, leaseToken, (r) => ({ ...RecordJobQueue.unleased(r), state: 'queued', runAt: runAt ?? Math.min(r.runAt, this.clock()), attempts: Math.max(0, r.attempts - 1) }));
  }

  async get<P = unknown>(id: string): Promise<Job<P> | undefined> {
    const r = await QUEUE_JOBS.in(this.store).get(id);
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
