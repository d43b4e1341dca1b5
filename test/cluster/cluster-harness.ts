// Starts the real programs as child processes on loopback, in a temporary directory, and reads their
// structured logs. Used by every multi-process test.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';

const root = resolve(import.meta.dirname, '../..');

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export class Proc {
  readonly lines: LogLine[] = [];
  readonly raw: string[] = [];
  private waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly name: string, readonly child: ChildProcess) {
    let buf = '';
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        this.raw.push(line);
        let parsed: LogLine;
        try {
          parsed = JSON.parse(line) as LogLine;
        } catch {
          parsed = { level: 0, msg: line };
        }
        this.lines.push(parsed);
        this.waiters = this.waiters.filter((w) => {
          if (w.pred(parsed)) {
            w.resolve(parsed);
            return false;
          }
          return true;
        });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    this.exited = new Promise((res) => child.once('exit', (code, signal) => res({ code, signal })));
  }

  /** Resolves with the first log line (past or future) matching `pred`. */
  waitFor(pred: (l: LogLine) => boolean, timeoutMs = 20_000, what = 'log line'): Promise<LogLine> {
    const seen = this.lines.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: no ${what} within ${timeoutMs} ms; last lines:\n${this.raw.slice(-15).join('\n')}`)), timeoutMs);
      this.waiters.push({ pred, resolve: (l) => { clearTimeout(timer); resolve(l); } });
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM') {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export class Cluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'cluster-'));
  readonly procs: Proc[] = [];
  coordinatorPort = 0;
  apiPort = 0;

  /** Starts one of the programs from its TypeScript entry. CLUSTER_PROF_DIR writes a CPU profile per node process. */
  spawn(name: string, entry: string, env: Record<string, string>): Proc {
    const child = spawn(process.execPath, [...(entry === 'node/main.ts' && process.env.CLUSTER_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.CLUSTER_PROF_DIR] : []), '--import', 'tsx', join(root, entry)], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new Proc(name, child);
    this.procs.push(p);
    return p;
  }

  async startCoordinator(extra: Record<string, string> = {}): Promise<Proc> {
    this.coordinatorPort ||= await freePort();
    const p = this.spawn('coordinator', 'coordinator/main.ts', {
      COORDINATOR_LISTEN: `127.0.0.1:${this.coordinatorPort}`,
      COORDINATOR_DATA_DIR: join(this.dir, 'coordinator'),
      COORDINATOR_HEARTBEAT_MS: '500',
      ...extra,
    });
    await p.waitFor((l) => l.msg === 'coordinator listening', 30_000, 'listening line');
    return p;
  }

  /** Uses a coordinator the test runs in-process (to watch or tamper with what it relays). */
  useCoordinatorPort(port: number): void {
    this.coordinatorPort = port;
  }

  async startNode(name: string, extra: Record<string, string> = {}): Promise<{ proc: Proc; nodeId: string }> {
    const p = this.spawn(name, 'node/main.ts', {
      NODE_COORDINATOR: `127.0.0.1:${this.coordinatorPort}`,
      NODE_DATA_DIR: join(this.dir, name),
      NODE_RECONNECT_MIN_MS: '50',
      NODE_RECONNECT_MAX_MS: '500',
      ...extra,
    });
    const l = await p.waitFor((l) => l.msg === 'attached to coordinator', 30_000, 'attach');
    return { proc: p, nodeId: String(l['nodeId']) };
  }

  async startApi(extra: Record<string, string> = {}): Promise<Proc> {
    this.apiPort ||= await freePort();
    const p = this.spawn('api', 'api/server.ts', {
      API_HOST: '127.0.0.1',
      API_PORT: String(this.apiPort),
      API_DATA_DIR: join(this.dir, 'api'),
      API_COORDINATOR: `127.0.0.1:${this.coordinatorPort}`,
      ...extra,
    });
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${this.apiPort}/healthz`).catch(() => undefined))?.ok === true, 30_000, 'api healthz');
    return p;
  }

  /** Stops every process (SIGTERM, then SIGKILL) and removes the directory. */
  async stop(): Promise<void> {
    await Promise.all(this.procs.map(async (p) => {
      if (!p.running) return;
      const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
      await p.kill('SIGTERM');
      clearTimeout(timer);
    }));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
