// How long a command of the command-line client takes to start, as a ratio to Node.js starting with
// nothing to run (`node -e ''`), measured in one run, through the `custody` launcher (the package's bin
// and `npm run cli`, deploy/cli/custody.mjs) from the one-file bundle it keeps current: `--help`; a
// platform call (`branding get`) answered at once by a stub server in this process, so what is timed is
// the client's start, settings, request and output; and `keygen`, which loads the key code and writes a
// file. The suite first runs the launcher once, so the bundle is built before anything is timed.
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchSuite } from '../harness.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const launcher = join(root, 'deploy', 'cli', 'custody.mjs');
let work = '';
let stub: Server | undefined;
let stubUrl = '';

function run(args: string[]): void {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: work } });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
}

/** A child run without blocking this process, which serves the stub meanwhile. */
function runAsync(args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: work, ...env } });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited ${code}: ${err.slice(0, 300)}`))));
  });
}

export const suite: BenchSuite = {
  title: 'command-line client start',
  async setup() {
    work = mkdtempSync(join(tmpdir(), 'cli-bench-'));
    run([launcher, '--help']);
    stub = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_bench' }).end('{"theme":{},"resolved":{}}'));
    await new Promise<void>((r) => stub!.listen(0, '127.0.0.1', r));
    stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
  },
  async teardown() {
    rmSync(work, { recursive: true, force: true });
    await new Promise<void>((r) => (stub ? stub.close(() => r()) : r()));
  },
  cases: [
    { name: 'node.start', runs: 15, warmup: 2, fn: () => run(['-e', '']) },
    { name: 'cli.start.help', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, '--help']) },
    { name: 'cli.start.platform', baseline: 'node.start', runs: 15, warmup: 2, fn: () => runAsync([launcher, 'branding', 'get'], { CUSTODY_URL: stubUrl, CUSTODY_API_KEY: 'svc_test_bench' }) },
    { name: 'cli.start.keygen', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, 'keygen', '--out', join(work, `k-${Math.random().toString(36).slice(2)}.hex`)]) },
  ],
};
