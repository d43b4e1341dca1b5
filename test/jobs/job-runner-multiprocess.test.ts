// Three job runner processes (job-worker-process.ts) share one PostgreSQL and 300 jobs; one is SIGKILLed
// mid-run. What must hold, by the side effects recorded in the database:
// - exactly-once completion: every job ends done, and the queue accepts one completion per job;
// - at-least-once execution: every job ran to its end at least once; a job ran more than once only when
//   the killed process was running it at the kill, and then its next run began only after the lease lapsed;
// - no two concurrent executions of one job, and of one ordering key (the wallet jobs), whose jobs also
//   ran in enqueue order.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import t from 'tap';
import { PostgresJobQueue } from '../../api/jobs/postgres-job-queue.ts';
import { startPostgres } from '../support/postgres.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

const N = 300;
const WALLETS = 10;
const PER_WALLET = 6;
const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const server = await startPostgres();
const children: ChildProcess[] = [];
let queue: PostgresJobQueue | undefined;
let db: pg.Pool | undefined;
// In order, also when an assertion threw: no child, no connection, no server left behind.
t.teardown(async () => {
  await Promise.all(
    children.map((c) => (c.exitCode === null && c.signalCode === null ? (c.kill('SIGKILL'), new Promise((ok) => c.once('exit', ok))) : undefined)),
  );
  await queue?.close();
  await db?.end();
  await sleep(20);
  await server.stop();
});

