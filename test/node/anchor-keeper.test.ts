// Anchor keepers as processes (npm run anchor-keeper), over HTTP on loopback, and a node's sealed store
// in this process with a KeeperRollbackAnchor (docs/storage.md "Anchor keepers"): the store written
// several versions and its directory restored from an older copy is refused; one keeper of three down
// still opens, two down refuses (a node process too, exit 75, naming them); a keeper's records restored
// from an older copy are outvoted; a restarted keeper keeps its records.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fromHex } from '../../common/bytes.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { KeeperRollbackAnchor, type AnchorKeeperEndpoint } from '../../node/storage/keeper-rollback-anchor.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

t.setTimeout(120_000);

const keeperMain = 'node/anchor-keeper/main.ts';
const enc = new TextEncoder();

interface Running {
  child: ChildProcess;
  port: number;
  publicKey: string;
}

/** Starts a keeper on `dataDir` (port 0: a free one); resolves once it listens. */
function startKeeper(t: Test, dataDir: string, port = 0): Promise<Running> {
  const child = spawn(PROGRAM_LAUNCHER, [...programArgs(keeperMain), '--data', dataDir, '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let said = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      said += d.toString();
      for (const l of said.split('\n')) {
        if (!l.startsWith('{')) continue;
        const line = JSON.parse(l) as { msg: string; port: number; publicKey: string };
        if (line.msg === 'anchor keeper listening') resolve({ child, port: line.port, publicKey: line.publicKey });
      }
    });
    child.on('close', (code) => reject(new Error(`the keeper ended (${code}) before it listened: ${said}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise((resolve) => child.once('close', resolve));
  child.kill('SIGTERM');
  await closed;
}

t.test('keepers as processes guard a sealed store against a restored directory, and fail closed without a quorum', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'anchor-keeper-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kdirs = [1, 2, 3].map((i) => join(dir, `keeper-${i}`));
  const running = await Promise.all(kdirs.map((d) => startKeeper(t, d)));
  t.equal(statSync(join(kdirs[0]!, 'keeper.key')).mode & 0o777, 0o600, 'the keeper key file is 0600');
  const endpoints: AnchorKeeperEndpoint[] = running.map((r) => ({ url: `http://127.0.0.1:${r.port}`, publicKey: fromHex(r.publicKey) }));
  const storageKey = new Uint8Array(randomBytes(32));
  const anchor = (eps = endpoints) => new KeeperRollbackAnchor({ keepers: eps, storageKey, timeoutMs: 2000 });
  const db = join(dir, 'node-db');
  const open = (d = db) => SealedStore.open(d, storageKey, { anchor: anchor(), requireVouched: true });

  // Several versions, a copy taken midway (with the node stopped, as a host would), more after it.
  let store = await open();
  for (let i = 0; i < 3; i++) await store.put(`r/${i}`, enc.encode(String(i)));
  const oldVersion = store.version;
  await store.close();
  cpSync(db, join(dir, 'node-db-old'), { recursive: true });

  // A restart of a keeper keeps its records: keeper-1, stopped and started on its directory, answers
  // the version it held. Its records are copied while it is stopped, for later.
  await stop(running[0]!.child);
  cpSync(join(kdirs[0]!, 'db'), join(dir, 'keeper-1-db-old'), { recursive: true });
  running[0] = await startKeeper(t, kdirs[0]!, running[0]!.port);
  t.equal(await anchor([endpoints[0]!]).read(), oldVersion, 'a restarted keeper answers what it held before');

  store = await open();
  for (let i = 3; i < 6; i++) await store.put(`r/${i}`, enc.encode(String(i)));
  const newVersion = store.version;
  await store.close();
  t.ok(newVersion > oldVersion);

  await t.rejects(open(join(dir, 'node-db-old')), { code: 'rolled_back', message: new RegExp(`at version ${oldVersion} but its rollback anchor says ${newVersion}`) }, 'the directory restored from the older copy is refused');

  // keeper-1's records rolled back to the older copy: it answers a genuine older statement, outvoted.
  await stop(running[0]!.child);
  rmSync(join(kdirs[0]!, 'db'), { recursive: true, force: true });
  cpSync(join(dir, 'keeper-1-db-old'), join(kdirs[0]!, 'db'), { recursive: true });
  running[0] = await startKeeper(t, kdirs[0]!, running[0]!.port);
  t.equal(await anchor([endpoints[0]!]).read(), oldVersion, 'the tampered keeper now holds the older version');
  await t.rejects(open(join(dir, 'node-db-old')), { code: 'rolled_back' }, 'the older copy is still refused: the other keepers outvote it');

  // One keeper of three down: the newest store opens and writes.
  await stop(running[2]!.child);
  store = await open();
  t.equal(store.version, newVersion, 'opens with keeper-3 down');
  await store.put('r/after', enc.encode('x'));
  await store.close();
  await t.rejects(open(join(dir, 'node-db-old')), { code: 'rolled_back' }, 'and the older copy stays refused');

  // Two down: refused, never taken for an empty anchor.
  await stop(running[1]!.child);
  const err = await open().then(async (s) => (await s.close(), undefined), (e: unknown) => e as Error & { code: string });
  t.equal(err?.code, 'anchor_unavailable', 'two keepers of three down: the store does not open');
  t.match(err?.message, new RegExp(`1 of 3 rollback anchor keepers gave a valid answer and 2 are needed: http://127\\.0\\.0\\.1:${running[1]!.port}: unreachable.*; http://127\\.0\\.0\\.1:${running[2]!.port}: unreachable`));

  // The node process refuses to start the same way, and exits 75 for its supervisor to try again.
  const node = spawn(PROGRAM_LAUNCHER, programArgs('node/main.ts'), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '', NODE_DATA_DIR: join(dir, 'node-process'), NODE_DEVELOPMENT: 'true', NODE_COORDINATOR: '127.0.0.1:1',
      NODE_ROLLBACK_ANCHOR_KEEPERS: endpoints.map((e) => e.url).join(','), NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: running.map((r) => r.publicKey).join(','),
      NODE_ROLLBACK_ANCHOR_KEEPER_TIMEOUT_MS: '2000',
    },
  });
  t.teardown(() => {
    if (node.exitCode === null && node.signalCode === null) node.kill('SIGKILL');
  });
  let out = '';
  node.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  node.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => node.once('close', resolve));
  t.equal(code, 75, 'exit 75 (EX_TEMPFAIL)');
  t.match(out, /node: refused to start: the rollback anchor: 1 of 3 rollback anchor keepers gave a valid answer and 2 are needed/);
  t.match(out, new RegExp(`127\\.0\\.0\\.1:${running[2]!.port}: unreachable`), 'naming the keepers that did not answer');
  t.match(out, /rollback anchor kept by anchor keepers/, 'the start says how its anchor is kept');

  await stop(running[0]!.child);
});
