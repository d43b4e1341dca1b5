// How long a command of the command-line client takes to start, as a ratio to Node.js starting with
// nothing to run (`node -e ''`), measured in one run, through the `custody` launcher (the package's bin
// and `npm run cli`, deploy/cli/custody.mjs) from the one-file bundle it keeps current: `--help`; a
// platform command that reads its settings and fails at once on a port nothing listens on (the whole
// path of a call but the answer); and `keygen`, which loads the key code and writes a file. The suite
// first runs the launcher once, so the bundle is built before anything is timed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchSuite } from '../harness.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const launcher = join(root, 'deploy', 'cli', 'custody.mjs');
let work = '';

function run(args: string[], expect = 0, env: Record<string, string> = {}): void {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: work, ...env } });
  if (r.status !== expect) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
}

// A loopback port that refuses at once: the call is sent and fails with `network` (exit 5).
const REFUSED = { CUSTODY_URL: 'http://127.0.0.1:9', CUSTODY_API_KEY: 'svc_test_bench' };

export const suite: BenchSuite = {
  title: 'command-line client start',
  async setup() {
    work = mkdtempSync(join(tmpdir(), 'cli-bench-'));
    run([launcher, '--help']);
  },
  teardown() {
    rmSync(work, { recursive: true, force: true });
  },
  cases: [
    { name: 'node.start', runs: 15, warmup: 2, fn: () => run(['-e', '']) },
    { name: 'cli.start.help', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, '--help']) },
    { name: 'cli.start.platform', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, 'payments', 'list', '--limit', '1'], 5, REFUSED) },
    { name: 'cli.start.keygen', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, 'keygen', '--out', join(work, `k-${Math.random().toString(36).slice(2)}.hex`)]) },
  ],
};
