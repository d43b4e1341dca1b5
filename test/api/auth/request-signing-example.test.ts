// The example in docs/request-signing.md runs as written against the API: its two scripts, from a
// project that depends on this package, and its curl lines; the headers it prints are accepted once.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { PROGRAM_LAUNCHER, untracked } from '../../support/program.ts';

const root = resolve(import.meta.dirname, '../../..');
const doc = readFileSync(join(root, 'docs/request-signing.md'), 'utf8');
const blocks = [...doc.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, code: m[2]! }));
/** The doc's script that starts with `// <name>: `. */
const script = (name: string) => blocks.find((b) => b.lang === 'js' && b.code.startsWith(`// ${name}: `))?.code;
const curlLines = blocks.find((b) => b.lang === 'sh' && b.code.includes('curl '))?.code;
const newPublicKey = () => bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));

function run(file: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(PROGRAM_LAUNCHER, untracked(file, args), { cwd, env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

t.test('the request-signing example signs requests the API accepts, once', async (t) => {
  const signedRequest = script('signed-request.mjs');
  const signedHeaders = script('signed-headers.mjs');
  t.ok(signedRequest && signedHeaders && curlLines, 'the doc has both scripts and the curl lines');
  if (!signedRequest || !signedHeaders || !curlLines) return;

  const dir = mkdtempSync(join(tmpdir(), 'signing-example-'));
  const store = await RecordStore.open(join(dir, 'store'));
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 10, vaultsPerOrg: 1 } });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: join(dir, 'store') }), logger: createLogger('api', 'silent'), vaults });
  t.teardown(async () => {
    await app.close();
    await store.close();
    // The project links to this checkout: removed (the links, not their targets) with the rest.
    rmSync(dir, { recursive: true, force: true });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const secret = ed25519.utils.randomSecretKey();
  const { org, key } = await vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(secret)));

  // A customer's project: this package installed under its name, the tsx loader, the scripts as printed.
  const project = join(dir, 'project');
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  symlinkSync(root, join(project, 'node_modules', 'threshold-custody'));
  symlinkSync(join(root, 'node_modules', 'tsx'), join(project, 'node_modules', 'tsx'));
  writeFileSync(join(project, 'signed-request.mjs'), signedRequest);
  writeFileSync(join(project, 'signed-headers.mjs'), signedHeaders);
  writeFileSync(join(dir, 'secret.key'), bytesToHex(secret) + '\n', { mode: 0o600 });
  const env = { CUSTODY_URL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, CUSTODY_KEY_ID: key.id, CUSTODY_SECRET_KEY_FILE: join(dir, 'secret.key') };

  const list = await run(process.execPath, ['--import', 'tsx', 'signed-request.mjs', 'GET', '/v1/api-keys'], project, env);
  t.equal(list.code, 0, `signed-request.mjs GET exits 0 ${list.stderr}`);
  t.match(list.stdout, new RegExp(`^200 .*"id":"${key.id}"`), 'a signed GET is accepted');

  const second = newPublicKey();
  const add = await run(process.execPath, ['--import', 'tsx', 'signed-request.mjs', 'POST', '/v1/api-keys', JSON.stringify({ public_key: second, label: 'ci' })], project, env);
  t.equal(add.code, 0, `signed-request.mjs POST exits 0 ${add.stderr}`);
  t.match(add.stdout, new RegExp(`^201 .*"public_key":"${second}"`), 'a signed POST, with its Content-Digest, is accepted');

  const third = newPublicKey();
  const lines = curlLines.replace('<64 hex>', third);
  const curl = await run('bash', ['--norc', '--noprofile', '-euc', lines], project, env);
  t.equal(curl.code, 0, `the curl lines exit 0 ${curl.stderr}`);
  t.match(curl.stdout, `"public_key":"${third}"`, 'the curl lines register a key with the printed headers');
  const replay = await run('bash', ['--norc', '--noprofile', '-euc', lines.split('\n').filter((l) => !l.startsWith('node ')).join('\n')], project, env);
  t.match(replay.stdout, /replayed: this nonce was already used/, 'the same headers sent again are refused');

  t.same((await vaults.listKeys(org.id)).map((k) => k.public_key).sort(), [bytesToHex(ed25519.getPublicKey(secret)), second, third].sort(), 'the two keys registered, each once');
});