t.test('3 processes share 300 jobs; one is SIGKILLed mid-run', async (t) => {
  queue = await PostgresJobQueue.open({ connectionString: server.url, max: 2 });
  db = new pg.Pool({ connectionString: server.url, max: 2 });
  const q = queue;
  const d = db;
  await d.query(`CREATE TABLE executions (id serial PRIMARY KEY, job_id bigint NOT NULL, worker text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(), finished_at timestamptz)`);
  await d.query('CREATE TABLE completions (job_id bigint NOT NULL, worker text NOT NULL)');

  const wallet = new Map<string, string>();
  for (let w = 0; w < WALLETS; w++) {
    for (let i = 0; i < PER_WALLET; i++) {
      const { job } = await q.enqueue('side_effect', `w${w}-${i}`, {}, { orderingKey: `wallet-${w}` });
      wallet.set(job.id, `wallet-${w}`);
    }
  }
  await Promise.all(Array.from({ length: N - WALLETS * PER_WALLET }, (_, i) => q.enqueue('side_effect', `free-${i}`, {})));

  const t0 = performance.now();
  const logs = new Map<string, string>();
  function worker(id: string): Promise<ChildProcess> {
    const child = spawn(PROGRAM_LAUNCHER, programArgs(join(here, 'job-worker-process.ts')), {
      env: { ...process.env, JOBS_DATABASE_URL: server.url, JOBS_WORKER_ID: id },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    logs.set(id, '');
    child.stderr!.on('data', (d: Buffer) => logs.set(id, logs.get(id) + d.toString()));
    return new Promise((ok, fail) => {
      child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && ok(child));
      child.once('exit', (code) => fail(new Error(`worker ${id} exited with ${code}:\n${logs.get(id)}`)));
    });
  }
  const [victim, ...survivors] = await Promise.all(['w1', 'w2', 'w3'].map(worker));
  t.comment(`3 workers ready after ${Math.round(performance.now() - t0)} ms`);

  const count = async (sql: string, params: unknown[] = []) => Number((await d.query<{ n: string }>(sql, params)).rows[0]!.n);
  // Kill w1 while it is inside handlers, once the run is under way.
  let killedAt: Date | undefined;
  for (let i = 0; i < 2000 && killedAt === undefined; i++) {
    const started = await count('SELECT count(*) AS n FROM executions');
    const inFlight = await count("SELECT count(*) AS n FROM executions WHERE worker = 'w1' AND finished_at IS NULL");
    if (started >= N / 4 && inFlight >= 2) {
      victim!.kill('SIGKILL');
      await new Promise((ok) => victim!.once('exit', ok));
      killedAt = (await d.query<{ t: Date }>('SELECT clock_timestamp() AS t')).rows[0]!.t;
    } else await sleep(5);
  }
  t.ok(killedAt, 'w1 was killed mid-run, inside handlers');
  t.comment(`w1 killed after ${Math.round(performance.now() - t0)} ms`);

  for (let i = 0; i < 400 && (await count("SELECT count(*) AS n FROM jobs WHERE state <> 'done'")) > 0; i++) await sleep(50);
  t.comment(`all jobs settled after ${Math.round(performance.now() - t0)} ms`);
  await Promise.all(survivors.map((c) => (c.kill('SIGTERM'), new Promise((ok) => c.once('exit', ok)))));
  t.same(survivors.map((c) => c.exitCode), [0, 0], 'the survivors stopped gracefully');

  interface Exec { job_id: string; worker: string; started_at: Date; finished_at: Date | null }
  const jobs = (await d.query<{ id: string; state: string; attempts: number }>('SELECT id::text, state, attempts FROM jobs ORDER BY id')).rows;
  const execs = (await d.query<Exec>('SELECT job_id::text, worker, started_at, finished_at FROM executions ORDER BY started_at, id')).rows;
  const completions = (await d.query<{ job_id: string; worker: string }>('SELECT job_id::text, worker FROM completions')).rows;

  t.equal(jobs.length, N);
  t.ok(jobs.every((j) => j.state === 'done'), 'every job is done');

  // Exactly-once completion.
  const completedBy = new Map<string, string[]>();
  for (const c of completions) completedBy.set(c.job_id, [...(completedBy.get(c.job_id) ?? []), c.worker]);
  t.ok([...completedBy.values()].every((ws) => ws.length === 1), 'no job was completed twice');
  const byJob = new Map<string, Exec[]>();
  for (const e of execs) byJob.set(e.job_id, [...(byJob.get(e.job_id) ?? []), e]);
  // The jobs the kill interrupted: w1 ran them but did not complete them (killed inside the handler, or
  // between handler and `complete`, or before its completions row landed).
  const interrupted = new Set(execs.filter((e) => e.worker === 'w1' && completedBy.get(e.job_id)?.[0] !== 'w1').map((e) => e.job_id));
  const reran = [...byJob].filter(([, es]) => es.length > 1).map(([id]) => id);
  t.ok(execs.some((e) => e.worker === 'w1' && e.finished_at === null), 'the kill interrupted at least one handler');
  t.comment(`w1 ran ${execs.filter((e) => e.worker === 'w1').length} executions; interrupted ${interrupted.size}; jobs run twice ${reran.length}`);
  for (const j of jobs) if (!interrupted.has(j.id)) t.equal(completedBy.get(j.id)?.length ?? 0, 1, `job ${j.id} completion recorded once`);

  // At-least-once execution, re-runs only of what the kill interrupted.
  t.ok(jobs.every((j) => byJob.get(j.id)?.some((e) => e.finished_at !== null)), 'every job ran to its end at least once');
  t.ok(reran.every((id) => interrupted.has(id)), 'only jobs the kill interrupted ran again');
  t.ok([...interrupted].filter((id) => byJob.get(id)!.some((e) => e.worker === 'w1' && e.finished_at === null)).every((id) => reran.includes(id)), 'every interrupted handler ran again elsewhere');
  for (const id of reran) {
    const es = byJob.get(id)!;
    t.ok(es.slice(0, -1).every((e) => e.worker === 'w1') && es[es.length - 1]!.worker !== 'w1', `job ${id}: the re-run is a survivor's`);
    t.equal(jobs.find((j) => j.id === id)!.attempts, es.length, `job ${id}: one attempt per execution`);
  }
  const survivorRuns = execs.filter((e) => e.worker !== 'w1');
  t.equal(new Set(survivorRuns.map((e) => e.job_id)).size, survivorRuns.length, 'the survivors ran no job twice');

  // No two concurrent executions of one job: each run begins after the previous one ended (a killed run ends at the kill).
  const end = (e: Exec) => (e.finished_at ?? killedAt!).getTime();
  let overlaps = 0;
  for (const es of byJob.values()) for (let i = 1; i < es.length; i++) if (es[i]!.started_at.getTime() < end(es[i - 1]!)) overlaps++;
  t.equal(overlaps, 0, 'no job ran twice at once');
  const handover = reran.map((id) => byJob.get(id)!).map((es) => es[es.length - 1]!.started_at.getTime() - killedAt!.getTime());
  t.ok(handover.every((ms) => ms > 0), `re-runs began after the kill (${Math.min(...handover)}-${Math.max(...handover)} ms later, lease 1000 ms)`);

  // Ordering keys: a wallet's jobs ran one at a time, in enqueue order (its last run of each job counts).
  let walletViolations = 0;
  for (let w = 0; w < WALLETS; w++) {
    const ids = [...wallet].filter(([, k]) => k === `wallet-${w}`).map(([id]) => id);
    const runs = ids.flatMap((id) => byJob.get(id)!).sort((a, b) => a.started_at.getTime() - b.started_at.getTime());
    for (let i = 1; i < runs.length; i++) if (runs[i]!.started_at.getTime() < end(runs[i - 1]!)) walletViolations++;
    const finals = ids.map((id) => byJob.get(id)!.at(-1)!.started_at.getTime());
    if (finals.some((s, i) => i > 0 && s < finals[i - 1]!)) walletViolations++;
  }
  t.equal(walletViolations, 0, `${WALLETS} wallets x ${PER_WALLET} jobs: sequential and in order across processes`);
  t.comment(`finished after ${Math.round(performance.now() - t0)} ms`);
});
