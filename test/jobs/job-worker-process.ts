// One API instance's job runner, as a child process of job-runner-multiprocess.test.ts: it shares the
// test's PostgreSQL with two others and runs 'side_effect' jobs. Each execution is a row in `executions`
// (started when the handler begins, finished when it ends, by the database clock); each completion the
// queue accepted is a row in `completions`. SIGTERM stops it gracefully; the test SIGKILLs one of them.
import pg from 'pg';
import { JobRunner } from '../../api/jobs/job-runner.ts';
import { PostgresJobQueue } from '../../api/jobs/postgres-job-queue.ts';

const url = process.env.JOBS_DATABASE_URL!;
const workerId = process.env.JOBS_WORKER_ID!;
const queue = await PostgresJobQueue.open({ connectionString: url, max: 4 });
const side = new pg.Pool({ connectionString: url, max: 6 });

const runner = new JobRunner(queue, {
  workerId,
  concurrency: 4,
  pollMs: 40,
  leaseMs: 1000,
  kinds: {
    side_effect: {
      maxAttempts: 3,
      backoffMs: 50,
      async handler(job) {
        const { rows } = await side.query<{ id: number }>('INSERT INTO executions (job_id, worker) VALUES ($1, $2) RETURNING id', [job.id, workerId]);
        await new Promise((r) => setTimeout(r, 20 + Math.floor(Math.random() * 40)));
        await side.query('UPDATE executions SET finished_at = clock_timestamp() WHERE id = $1', [rows[0]!.id]);
      },
    },
  },
  onSettled(job, outcome) {
    if (outcome === 'done') void side.query('INSERT INTO completions (job_id, worker) VALUES ($1, $2)', [job.id, workerId]).catch((err: unknown) => console.error(err));
    else console.error(`job ${job.id}: ${outcome}`);
  },
});

process.once('SIGTERM', () => {
  void (async () => {
    await runner.stop(3000);
    // Give the last onSettled inserts their turn before the pool ends.
    await new Promise((r) => setTimeout(r, 50));
    await side.end();
    await queue.close();
    process.exit(0);
  })();
});

runner.start();
console.log('ready');
