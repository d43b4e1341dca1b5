// The loop that runs jobs of a JobQueue (job-queue.ts, docs/api-storage.md "Jobs"): it polls with jitter
// (so N instances do not claim in lockstep), claims no more jobs than it has free slots, runs each with
// its kind's handler while renewing the lease, and completes it, retries it with exponential backoff, or
// makes it dead after `maxAttempts`. `stop` lets running handlers finish within a grace period and gives
// back the leases of those that do not. Clock, sleep and randomness are injectable for tests.
import type { Logger } from '../../common/logger.ts';
import type { JobQueue, LeasedJob } from './job-queue.ts';
import { LeaseLostError } from './lease-lost-error.ts';

export interface JobContext {
  /** Aborted when the lease is lost (another worker may hold the job) or the runner stops for good. */
  signal: AbortSignal;
}

/**
 * Resolves when the job is done, or with `{ runAt }` when it waits on something outside (a confirmation, a
 * cluster coming back): the job is then deferred to `runAt` (epoch ms) without counting an attempt, and
 * keeps its place under its ordering key. Throws to fail the attempt (retried with backoff).
 */
export type JobHandler<P = unknown> = (job: LeasedJob<P>, ctx: JobContext) => Promise<void | { runAt: number }>;

export interface JobKind<P = unknown> {
  handler: JobHandler<P>;
  /** Claims before the job goes dead; default 5. */
  maxAttempts?: number;
  /** First retry delay, doubled per attempt up to `maxBackoffMs`; defaults 1 s and 5 min. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export interface JobRunnerOptions {
  /** Names this runner in leases (`leaseOwner`): an instance id and a process id, say. */
  workerId: string;
  // Handlers are stored as JobKind<unknown>; each kind's payload type is its handler's business.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  kinds: Record<string, JobKind<any>>;
  /** Handlers running at once; default 4. */
  concurrency?: number;
  /** Jobs of one group key (an organization's) leased at once over every claimer passing it (`ClaimOptions`); no limit when absent. */
  perGroup?: number;
  /** Between polls that found nothing; default 1000 ms, spread by ±`jitter` (default 0.2). */
  pollMs?: number;
  jitter?: number;
  /** Lease length; renewed every third of it while a handler runs. Default 30 s. */
  leaseMs?: number;
  /** How long `stop` waits for running handlers before releasing their leases; default 10 s. */
  graceMs?: number;
  clock?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  logger?: Pick<Logger, 'warn' | 'error'>;
  /**
   * Done and dead jobs older than this are deleted (`JobQueue.prune`), at most once per `pruneEveryMs`
   * from the poll loop, 1000 at a time; default 7 days, every hour. Their dedupe keys go with them.
   */
  retentionMs?: number;
  pruneEveryMs?: number;
  /** Called once the queue recorded a job's outcome, or refused it ('lost'): for metrics and tests. */
  onSettled?: (job: LeasedJob, outcome: JobOutcome) => void;
}

export type JobOutcome = 'done' | 'deferred' | 'retry' | 'dead' | 'lost';

interface Running {
  job: LeasedJob;
  abort: AbortController;
  done: Promise<void>;
  /** Set when stop gave the lease back: the handler's outcome is then not recorded. */
  released: boolean;
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((ok) => {
    if (signal.aborted) return ok();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', wake);
      ok();
    }, ms);
    const wake = () => {
      clearTimeout(timer);
      ok();
    };
    signal.addEventListener('abort', wake, { once: true });
  });
}

export class JobRunner {
  private readonly running = new Map<string, Running>();
  private readonly stopping = new AbortController();
  /** Wakes the poll loop early: a slot freed, or stop. */
  private wake = new AbortController();
  private loop: Promise<void> | undefined;
  /** Set by `poke`: poll again at once, also when the poke came while a claim was under way. */
  private poked = false;
  private prunedAt = -Infinity;
  private readonly o: Required<Omit<JobRunnerOptions, 'logger' | 'onSettled' | 'perGroup'>> & Pick<JobRunnerOptions, 'logger' | 'onSettled' | 'perGroup'>;

  constructor(private readonly queue: JobQueue, opts: JobRunnerOptions) {
    this.o = {
      concurrency: 4, pollMs: 1000, jitter: 0.2, leaseMs: 30_000, graceMs: 10_000, retentionMs: 7 * 86_400_000, pruneEveryMs: 3_600_000,
      clock: Date.now, random: Math.random, sleep: defaultSleep,
      ...opts,
    };
  }

  /** Handlers running now. */
  get active(): number {
    return this.running.size;
  }

  start(): void {
    this.loop ??= this.poll();
  }

  /** Polls now instead of at the next interval: work was just enqueued on this instance. */
  poke(): void {
    this.poked = true;
    this.wake.abort();
  }

