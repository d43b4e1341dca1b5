// The data exports' two job kinds on the durable job queue (docs/api-storage.md "Jobs"): the build
// (retried with the queue's backoff, DATA_EXPORT_MAX_ATTEMPTS claims, then the export fails) and the
// delayed expiry that deletes the object. One runtime per platform, as one queue per store: the routes
// poke it after an enqueue; it polls on its own once started (the routes start it when the app is ready).
// A test takes it over first (`holderExportJobs(platform, { queue, manual: true })`) and drives it with `runDue`.
import type { Logger } from '../../common/logger.ts';
import type { JobQueue, LeasedJob } from '../jobs/job-queue.ts';
import { JobRunner, type JobOutcome } from '../jobs/job-runner.ts';
import { jobQueueFor, workerId } from '../jobs/queue-for-store.ts';
import type { Platform } from '../platform.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { PlatformLedger } from '../ledger/platform-ledger.ts';
import { DATA_EXPORT_BUILD, DATA_EXPORT_EXPIRE, DATA_EXPORT_MAX_ATTEMPTS, HolderDataExports } from './holder-data-exports.ts';

export interface HolderExportJobsOptions {
  /** The queue (default: the store's own, `jobQueueFor`); its clock decides when a job is due. */
  queue?: JobQueue;
  /** Never polls by itself: the caller runs `runDue` (tests). */
  manual?: boolean;
  /** First retry delay of a failed build, doubled per attempt; default 30 s. */
  backoffMs?: number;
  logger?: Pick<Logger, 'warn' | 'error'>;
}

export class HolderExportJobs {
  readonly exports: HolderDataExports;
  private readonly runner: JobRunner;
  private readonly waiting = new Set<() => void>();
  /** Every job outcome so far, in order. */
  private readonly outcomes: JobOutcome[] = [];
  readonly manual: boolean;

  constructor(platform: Platform, o: HolderExportJobsOptions = {}) {
    this.manual = o.manual ?? false;
    this.exports = new HolderDataExports({
      store: platform.store, objects: platform.objects, links: new CustomerLinks(platform.store), cursors: platform.cursors,
      ledger: new PlatformLedger(platform.store, platform.clock), audit: platform.audit, clock: platform.clock,
    });
    this.runner = new JobRunner(o.queue ?? jobQueueFor(platform.store), {
      workerId: workerId('holder-exports'), concurrency: 2, pollMs: 5000, leaseMs: 60_000, clock: platform.clock, sleep: unrefSleep,
      ...(o.logger ? { logger: o.logger } : {}),
      onSettled: (_job, outcome) => {
        this.outcomes.push(outcome);
        for (const w of this.waiting) w();
      },
      kinds: {
        [DATA_EXPORT_BUILD]: { handler: (job: LeasedJob<{ export_id: string }>) => this.exports.build(job), maxAttempts: DATA_EXPORT_MAX_ATTEMPTS, backoffMs: o.backoffMs ?? 30_000 },
        [DATA_EXPORT_EXPIRE]: { handler: (job: LeasedJob<{ export_id: string }>) => this.exports.expire(job), maxAttempts: 20, backoffMs: 60_000, maxBackoffMs: 3_600_000 },
      },
    });
  }

  start(): void {
    if (!this.manual) this.runner.start();
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  /** Work was enqueued on this instance: claim at once rather than at the next poll. */
  poke(): void {
    if (!this.manual) this.runner.poke();
  }

  /** Runs every due job to its outcome, claim after claim until none is due (tests drive the queue's clock and call this). */
  async runDue(): Promise<JobOutcome[]> {
    const before = this.outcomes.length;
    for (let claimed = await this.runner.runOnce(); claimed > 0; claimed = await this.runner.runOnce()) {
      const until = this.outcomes.length + claimed;
      await new Promise<void>((ok) => {
        const check = () => {
          if (this.outcomes.length >= until) {
            this.waiting.delete(check);
            ok();
          }
        };
        this.waiting.add(check);
        check();
      });
      // The runner frees a job's slot just after recording its outcome.
      while (this.runner.active > 0) await new Promise((ok) => setImmediate(ok));
    }
    return this.outcomes.slice(before);
  }
}

/** The poll's wait, on a timer that keeps no process alive by itself (the server's socket does). */
function unrefSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((ok) => {
    if (signal.aborted) return ok();
    const wake = () => {
      clearTimeout(timer);
      ok();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', wake);
      ok();
    }, ms);
    timer.unref();
    signal.addEventListener('abort', wake, { once: true });
  });
}

const runtimes = new WeakMap<Platform, HolderExportJobs>();

/**
 * The platform's export jobs, made on first use; `opts` only apply to that first use (a later call with
 * other options is refused: the runtime is already serving).
 */
export function holderExportJobs(platform: Platform, opts?: HolderExportJobsOptions): HolderExportJobs {
  let r = runtimes.get(platform);
  if (r && opts) throw new Error('the data export jobs of this platform already run; configure them before the app is ready');
  if (!r) runtimes.set(platform, (r = new HolderExportJobs(platform, opts)));
  return r;
}
