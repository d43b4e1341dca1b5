// The signer node process (node/main.ts) with a sealed storage key, as a child process with no
// coordinator to reach: with NODE_STORAGE_KEY_SEALER=dev-insecure and with kms (the KMS double, the NSM
// command stand-in), a first start makes and seals the key and creates the identity, a restart unseals
// the same key and loads the same identity, and a blob that does not unseal stops the node before it
// opens its store. Production refuses the dev sealer at boot. An emptied store is refused, never taken
// for a new node.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { STORAGE_KEY_ENCRYPTION_CONTEXT } from '../../tee/seal/kms-sealer.ts';
import { startKmsDouble } from './kms-double.ts';
import { startNsmStandIn } from './seal-nsm-stand-in.ts';

t.setTimeout(180_000);

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const ACCESS_KEY = 'AKIAIOSFODNN7EXAMPLE';

interface Started {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: () => string;
}

interface Ended {
  code: number | null;
  lines: Record<string, unknown>[];
  stderr: string;
}

/** Starts the node; resolves once it logged `until`, or rejects with what it said if it ended first. */
function start(t: Test, dir: string, env: Record<string, string>, until: string): Promise<Started> {
  const child = spawn(PROGRAM_LAUNCHER, programArgs('node/main.ts'), {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
    // A variable given as '' is left out.
    env: Object.fromEntries(Object.entries({ PATH: process.env.PATH ?? '', NODE_DATA_DIR: join(dir, 'data'), NODE_ROLLBACK_ANCHOR_FILE: join(dir, 'anchor'), NODE_COORDINATOR: '127.0.0.1:1', NODE_RECONNECT_MIN_MS: '1000', ...env }).filter(([, v]) => v !== '')),
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  let buffered = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const p of parts) {
        if (!p.trim()) continue;
        const line = JSON.parse(p) as Record<string, unknown>;
        lines.push(line);
        if (line.msg === until) resolve({ child, lines, stderr: () => stderr });
      }
    });
    child.on('close', (code) => reject(Object.assign(new Error(`node ended (${code}) before "${until}": ${stderr}`), { ended: { code, lines, stderr } satisfies Ended })));
  });
}

/** Runs the node expecting it to stop by itself. */
async function run(t: Test, dir: string, env: Record<string, string>): Promise<Ended> {
  try {
    const s = await start(t, dir, env, '\u0000never');
    s.child.kill('SIGKILL');
    throw new Error('unreachable');
  } catch (err) {
    const ended = (err as { ended?: Ended }).ended;
    if (!ended) throw err;
    return ended;
  }
}

async function stop(s: Started): Promise<void> {
  const closed = new Promise((resolve) => s.child.once('close', resolve));
  s.child.kill('SIGTERM');
  await closed;
}

const find = (lines: Record<string, unknown>[], msg: string) => lines.find((l) => l.msg === msg);

function tempDir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'seal-node-main-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

t.test('dev-insecure: made and sealed at first start, unsealed after, refused when the blob is changed', async (t) => {
  const dir = tempDir(t);
  const env = { NODE_STORAGE_KEY_SEALER: 'dev-insecure' };
  const first = await start(t, dir, env, 'identity created');
  t.ok(first.lines.some((l) => l.level === 40 && /INSECURE dev sealer/.test(String(l.msg))), 'warned that the sealer is insecure');
  t.match(find(first.lines, 'storage key made and sealed'), { sealer: 'dev-insecure', created: true });
  const nodeId = find(first.lines, 'identity created')!.nodeId;
  await stop(first);

  const second = await start(t, dir, env, 'identity loaded');
  t.match(find(second.lines, 'storage key unsealed'), { sealer: 'dev-insecure', created: false });
  t.equal(find(second.lines, 'identity loaded')!.nodeId, nodeId, 'the same identity: the same key opened the same store');
  await stop(second);

  const blobPath = join(dir, 'data', 'storage.key.sealed');
  const blob = readFileSync(blobPath);
  blob[blob.length - 3]! ^= 0x40;
  writeFileSync(blobPath, blob);
  const refused = await run(t, dir, env);
  t.equal(refused.code, 1, 'the node stops');
  t.match(refused.stderr, /storage\.key\.sealed does not unseal/);
  t.notOk(refused.lines.some((l) => /identity/.test(String(l.msg))), 'before it opens its store');
  t.same(readFileSync(blobPath), blob, 'the blob is left as it was');
});