  private async poll(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let claimed = 0;
      this.poked = false;
      try {
        claimed = await this.runOnce();
      } catch (err) {
        this.o.logger?.error({ err }, 'job claim failed');
      }
      await this.pruneDue();
      if (this.stopping.signal.aborted) break;
      // A full batch suggests more is due: poll again at once when a slot is free.
      const free = this.o.concurrency - this.running.size;
      if ((claimed > 0 || this.poked) && free > 0) continue;
      const j = this.o.jitter;
      this.wake = new AbortController();
      await this.o.sleep(this.o.pollMs * (1 - j + 2 * j * this.o.random()), AbortSignal.any([this.stopping.signal, this.wake.signal]));
    }
  }

  /** Deletes finished jobs past the retention, when the last prune is `pruneEveryMs` old. */
  private async pruneDue(): Promise<void> {
    const now = this.o.clock();
    if (now - this.prunedAt < this.o.pruneEveryMs) return;
    this.prunedAt = now;
    try {
      await this.queue.prune(now - this.o.retentionMs, 1000);
    } catch (err) {
      this.o.logger?.warn({ err }, 'finished jobs not pruned');
    }
  }

  /** One poll: claims as many due jobs as there are free slots and starts them; how many it claimed. */
  async runOnce(): Promise<number> {
    const free = this.o.concurrency - this.running.size;
    if (free <= 0 || this.stopping.signal.aborted) return 0;
    const jobs = await this.queue.claim(this.o.workerId, Object.keys(this.o.kinds), free, this.o.leaseMs, this.o.perGroup === undefined ? {} : { perGroup: this.o.perGroup });
    for (const job of jobs) this.begin(job);
    return jobs.length;
  }

  private begin(job: LeasedJob): void {
    const abort = new AbortController();
    const entry: Running = { job, abort, released: false, done: Promise.resolve() };
    this.running.set(job.id, entry);
    entry.done = this.execute(entry).finally(() => {
      this.running.delete(job.id);
      this.wake.abort();
    });
  }

  private async execute(entry: Running): Promise<void> {
    const { job, abort } = entry;
    const kind = this.o.kinds[job.kind]!;
    // Renew the lease at a third of its length, so two renewals can be late before it lapses.
    const renew = setInterval(() => {
      this.queue.extend(job, job.leaseToken, this.o.leaseMs).catch((err: unknown) => {
        if (err instanceof LeaseLostError) abort.abort(err);
        else this.o.logger?.warn({ err, job: job.id }, 'job lease renewal failed');
      });
    }, Math.max(1, Math.floor(this.o.leaseMs / 3)));
    let failure: unknown;
    let ok = false;
    let deferTo: number | undefined;
    try {
      const result = await kind.handler(job, { signal: abort.signal });
      if (result && Number.isFinite(result.runAt)) deferTo = result.runAt;
      ok = true;
    } catch (err) {
      failure = err;
    } finally {
      clearInterval(renew);
    }
    if (entry.released) return;
    try {
      if (abort.signal.aborted && abort.signal.reason instanceof LeaseLostError) throw abort.signal.reason;
      if (ok && deferTo !== undefined) {
        await this.queue.release(job, job.leaseToken, deferTo);
        this.o.onSettled?.(job, 'deferred');
      } else if (ok) {
        await this.queue.complete(job, job.leaseToken);
        this.o.onSettled?.(job, 'done');
      } else {
        const max = kind.maxAttempts ?? 5;
        const retryAt = job.attempts >= max ? null : this.o.clock() + this.backoff(kind, job.attempts);
        await this.queue.fail(job, job.leaseToken, retryAt, failure instanceof Error ? failure.message : String(failure));
        this.o.onSettled?.(job, retryAt === null ? 'dead' : 'retry');
      }
    } catch (err) {
      // Lost: another worker claimed the job after the lease lapsed; its outcome is the one recorded.
      if (err instanceof LeaseLostError) {
        this.o.logger?.warn({ job: job.id, kind: job.kind }, 'job lease lost before its outcome was recorded');
        this.o.onSettled?.(job, 'lost');
      } else this.o.logger?.error({ err, job: job.id }, 'job outcome not recorded');
    }
  }

  /** Delay before the retry following attempt `attempts` (1-based): doubled each time, capped, jittered down by up to a quarter. */
  backoff(kind: Pick<JobKind, 'backoffMs' | 'maxBackoffMs'>, attempts: number): number {
    const base = Math.min((kind.backoffMs ?? 1000) * 2 ** Math.max(0, attempts - 1), kind.maxBackoffMs ?? 300_000);
    return Math.round(base * (1 - 0.25 * this.o.random()));
  }

  /**
   * Claims nothing more, waits up to `graceMs` for running handlers, then gives back the leases of those
   * still running (queued again at once, for another instance) and aborts their signals.
   */
  async stop(graceMs = this.o.graceMs): Promise<void> {
    this.stopping.abort();
    await this.loop;
    const all = () => Promise.all([...this.running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([all().then(() => false), new Promise<boolean>((ok) => (timer = setTimeout(() => ok(true), graceMs)))]);
    clearTimeout(timer);
    if (!late) return;
    await Promise.all(
      [...this.running.values()].map(async (r) => {
        r.released = true;
        r.abort.abort(new Error('job runner stopped'));
        await this.queue.release(r.job, r.job.leaseToken).catch((err: unknown) => this.o.logger?.warn({ err, job: r.job.id }, 'job lease not released'));
      }),
    );
  }
}
