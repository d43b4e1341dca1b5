#!/usr/bin/env node
// `npm start`: builds when the sources are newer than the build, then runs the coordinator, three
// service nodes and the API on this machine with embedded LevelDB under ./data/. A second start reuses
// the same identities and data. Ctrl-C stops every child.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dist = join(root, 'dist');
const data = resolve(process.env.DATA_DIR ?? join(root, 'data'));
const apiPort = process.env.API_PORT ?? '8080';
const coordinatorPort = process.env.COORDINATOR_PORT ?? '7400';
const nodes = Number(process.env.LOCAL_NODES ?? '3');

function newest(dir) {
  let t = 0;
  if (!existsSync(dir)) return t;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'gen') continue;
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const sources = Math.max(...['common', 'proto', 'node', 'coordinator', 'api', 'tee'].map((d) => newest(join(root, d))));
if (!existsSync(join(dist, 'api', 'server.js')) || newest(dist) < sources) {
  console.log('[start] building...');
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

mkdirSync(data, { recursive: true });
const children = [];
let stopping = false;

function run(name, script, env) {
  const child = spawn(process.execPath, [join(dist, script)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const print = (chunk) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line) continue;
      let text = line;
      try {
        const j = JSON.parse(line);
        const level = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }[j.level] ?? j.level;
        const { level: _l, time: _t, pid: _p, name: _n, hostname: _h, msg, ...rest } = j;
        const extra = Object.keys(rest).length ? ' ' + JSON.stringify(rest) : '';
        text = `${level} ${msg ?? ''}${extra}`;
      } catch {
        // not JSON: print as is
      }
      console.log(`[${name}] ${text}`);
    }
  };
  child.stdout.on('data', print);
  child.stderr.on('data', print);
  child.on('exit', (code, signal) => {
    console.log(`[${name}] exited (${signal ?? code})`);
    if (!stopping) stop(1);
  });
  children.push({ name, child });
  return child;
}

function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  console.log('[start] stopping...');
  const alive = children.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  if (alive.length === 0) process.exit(code);
  let left = alive.length;
  for (const { child } of alive) {
    child.once('exit', () => {
      if (--left === 0) process.exit(code);
    });
    child.kill('SIGTERM');
  }
  setTimeout(() => {
    for (const { child } of alive) child.kill('SIGKILL');
    process.exit(code || 1);
  }, 8000).unref();
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

run('coordinator', 'coordinator/main.js', {
  COORDINATOR_LISTEN: `127.0.0.1:${coordinatorPort}`,
  COORDINATOR_DATA_DIR: join(data, 'coordinator'),
});
for (let i = 1; i <= nodes; i++) {
  run(`node-${i}`, 'node/main.js', {
    NODE_COORDINATOR: `127.0.0.1:${coordinatorPort}`,
    NODE_DATA_DIR: join(data, `node-${i}`),
    NODE_KIND: 'service',
  });
}
run('api', 'api/server.js', {
  API_HOST: '127.0.0.1',
  API_PORT: apiPort,
  API_DATA_DIR: join(data, 'api'),
  API_COORDINATOR: `127.0.0.1:${coordinatorPort}`,
});
console.log(`[start] API on http://127.0.0.1:${apiPort} (readiness: /readyz); data in ${data}; Ctrl-C stops everything`);
