// The job runner (api/jobs/job-runner.ts) over the embedded queue: concurrency, backoff to dead, lease
// renewal while a handler runs, a lost lease aborting its handler, and graceful stop (finish or release).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { JobQueue } from '../../api/jobs/job-queue.ts';
import { JobRunner, type JobOutcome } from '../../api/jobs/job-runner.ts';
import { LeaseLostError } from '../../api/jobs/lease-lost-error.ts';
import { RecordJobQueue } from '../../api/jobs/record-job-queue.ts';
import { RecordStore } from '../../api/store/record-store.ts';

// The store is opened by a test of its own, not at the top level: the file shares its process with others
// (test/support/units.ts).
t.test('the job runner over the embedded queue', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'custody-runner-'));
  const store = await RecordStore.open(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const queue = new RecordJobQueue(store);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let n = 0;
  const fresh = () => `kind${++n}`;

  async function until(cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
    for (const end = Date.now() + ms; !(await cond()); ) {
      if (Date.now() > end) throw new Error('condition not reached');
      await sleep(5);
    }
  }

  t.test('runs every job, never more handlers at once than its concurrency', async (t) => {
    const kind = fresh();
    for (let i = 0; i < 20; i++) await queue.enqueue(kind, `k${i}`, { i });
    let active = 0;
    let peak = 0;
    const seen: number[] = [];
    const runner = new JobRunner(queue, {
      workerId: 'r', concurrency: 3, pollMs: 20,
      kinds: { [kind]: { async handler(job) { active++; peak = Math.max(peak, active); await sleep(5); seen.push((job.payload as { i: number }).i); active--; } } },
    });
    runner.start();
    await until(() => seen.length === 20);
    await runner.stop();
    t.equal(peak, 3);
    t.same([...seen].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i));
    t.same((await queue.stats()).find((s) => s.kind === kind), undefined, 'nothing left');
  });

  t.test('perGroup: one organization\'s burst takes at most its share of the runner; another\'s job starts at once', async (t) => {
    const kind = fresh();
    for (let i = 0; i < 12; i++) await queue.enqueue(kind, 'org:busy', { i }, { groupKey: 'org:busy' });
    await queue.enqueue(kind, 'org:quiet', { i: 99 }, { groupKey: 'org:quiet' });
    const active = new Map<string, number>();
    let peakBusy = 0;
    const order: string[] = [];
    const runner = new JobRunner(queue, {
      workerId: 'r', concurrency: 6, pollMs: 10, perGroup: 2,
      kinds: { [kind]: { async handler(job) {
        active.set(job.key, (active.get(job.key) ?? 0) + 1);
        if (job.key === 'org:busy') peakBusy = Math.max(peakBusy, active.get(job.key)!);
        order.push(job.key);
        await sleep(10);
        active.set(job.key, active.get(job.key)! - 1);
      } } },
    });
    runner.start();
    await until(() => order.length === 13);
    await runner.stop();
    t.equal(peakBusy, 2, 'the busy organization never ran more than two at once, with four slots free');
    t.ok(order.indexOf('org:quiet') <= 2, `the quiet organization's job, enqueued last, ran among the first (at ${order.indexOf('org:quiet')})`);
  });

  t.test('a failing job is retried with exponential backoff, then dead after maxAttempts', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'v', {});
    const outcomes: JobOutcome[] = [];
    const runs: number[] = [];
    const runner = new JobRunner(queue, {
      workerId: 'r', pollMs: 10, random: () => 0,
      kinds: { [kind]: { maxAttempts: 3, backoffMs: 40, async handler() { runs.push(Date.now()); throw new Error('node unreachable'); } } },
      onSettled: (_, o) => outcomes.push(o),
    });
    t.same([1, 2, 3, 4, 5].map((a) => runner.backoff({ backoffMs: 1000, maxBackoffMs: 5000 }, a)), [1000, 2000, 4000, 5000, 5000]);
    t.equal(new JobRunner(queue, { workerId: 'x', kinds: {}, random: () => 1 }).backoff({}, 1), 750, 'jitter takes off up to a quarter');
    runner.start();
    await until(() => outcomes.length === 3);
    await runner.stop();
    t.same(outcomes, ['retry', 'retry', 'dead']);
    t.ok(runs[1]! - runs[0]! >= 35 && runs[2]! - runs[1]! >= 75, `backoff 40 then 80 ms (${runs[1]! - runs[0]!}, ${runs[2]! - runs[1]!})`);
    t.match(await queue.get(job.id), { state: 'dead', attempts: 3, lastError: 'node unreachable' });
  });

  t.test('a handler that returns a runAt defers its job: no attempt counted, run again then', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'confirmations', {});
    const outcomes: JobOutcome[] = [];
    const runs: number[] = [];
    const runner = new JobRunner(queue, {
      workerId: 'r', pollMs: 10,
      kinds: { [kind]: { maxAttempts: 1, async handler(j) { runs.push(Date.now()); t.equal(j.attempts, 1, 'a deferral is not an attempt'); return runs.length < 3 ? { runAt: Date.now() + 60 } : undefined; } } },
      onSettled: (_, o) => outcomes.push(o),
    });
    runner.start();
    await until(() => outcomes.length === 3);
    await runner.stop();
    t.same(outcomes, ['deferred', 'deferred', 'done'], 'maxAttempts 1 is not reached by deferrals');
    t.ok(runs[1]! - runs[0]! >= 55 && runs[2]! - runs[1]! >= 55, `run again at the time asked (${runs[1]! - runs[0]!}, ${runs[2]! - runs[1]!} ms)`);
    t.match(await queue.get(job.id), { state: 'done' });
  });

  t.test('the runner prunes finished jobs past its retention, at most once per interval', async (t) => {
    const kind = fresh();
    let now = Date.now();
    const { job } = await queue.enqueue(kind, 'old', {});
    const runner = new JobRunner(queue, { workerId: 'r', pollMs: 5, retentionMs: 1000, pruneEveryMs: 60_000, clock: () => now, kinds: { [kind]: { async handler() {} } } });
    runner.start();
    await until(async () => (await queue.get(job.id))?.state === 'done');
    t.ok(await queue.get(job.id), 'kept while younger than the retention');
    now += 120_000;
    await until(async () => (await queue.get(job.id)) === undefined);
    const { job: next } = await queue.enqueue(kind, 'new', {});
    await until(async () => (await queue.get(next.id))?.state === 'done');
    now += 30_000;
    await sleep(50);
    t.ok(await queue.get(next.id), 'no second prune within the interval');
    await runner.stop();
  });

  t.test('the lease is renewed while a handler runs longer than the lease', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'v', {});
    let running = false;
    const runner = new JobRunner(queue, { workerId: 'r', pollMs: 10, leaseMs: 120, kinds: { [kind]: { async handler() { running = true; await sleep(450); } } } });
    runner.start();
    await until(() => running);
    await sleep(250);
    t.same(await queue.claim('thief', [kind], 1, 1000), [], 'not claimable: the lease was renewed');
    await until(async () => (await queue.get(job.id))?.state === 'done');
    await runner.stop();
    t.match(await queue.get(job.id), { state: 'done', attempts: 1, leaseOwner: 'r' });
  });

  t.test('a lost lease aborts the handler and records nothing', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'v', {});
    // A queue whose renewals are refused, as when another worker took the job after a stall.
    const refusing: JobQueue = Object.assign(Object.create(queue) as JobQueue, { extend: (j: { id: string }) => Promise.reject(new LeaseLostError(j.id)) });
    let reason: unknown;
    const outcomes: JobOutcome[] = [];
    const runner = new JobRunner(refusing, {
      workerId: 'r', pollMs: 10, leaseMs: 60,
      kinds: { [kind]: { handler: (_job, { signal }) => new Promise((ok) => signal.addEventListener('abort', () => ok((reason = signal.reason)))) } },
      onSettled: (_, o) => outcomes.push(o),
    });
    runner.start();
    await until(() => outcomes.length >= 1);
    await runner.stop();
    t.ok(reason instanceof LeaseLostError, 'the handler saw the lease go');
    // Once the lost lease runs out (60 ms) the job is claimable again, and a slow machine may let this
    // runner take it once more before it stops: each such run is lost the same way, none settles otherwise.
    t.ok(outcomes.length >= 1 && outcomes.every((o) => o === 'lost'), `every run lost its lease: ${outcomes.join(', ')}`);
    t.equal((await queue.get(job.id))?.state, 'leased', 'no outcome written under a lost lease');
  });

  t.test('stop lets running handlers finish within the grace period, and releases the rest', async (t) => {
    const kind = fresh();
    const quick = await queue.enqueue(kind, 'quick', {});
    const stuck = await queue.enqueue(kind, 'stuck', {});
    let aborted = false;
    let started = 0;
    const runner = new JobRunner(queue, {
      workerId: 'r', pollMs: 10, concurrency: 2,
      kinds: {
        [kind]: {
          async handler(job, { signal }) {
            started++;
            if (job.key === 'quick') {
              await sleep(60);
              return;
            }
            await new Promise((ok) => signal.addEventListener('abort', ok));
            aborted = true;
          },
        },
      },
    });
    runner.start();
    await until(() => started === 2);
    t.equal(runner.active, 2);
    await runner.stop(200);
    t.match(await queue.get(quick.job.id), { state: 'done' }, 'the quick one finished');
    t.ok(aborted, 'the stuck one was aborted');
    t.match(await queue.get(stuck.job.id), { state: 'queued', attempts: 0 }, 'and given back, unrun');
    t.same((await queue.claim('next', [kind], 5, 1000)).map((j) => j.id), [stuck.job.id], 'another worker takes it at once');
  });
});
