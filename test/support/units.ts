// The small test files are named `*.unit.ts` and run together, a few processes for all of them, instead
// of one process each. A test process costs about 2 s of CPU before its first test (Node, tap and its
// process tracking, the loaders, the modules the file imports) and as much again in tap's handling around
// it; most of these files test for less than a second. A file is small when it ran for under 6 s in the
// suite and sets nothing for its whole process at its top level (timeouts, hooks, plans, teardowns,
// environment, exit handlers) and starts no process or worker: in a shared process those would reach the
// other files' tests.
//
// Every `*.unit.ts` under test/ belongs to exactly one of SHARDS processes (test/units/shard-<n>.test.ts),
// by its place in path order, so a new file is run without being listed anywhere. A file still runs
// alone with `npx tap test/<path>.unit.ts`.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

/** Runs shard `n` (1 to SHARDS): its files' tests, in path order, in this process. */
export async function runUnitShard(n: number): Promise<void> {
  if (!Number.isInteger(n) || n < 1 || n > SHARDS) throw new RangeError(`no shard ${n} of ${SHARDS}`);
  // Several files' tests in one process: the time allowed is that of several files.
  t.setTimeout(600_000);
  for (const [i, file] of unitFiles().entries()) {
    if (i % SHARDS === n - 1) await import(pathToFileURL(file).href);
  }
}
