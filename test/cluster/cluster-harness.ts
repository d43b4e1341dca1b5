// Starts the real programs as child processes on loopback, in a temporary directory, and reads their
// structured logs. Used by every multi-process test. Like the local launcher, it holds an operator key,
// creates the nodes' identities before they start and signs the service-node roster the coordinator
// carries (docs/trust.md "Committees"); every node it starts trusts that operator key.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { loadStorageKey } from '../../node/storage/storage-key.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { signRoster } from '../../core/trust/roster.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

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

/**
 * A port for a process a test starts later. It is chosen below the kernel's ephemeral range, so no
 * socket bound to port 0 in the meantime (a test's webhook receiver, an outgoing connection) can be
 * handed the same port before the process binds it; a port bound to 0 and closed again could be, and a
 * health probe would then reach another test's server. Chosen at random and checked free.
 */
export async function freePort(): Promise<number> {
  const ephemeralLow = (() => {
    try {
      return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
    } catch {
      return 32768;
    }
  })();
  const low = 10_000;
  for (let attempt = 0; attempt < 100 && ephemeralLow - low > 1000; attempt++) {
    const port = low + Math.floor(Math.random() * (ephemeralLow - low));
    if (await canBind(port)) return port;
  }
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

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** A node's public identity as `npm run node-identity` prints it. */
export interface NodePublicIdentity {
  node_id: string;
  signing_key: string;
  encryption_key: string;
}

export class Cluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'cluster-'));
  readonly procs: Proc[] = [];
  coordinatorPort = 0;
  /** Coordinator shards by name (startShard), each keeping its port and data directory across restarts. */
  readonly shards = new Map<string, { port: number; proc?: Proc }>();
  apiPort = 0;
  /** Signs the service-node roster; every node started here trusts its public key. */
  readonly operator = new Uint8Array(randomBytes(32));
  readonly operatorPublic = bytesToHex(ed25519.getPublicKey(this.operator));
  /** The last roster signed, which startCoordinator gives the coordinator. */
  rosterFile: string | undefined;
  private rosterVersion = 0;

  /** The identity of the node named `name` (its data directory), created as the node creates it at first start. */
  async identity(name: string): Promise<NodePublicIdentity> {
    const dir = join(this.dir, name);
    const storageKey = loadStorageKey(join(dir, 'storage.key'), true);
    // With the node's anchor, as `npm run node-identity` opens it, so the node finds the two in step.
    const store = await SealedStore.open(join(dir, 'db'), storageKey, { anchor: new FileRollbackAnchor(join(this.dir, `${name}.anchor`), storageKey) });
    try {
      const { identity } = await NodeIdentity.loadOrCreate(store);
      return { node_id: identity.nodeId, signing_key: bytesToHex(identity.signingKey), encryption_key: bytesToHex(identity.encryptionKey) };
    } finally {
      await store.close();
    }
  }

  /** Signs a roster of the named service nodes (the next version) and returns its file. */
  async roster(names: string[], version = this.rosterVersion + 1): Promise<string> {
    const ids = await Promise.all(names.map((n) => this.identity(n)));
    const bytes = signRoster({ version, created: Math.floor(Date.now() / 1000), nodes: ids.map((i) => ({ nodeId: i.node_id, signingKey: i.signing_key, encryptionKey: i.encryption_key })) }, this.operator);
    const file = join(this.dir, `roster-v${version}.hex`);
    writeFileSync(file, bytesToHex(bytes) + '\n');
    this.rosterVersion = Math.max(this.rosterVersion, version);
    this.rosterFile = file;
    return file;
  }

  /** Starts one of the programs from its TypeScript entry. CLUSTER_PROF_DIR writes a CPU profile per node process. */
  spawn(name: string, entry: string, env: Record<string, string>): Proc {
    const child = spawn(PROGRAM_LAUNCHER, programArgs(entry, entry === 'node/main.ts' && process.env.CLUSTER_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.CLUSTER_PROF_DIR] : []), {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new Proc(name, child);
    this.procs.push(p);
    return p;
  }

  /** Starts the coordinator with the last roster signed, or one of node-1 to node-3. */
  async startCoordinator(extra: Record<string, string> = {}): Promise<Proc> {
    this.coordinatorPort ||= await freePort();
    const rosterFile = this.rosterFile ?? (await this.roster(['node-1', 'node-2', 'node-3']));
    const p = this.spawn('coordinator', 'coordinator/main.ts', {
      COORDINATOR_LISTEN: `127.0.0.1:${this.coordinatorPort}`,
      COORDINATOR_DATA_DIR: join(this.dir, 'coordinator'),
      COORDINATOR_HEARTBEAT_MS: '500',
      COORDINATOR_ROSTER_FILE: rosterFile,
      ...extra,
    });
    await p.waitFor((l) => l.msg === 'coordinator listening', 30_000, 'listening line');
    return p;
  }

  /**
   * Starts (or restarts, on the same port and data directory) the coordinator of shard `name`. Nodes
   * started afterwards attach to every shard started so far; the API gets them as API_COORDINATORS.
   */
  async startShard(name: string, extra: Record<string, string> = {}): Promise<Proc> {
    const shard = this.shards.get(name) ?? { port: await freePort() };
    this.shards.set(name, shard);
    const rosterFile = this.rosterFile ?? (await this.roster(['node-1', 'node-2', 'node-3']));
    const p = this.spawn(`coordinator-${name}`, 'coordinator/main.ts', {
      COORDINATOR_LISTEN: `127.0.0.1:${shard.port}`,
      COORDINATOR_DATA_DIR: join(this.dir, `coordinator-${name}`),
      COORDINATOR_ID: `coordinator-${name}`,
      COORDINATOR_HEARTBEAT_MS: '500',
      COORDINATOR_ROSTER_FILE: rosterFile,
      ...extra,
    });
    shard.proc = p;
    await p.waitFor((l) => l.msg === 'coordinator listening', 30_000, 'listening line');
    return p;
  }

  /** The addresses nodes dial: every shard's, or the one coordinator's. */
  coordinatorAddresses(): string[] {
    return this.shards.size ? [...this.shards.values()].map((s) => `127.0.0.1:${s.port}`) : [`127.0.0.1:${this.coordinatorPort}`];
  }

  /** Uses a coordinator the test runs in-process (to watch or tamper with what it relays). */
  useCoordinatorPort(port: number): void {
    this.coordinatorPort = port;
  }

  async startNode(name: string, extra: Record<string, string> = {}): Promise<{ proc: Proc; nodeId: string }> {
    const p = this.spawn(name, 'node/main.ts', {
      NODE_COORDINATOR: this.coordinatorAddresses().join(','),
      NODE_DATA_DIR: join(this.dir, name),
      // Beside the data directory, not in it: what a restore of the directory does not roll back.
      NODE_ROLLBACK_ANCHOR_FILE: join(this.dir, `${name}.anchor`),
      NODE_RECONNECT_MIN_MS: '50',
      NODE_RECONNECT_MAX_MS: '500',
      ...extra,
      NODE_OPERATOR_KEYS: [extra.NODE_OPERATOR_KEYS, this.operatorPublic].filter(Boolean).join(','),
    });
    // Attached to each coordinator it was given (each link logs its own attachment).
    const addresses = (extra.NODE_COORDINATOR ?? this.coordinatorAddresses().join(',')).split(',');
    const lines = await Promise.all(addresses.map((a) => p.waitFor((l) => l.msg === 'attached to coordinator' && l['coordinator'] === a, 30_000, `attach to ${a}`)));
    return { proc: p, nodeId: String(lines[0]!['nodeId']) };
  }

  /** Starts (or restarts, on the same port and data directory) the API; waits `healthzMs` for its /healthz. */
  async startApi(extra: Record<string, string> = {}, healthzMs = 30_000): Promise<Proc> {
    this.apiPort ||= await freePort();
    const p = this.spawn('api', 'api/server.ts', {
      ...TEST_RATE_LIMITS,
      API_HOST: '127.0.0.1',
      API_PORT: String(this.apiPort),
      API_DATA_DIR: join(this.dir, 'api'),
      ...(this.shards.size
        ? { API_COORDINATORS: [...this.shards].map(([name, s]) => `${name}=127.0.0.1:${s.port}`).join(',') }
        : { API_COORDINATOR: `127.0.0.1:${this.coordinatorPort}` }),
      ...extra,
    });
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${this.apiPort}/healthz`).catch(() => undefined))?.ok === true, healthzMs, 'api healthz');
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

/**
 * Request budgets the multi-process tests do not reach: every client of a test (SDK, CLI, browser) is on
 * 127.0.0.1 and most share one API key, and several waits poll at once. The budgets have their own tests
 * (test/api/rate-limits/); a test may set its own.
 */
export const TEST_RATE_LIMITS: Readonly<Record<string, string>> = { API_RATE_LIMIT_PER_ADDRESS: '1000000', API_RATE_LIMIT_PER_KEY: '1000000' };

export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
