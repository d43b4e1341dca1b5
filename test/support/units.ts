// The test files that run in the test process alone are named `*.unit.ts` and run together, a few
// processes for all of them, instead of one process each. A test process costs some 5 s of CPU before
// its tests run at full speed (Node, tap and its process tracking, the loaders, compiling the modules the
// file imports, and the first run of each hot path: the first app a process builds takes over a second,
// the next ones a fifth of that) and 2 s more in tap's handling around it. Ten API test files cost 80 s
// of CPU in ten processes and 26 s in one. How long a file's tests run does not matter for that.
//
// A file runs in a shard when it sets nothing for its whole process at its top level (timeouts, hooks,
// plans, teardowns, environment, exit handlers) and starts no worker thread and no process but an anvil
// or a server of its own that its tests stop: in a shared process anything else would reach the other
// files' tests. A file whose tests start the project's programs stays a `*.test.ts` of its own, so that
// tap runs it beside others while it waits on them.
//
// Every `*.unit.ts` under test/ belongs to exactly one of SHARDS processes (test/_units/shard-<n>.test.ts),
// by its place in path order, so a new file is run without being listed anywhere. A shard loads a file
// once the files before it have finished their tests, so no file's top-level code runs during another
// file's tests. A file still runs alone with `npx tap test/<path>.unit.ts`.
//
// The shards' folder is `test/_units/` so that it sorts first: tap starts its files in path order, and
// the shards are long and use their core throughout, so started first they leave the end of the run
// to short files instead of ending it with one shard running on one of the two cores.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Six: each shard costs two processes (the tap test process and, in CI, the Node.js 22 one) before its files
// run; the shards start first and keep both cores busy while the other test slots fill, so more shards buy
// no speed. The six, alone with `-j 2` and no coverage: 290 files, 373 CPU-s, 251 s on two cores.
export const SHARDS = 6;
const testDir = fileURLToPath(new URL('..', import.meta.url));

/** Every `*.unit.ts` under test/, by path. */
export function unitFiles(dir = testDir): string[] {
  const found: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) found.push(...unitFiles(p));
    else if (e.name.endsWith('.unit.ts')) found.push(p);
  }
  return found.sort((a, b) => relative(testDir, a).localeCompare(relative(testDir, b), 'en'));
}

/** Resolves once the root test has run every test queued so far. */
const settled = (): Promise<void> => new Promise((resolve) => (t.idle ? resolve() : t.once('idle', () => resolve())));

/**
 * Runs shard `n` (1 to SHARDS): its files' tests, in path order, one file after the other, in this process.
 * With UNIT_TEST_NODE naming another Node.js binary (CI's supported LTS line, .ci/run), the shard runs in a
 * process of that binary instead, with the same loaders, its TAP output a subtest of this one.
 */
export async function runUnitShard(n: number): Promise<void> {
  if (!Number.isInteger(n) || n < 1 || n > SHARDS) throw new RangeError(`no shard ${n} of ${SHARDS}`);
  // Several files' tests in one process: the time allowed is that of several files.
  t.setTimeout(900_000);
  const other = process.env.UNIT_TEST_NODE;
  if (other && process.env.UNIT_TEST_NODE_RUNNING !== '1') {
    t.spawn(other, [...process.execArgv, process.argv[1]!], { env: { ...process.env, UNIT_TEST_NODE_RUNNING: '1', _TAPJS_PROCESSINFO_COVERAGE_: process.env.TAP_DISABLE_COVERAGE === '1' ? '0' : '1' } }, `shard ${n} under ${other}`);
    return;
  }
  if (process.env.UNIT_TEST_NODE_RUNNING === '1') t.comment(`shard ${n} on Node.js ${process.version}`);
  const mine = unitFiles().filter((_, i) => i % SHARDS === n - 1);
  // A file that breaks the rule above (a timeout or teardown for the whole process, a setup given the
  // root test) can end the shard's root test early; the next files' tests would then not run, and tap
  // would still count the shard as passed. Stop the whole run instead, naming the file.
  let previous = '(none)';
  for (const file of mine) {
    if ((t as unknown as { results?: unknown }).results !== undefined) {
      process.stdout.write(`Bail out! shard ${n}'s root test ended early, at or just before ${previous} (${relative(testDir, file)} and the rest not run): a *.unit.ts set something for the whole process (test/support/units.ts)\n`);
      process.exitCode = 1;
      return;
    }
    const cpu = process.cpuUsage();
    const started = performance.now();
    await import(pathToFileURL(file).href);
    await settled();
    previous = relative(testDir, file);
    // What each file costs, to keep the shards even (SHARDS, and the path order, decide where a file runs).
    const used = process.cpuUsage(cpu);
    t.comment(`${previous}: ${((used.user + used.system) / 1e6).toFixed(1)} s CPU, ${((performance.now() - started) / 1e3).toFixed(1)} s`);
  }
}
