// How long a command of the command-line client takes to start, as a ratio to Node.js starting with
// nothing to run (`node -e ''`), measured in one run: `cli --help` from the one-file bundle npm start
// makes (dist/cli.mjs, deploy/local/bundle-cli.mjs) through `npm run cli`'s launcher, and `cli keygen`,
// which loads the key code and writes a file. Without a fresh build the suite first builds and bundles as
// `npm start` does, so it measures what `npm run cli` runs after `npm start`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchSuite } from '../harness.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const launcher = join(root, 'deploy', 'local', 'run.mjs');
let work = '';

function run(args: string[]): void {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
}

export const suite: BenchSuite = {
  title: 'command-line client start',
  async setup() {
    work = mkdtempSync(join(tmpdir(), 'cli-bench-'));
    const state = (await import(join(root, 'deploy', 'local', 'build-state.mjs'))) as { buildIsFresh(): boolean; markBuild(): void; unmarkBuild(): void };
    if (!state.buildIsFresh() || !existsSync(join(root, 'dist', 'cli.mjs'))) {
      // What npm start does before it runs anything: the build, then the client's bundle.
      state.unmarkBuild();
      const r = spawnSync('npm', ['run', 'build', '--', '--noCheck'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
      if (r.status !== 0) throw new Error('npm run build failed');
      await ((await import(join(root, 'deploy', 'local', 'bundle-cli.mjs'))) as { bundleCli(): Promise<void> }).bundleCli();
      state.markBuild();
    }
  },
  teardown() {
    rmSync(work, { recursive: true, force: true });
  },
  cases: [
    { name: 'node.start', runs: 15, warmup: 2, fn: () => run(['-e', '']) },
    { name: 'cli.start.help', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, 'api/sdk/cli.ts', '--help']) },
    { name: 'cli.start.keygen', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, 'api/sdk/cli.ts', 'keygen', '--out', join(work, `k-${Math.random().toString(36).slice(2)}.hex`)]) },
  ],
};
