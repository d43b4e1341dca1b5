// `npm run node-identity` (node/identity-cli.ts) as a child process: --help and -h print the usage and
// exit 0 without creating anything (not even the default ./data/node), any other argument is a usage
// error (exit 2) that touches nothing either, and without arguments it creates the identity once and
// prints the same one after.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';
import { hexToBytes } from '@noble/hashes/utils.js';
import { nodeIdFor } from '../../core/trust/node-id.ts';

t.setTimeout(120_000);


interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}
function identityCli(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROGRAM_LAUNCHER, [...programArgs('node/identity-cli.ts'), ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function emptyDir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'node-identity-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

t.test('--help and -h print the usage and exit 0, creating nothing', async (t) => {
  for (const flag of ['--help', '-h']) {
    const cwd = emptyDir(t);
    const r = await identityCli(cwd, [flag]);
    t.equal(r.code, 0, `${flag}: ${r.stderr}`);
    t.match(r.stdout, /^usage: npm run node-identity/, flag);
    t.equal(r.stderr, '', `${flag}: nothing on stderr`);
    t.same(readdirSync(cwd), [], `${flag}: no data directory, store or storage key`);
  }
});

t.test('--help answers before the settings are read', async (t) => {
  const cwd = emptyDir(t);
  const r = await identityCli(cwd, ['--help'], { NODE_KIND: 'bogus' });
  t.equal(r.code, 0, r.stderr);
  t.same(readdirSync(cwd), []);
});

t.test('an unknown flag or an argument exits 2 with the usage on stderr, creating nothing', async (t) => {
  for (const args of [['--bogus'], ['--help', '--bogus'], ['show'], ['--data-dir', 'x']]) {
    const cwd = emptyDir(t);
    const r = await identityCli(cwd, args);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, /^node-identity: .*\nusage: npm run node-identity/, args.join(' '));
    t.equal(r.stdout, '', `${args.join(' ')}: nothing on stdout`);
    t.same(readdirSync(cwd), [], `${args.join(' ')}: nothing created`);
  }
});

t.test('without arguments it creates the identity once, then prints the same one', async (t) => {
  const cwd = emptyDir(t);
  const env = { NODE_KIND: 'self', NODE_OWNER: 'org_test' };
  const first = await identityCli(cwd, [], env);
  t.equal(first.code, 0, first.stderr);
  const created = JSON.parse(first.stdout) as { node_id: string; signing_key: string; encryption_key: string; kind: string; created: boolean };
  t.match(created, { node_id: /^n[0-9a-f]{20}$/, signing_key: /^[0-9a-f]{64}$/, encryption_key: /^[0-9a-f]{64}$/, kind: 'self', created: true });
  t.equal(created.node_id, nodeIdFor(hexToBytes(created.signing_key)), 'the id is derived from the signing key');
  t.ok(existsSync(join(cwd, 'data', 'node', 'storage.key')), 'the default data directory, with its storage key');
  const again = await identityCli(cwd, [], env);
  t.equal(again.code, 0, again.stderr);
  t.same(JSON.parse(again.stdout), { ...created, created: false });
});

t.test('a bad setting exits 78', async (t) => {
  const cwd = emptyDir(t);
  const r = await identityCli(cwd, [], { NODE_KIND: 'self' });
  t.equal(r.code, 78);
  t.match(r.stderr, /NODE_OWNER/);
  t.same(readdirSync(cwd), []);
});

t.test('with a sealed storage key it opens the store as the node does, making no key file', async (t) => {
  const cwd = emptyDir(t);
  const env = { NODE_DATA_DIR: join(cwd, 'data'), NODE_STORAGE_KEY_SEALER: 'dev-insecure', NODE_DEV_SEALER_KEY_FILE: join(cwd, 'dev-sealer.key') };
  const first = await identityCli(cwd, [], env);
  t.equal(first.code, 0, first.stderr);
  const second = await identityCli(cwd, [], env);
  t.equal(second.code, 0, second.stderr);
  const [a, b] = [JSON.parse(first.stdout), JSON.parse(second.stdout)];
  t.equal(a.created, true);
  t.equal(b.created, false);
  t.equal(b.node_id, a.node_id, 'the same identity, from the same sealed key');
  t.ok(existsSync(join(cwd, 'data', 'storage.key.sealed')), 'the key is kept sealed');
  t.notOk(existsSync(join(cwd, 'data', 'storage.key')), 'no unsealed key file');
  t.match(second.stderr, /storage key unsealed/, 'logs go to stderr, stdout holds only the identity');
});