t.test('production refuses the dev sealer at boot', async (t) => {
  const dir = tempDir(t);
  const ended = await run(t, dir, { NODE_STORAGE_KEY_SEALER: 'dev-insecure', NODE_ENVIRONMENT: 'production' });
  t.equal(ended.code, 78, 'a configuration error');
  t.match(ended.stderr, /dev-insecure is refused with NODE_ENVIRONMENT=production/);
});

t.test('kms: sealed to the enclave build, unsealed at restart, refused to another build', async (t) => {
  const authority = createDevAttestationAuthority();
  const PCR0 = new Uint8Array(48).fill(0xa0);
  const enclave = { 0: PCR0, 1: new Uint8Array(48).fill(0xa1), 2: new Uint8Array(48).fill(0xa2) };
  const nsm = await startNsmStandIn(authority, enclave);
  t.teardown(() => nsm.close());
  const kms = await startKmsDouble({
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }, attestationRoots: [authority.rootPem],
    policy: { recipientAttestation: { ImageSha384: [Buffer.from(PCR0).toString('hex')] }, encryptionContext: STORAGE_KEY_ENCRYPTION_CONTEXT },
  });
  t.teardown(() => kms.close());
  const dir = tempDir(t);
  const env = {
    // The KMS double answers plain http on loopback, which only a development machine may reach.
    NODE_KIND: 'tee', NODE_OWNER: 'org_1', NODE_DEVELOPMENT: 'true', NODE_STORAGE_KEY_SEALER: 'kms',
    NODE_KMS_REGION: kms.region, NODE_KMS_ENDPOINT: kms.endpoint, NODE_KMS_KEY_ID: kms.keyId,
    NODE_KMS_ACCESS_KEY_ID: ACCESS_KEY, NODE_KMS_SECRET_ACCESS_KEY: SECRET, NODE_TEE_ATTEST_COMMAND: nsm.command,
  };
  const first = await start(t, dir, env, 'identity created');
  t.match(find(first.lines, 'storage key made and sealed'), { sealer: 'kms', created: true });
  const nodeId = find(first.lines, 'identity created')!.nodeId;
  await stop(first);

  const second = await start(t, dir, env, 'identity loaded');
  t.match(find(second.lines, 'storage key unsealed'), { sealer: 'kms' });
  t.equal(find(second.lines, 'identity loaded')!.nodeId, nodeId);
  await stop(second);
  t.same(kms.calls.map((c) => `${c.target} ${c.status}`), ['TrentService.GenerateDataKey 200', 'TrentService.Decrypt 200', 'TrentService.Decrypt 200']);

  nsm.pcrs = { ...enclave, 0: new Uint8Array(48).fill(0xb0) };
  const refused = await run(t, dir, env);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /does not unseal: KMS Decrypt refused \(400 AccessDeniedException\)/);
  const said = JSON.stringify([first.lines, second.lines, refused.lines]) + first.stderr() + second.stderr() + refused.stderr;
  t.notOk(said.includes(SECRET), 'the secret access key is never printed');
});

t.test('an emptied store is never a new node: refused plainly beside its storage key, or behind its anchor', async (t) => {
  const dir = tempDir(t);
  // A key file (the default sealer) and no anchor (development), then the harness's anchor.
  const dev = { NODE_DEVELOPMENT: 'true', NODE_ROLLBACK_ANCHOR_FILE: '' };
  const first = await start(t, dir, dev, 'identity created');
  await stop(first);
  rmSync(join(dir, 'data', 'db'), { recursive: true, force: true });
  const emptied = await run(t, dir, dev);
  t.equal(emptied.code, 65, 'the node refuses to start (EX_DATAERR)');
  t.match(emptied.stderr, /refused to start: the store in .* is empty, but this node's storage key .*storage\.key exists/);
  t.notMatch(emptied.stderr, /\n\s+at /, 'a message, not a stack');
  t.notOk(emptied.lines.some((l) => /identity created/.test(String(l.msg))), 'no new identity');

  // With a rollback anchor: the store is behind it, and the message says it is empty.
  const anchored = tempDir(t);
  const again = await start(t, anchored, {}, 'identity created');
  await stop(again);
  rmSync(join(anchored, 'data', 'db'), { recursive: true, force: true });
  const behind = await run(t, anchored, {});
  t.equal(behind.code, 65);
  t.match(behind.stderr, /the store is empty but its rollback anchor says version \d+: its records were deleted/);

  // The operator makes it a new node on purpose: the key goes too.
  rmSync(join(dir, 'data'), { recursive: true, force: true });
  const fresh = await start(t, dir, dev, 'identity created');
  t.ok(find(fresh.lines, 'identity created'), 'a new node once the key is removed with the store');
  await stop(fresh);
});
