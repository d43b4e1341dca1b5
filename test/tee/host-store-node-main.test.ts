// The node process (node/main.ts) with NODE_STORE_REMOTE against the host store (npm run
// enclave-host-store), both as child processes: a first start creates the identity in the host store,
// a restart loads the same one, and node-identity opens the same store. With a sealed storage key the
// sealed blob is kept by the host store too, so a node whose local data is gone (an enclave restarted)
// comes back with the same identity.
import t, { type Test } from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

t.setTimeout(180_000);

const main = 'node/main.ts';
const identityCli = 'node/identity-cli.ts';
const hostStore = 'tee/host-store/main.ts';

function tempDir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'host-store-node-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Spawns `script`; resolves with the first JSON line (stdout or stderr) whose msg is `until`. */
function start(t: Test, script: string, args: string[], env: Record<string, string>, until: string): Promise<{ child: ChildProcess; line: Record<string, unknown> }> {
  const child = spawn(PROGRAM_LAUNCHER, [...programArgs(script), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', ...env } });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let said = '';
  return new Promise((resolve, reject) => {
    const scan = (d: Buffer) => {
      said += d.toString();
      for (const p of said.split('\n')) {
        if (!p.startsWith('{')) continue;
        const line = JSON.parse(p) as Record<string, unknown>;
        if (line.msg === until) return resolve({ child, line });
      }
    };
    child.stdout!.on('data', scan);
    child.stderr!.on('data', scan);
    child.on('close', (code) => reject(new Error(`${script} ended (${code}) before "${until}": ${said}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  const closed = new Promise((resolve) => child.once('close', resolve));
  child.kill('SIGTERM');
  await closed;
}

async function hostStoreOn(t: Test, dir: string): Promise<string> {
  const { line } = await start(t, hostStore, ['--dir', dir, '--listen', '127.0.0.1:0'], {}, 'host store listening');
  return `127.0.0.1:${line.port}`;
}

const nodeEnv = (dataDir: string, remote: string, more: Record<string, string> = {}) => ({
  NODE_DATA_DIR: dataDir, NODE_ROLLBACK_ANCHOR_FILE: `${dataDir}.anchor`, NODE_STORE_REMOTE: remote, NODE_COORDINATOR: '127.0.0.1:1', NODE_RECONNECT_MIN_MS: '1000', ...more,
});

t.test('the node keeps its identity in the host store across a restart, and node-identity reads the same', async (t) => {
  const dir = tempDir(t);
  const remote = await hostStoreOn(t, join(dir, 'host-db'));
  const env = nodeEnv(join(dir, 'node'), remote);
  const first = await start(t, main, [], env, 'identity created');
  const nodeId = first.line.nodeId;
  t.ok(nodeId);
  await stop(first.child);

  const second = await start(t, main, [], env, 'identity loaded');
  t.equal(second.line.nodeId, nodeId, 'the same identity from the same host store');
  await stop(second.child);

  const cli = spawnSync(PROGRAM_LAUNCHER, programArgs(identityCli), { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  t.equal(cli.status, 0, cli.stderr);
  t.match(JSON.parse(cli.stdout), { node_id: nodeId, created: false }, 'node-identity opens the same remote store');
});

t.test('with a sealed key, the blob lives in the host store: a node whose local data is gone comes back the same', async (t) => {
  const dir = tempDir(t);
  const remote = await hostStoreOn(t, join(dir, 'host-db'));
  // The dev sealer's wrapping secret stands in for KMS: it outlives the enclave, as KMS does.
  const env = nodeEnv(join(dir, 'node'), remote, { NODE_STORAGE_KEY_SEALER: 'dev-insecure', NODE_DEV_SEALER_KEY_FILE: join(dir, 'dev-sealer.key') });
  const first = await start(t, main, [], env, 'identity created');
  await stop(first.child);
  rmSync(join(dir, 'node'), { recursive: true, force: true });
  const second = await start(t, main, [], env, 'identity loaded');
  t.equal(second.line.nodeId, first.line.nodeId, 'the same identity after the local data was lost');
  await stop(second.child);
});

t.test('a node whose host store goes away stops with a failure code, and comes back the same once the store does', async (t) => {
  const dir = tempDir(t);
  const { child: host, line } = await start(t, hostStore, ['--dir', join(dir, 'host-db'), '--listen', '127.0.0.1:0'], {}, 'host store listening');
  const env = nodeEnv(join(dir, 'node'), `127.0.0.1:${line.port}`);
  const node = await start(t, main, [], env, 'identity created');
  const ended = new Promise<number | null>((resolve) => node.child.once('close', (code) => resolve(code)));
  host.kill('SIGKILL');
  // 75 (EX_TEMPFAIL), not 0: a supervisor takes it for a failure and starts the node again.
  t.equal(await ended, 75, 'the node exits 75 when its store goes away');
  await start(t, hostStore, ['--dir', join(dir, 'host-db'), '--listen', `127.0.0.1:${line.port}`], {}, 'host store listening');
  const again = await start(t, main, [], env, 'identity loaded');
  t.equal(again.line.nodeId, node.line.nodeId, 'restarted, it reconnects to its store with the same identity');
  await stop(again.child);
});
