// Loading a node's storage key through a sealer (tee/seal/sealed-key-file.ts, node/storage/storage-key.ts)
// with the INSECURE development sealer and with KMS (the double) behind the NSM command stand-in: a first
// start makes and seals a key, the next start unseals the same one and the store opens under it; a blob
// that does not unseal stops the node and is left as it was; no key is ever made over an existing store.
// And the settings: `file` stays the default, kms needs all of its settings, production refuses the dev
// sealer and a tee node whose key is not sealed with KMS, and no message prints a credential.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ConfigError } from '../../common/config.ts';
import { createLogger } from '../../common/logger.ts';
import { loadNodeConfig } from '../../node/config.ts';
import { loadNodeStorageKey } from '../../node/storage/storage-key.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { InsecureDevSealer } from '../../tee/seal/dev-sealer.ts';
import { loadSealedStorageKey } from '../../tee/seal/sealed-key-file.ts';
import { nsmCommandAttester } from '../../tee/seal/nsm-command-attester.ts';
import { STORAGE_KEY_ENCRYPTION_CONTEXT } from '../../tee/seal/kms-sealer.ts';
import { SealError } from '../../tee/seal/seal-error.ts';
import type { StorageKeySealer } from '../../tee/seal/sealer.ts';
import { startKmsDouble } from './kms-double.ts';
import { startNsmStandIn } from './seal-nsm-stand-in.ts';

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const ACCESS_KEY = 'AKIAIOSFODNN7EXAMPLE';

function tempDir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'seal-storage-key-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function refused(t: Test, p: Promise<unknown>, code: string, pattern?: RegExp): Promise<void> {
  try {
    await p;
    t.fail('not refused');
  } catch (err) {
    t.type(err, SealError);
    t.equal((err as SealError).code, code, `code ${code}`);
    if (pattern) t.match((err as Error).message, pattern);
  }
}

/** A logger whose lines the test reads. */
function capture(): { log: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[] } {
  let text = '';
  const sink = new Writable({ write(chunk, _enc, done) { text += String(chunk); done(); } });
  return { log: createLogger('node', 'info', sink), lines: () => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function devSealer(dir: string, warnings: string[] = []): StorageKeySealer {
  return new InsecureDevSealer({ keyFile: join(dir, 'dev-sealer.key'), environment: 'sandbox', warn: (m) => warnings.push(m) });
}

t.test('dev sealer: a first start makes and seals a key, the next one unseals the same key', async (t) => {
  const dir = tempDir(t);
  const warnings: string[] = [];
  const path = join(dir, 'storage.key.sealed');
  const first = await loadSealedStorageKey({ sealer: devSealer(dir, warnings), path, storeDir: join(dir, 'db'), create: true });
  t.equal(first.created, true);
  t.equal(first.key.length, 32);
  t.equal(statSync(path).mode & 0o777, 0o600, 'the blob is 0600');
  t.equal(statSync(join(dir, 'dev-sealer.key')).mode & 0o777, 0o600, 'so is the dev wrapping secret');
  t.notOk(readFileSync(path).includes(Buffer.from(first.key)), 'the key is not in the blob in the clear');
  t.notOk(existsSync(`${path}.tmp`), 'no temporary file is left');
  mkdirSync(join(dir, 'db'));
  writeFileSync(join(dir, 'db', 'CURRENT'), 'a store now exists');
  const second = await loadSealedStorageKey({ sealer: devSealer(dir, warnings), path, storeDir: join(dir, 'db'), create: true });
  t.equal(second.created, false);
  t.same(second.key, first.key, 'the same key');
  t.ok(warnings.length >= 3 && warnings.every((w) => /INSECURE dev sealer/.test(w) && /never in production/.test(w)), 'every use says it is insecure');
  t.notOk(warnings.some((w) => w.includes(Buffer.from(first.key).toString('hex'))), 'no warning holds the key');
});

t.test('a blob that does not unseal stops the load and is left as it was; no key is made over a store', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'storage.key.sealed');
  const storeDir = join(dir, 'db');
  await loadSealedStorageKey({ sealer: devSealer(dir), path, storeDir, create: true });
  mkdirSync(storeDir);
  writeFileSync(join(storeDir, 'CURRENT'), 'a store');
  const good = readFileSync(path);

  const corrupted = Buffer.from(good);
  corrupted[corrupted.length - 1]! ^= 0x01;
  writeFileSync(path, corrupted);
  await refused(t, loadSealedStorageKey({ sealer: devSealer(dir), path, storeDir, create: true }), 'unseal_failed', /storage\.key\.sealed does not unseal/);
  t.same(readFileSync(path), corrupted, 'the blob is not replaced');

  writeFileSync(path, good.subarray(0, 10));
  await refused(t, loadSealedStorageKey({ sealer: devSealer(dir), path, storeDir, create: true }), 'bad_storage_key');

  writeFileSync(path, good);
  rmSync(join(dir, 'dev-sealer.key'));
  await refused(t, loadSealedStorageKey({ sealer: devSealer(dir), path, storeDir, create: true }), 'bad_storage_key', /key file .* does not exist/);
  t.notOk(existsSync(join(dir, 'dev-sealer.key')), 'the wrapping secret is not made anew to unseal');

  rmSync(path);
  await refused(t, loadSealedStorageKey({ sealer: devSealer(dir), path, storeDir, create: true }), 'bad_storage_key', /holds a store but there is no sealed storage key/);
  t.notOk(existsSync(path), 'no blob was made over the store');

  await refused(t, loadSealedStorageKey({ sealer: devSealer(dir), path, storeDir: join(dir, 'elsewhere'), create: false }), 'bad_storage_key', /does not exist/);
});

t.test('a sealer that seals but cannot unseal keeps nothing', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'storage.key.sealed');
  const inner = devSealer(dir);
  const broken: StorageKeySealer = { kind: 'dev-insecure', generate: () => inner.generate(), unseal: () => Promise.reject(new SealError('forbidden', 'the policy allows no Decrypt')) };
  await refused(t, loadSealedStorageKey({ sealer: broken, path, storeDir: join(dir, 'db'), create: true }), 'forbidden', /sealed but does not unseal here/);
  t.notOk(existsSync(path), 'no blob is written');
  const liar: StorageKeySealer = { kind: 'dev-insecure', generate: () => inner.generate(), unseal: async () => new Uint8Array(32) };
  await refused(t, loadSealedStorageKey({ sealer: liar, path, storeDir: join(dir, 'db'), create: true }), 'unseal_failed', /unsealed to another key/);
  t.notOk(existsSync(path));
});

t.test('the dev sealer is refused in production', async (t) => {
  t.throws(() => new InsecureDevSealer({ keyFile: '/nonexistent', environment: 'production', warn: () => {} }), { code: 'bad_config', message: /refused in production/ });
});

t.test('node settings: file by default, kms complete, production refuses the dev sealer, no credential printed', async (t) => {
  const base = { NODE_DATA_DIR: '/var/lib/node' };
  const c = loadNodeConfig(base);
  t.equal(c.storageKeySealer, 'file', 'the key file stays the default');
  t.equal(c.storageKeyFile, '/var/lib/node/storage.key');
  t.equal(c.sealedStorageKeyFile, '/var/lib/node/storage.key.sealed');
  t.equal(c.environment, 'sandbox');

  const problems = (env: Record<string, string>) => {
    try {
      loadNodeConfig({ ...base, ...env });
      return [];
    } catch (err) {
      t.type(err, ConfigError);
      return (err as ConfigError).problems;
    }
  };
  const kms = { NODE_STORAGE_KEY_SEALER: 'kms', NODE_KMS_REGION: 'eu-west-1', NODE_KMS_KEY_ID: 'alias/custody-node', NODE_KMS_ACCESS_KEY_ID: ACCESS_KEY, NODE_KMS_SECRET_ACCESS_KEY: SECRET, NODE_TEE_ATTEST_COMMAND: '/usr/local/bin/nsm-attest' };
  t.same(problems(kms), [], 'kms with all of its settings');
  const missing = problems({ NODE_STORAGE_KEY_SEALER: 'kms', NODE_KMS_SECRET_ACCESS_KEY: SECRET });
  t.match(missing.join('\n'), /NODE_STORAGE_KEY_SEALER=kms needs NODE_KMS_REGION, NODE_KMS_KEY_ID, NODE_KMS_ACCESS_KEY_ID, NODE_TEE_ATTEST_COMMAND/);
  t.match(problems({ ...kms, NODE_KMS_ENDPOINT: 'http://kms.example.com' }).join('\n'), /plain http is refused/);
  t.match(problems({ ...kms, NODE_KMS_ENDPOINT: 'http://127.0.0.1:4566' }).join('\n'), /plain http is refused/, 'plain http to loopback outside development mode');
  t.match(problems({ ...kms, NODE_KMS_ENDPOINT: 'http://127.0.0.1:4566', NODE_DEVELOPMENT: 'true', NODE_ENVIRONMENT: 'production' }).join('\n'), /NODE_DEVELOPMENT .* refused with NODE_ENVIRONMENT=production/, 'never in production');
  t.match(problems({ ...kms, NODE_KMS_ENDPOINT: 'http://kms.example.com', NODE_DEVELOPMENT: 'true' }).join('\n'), /plain http is refused/, 'off loopback even in development mode');
  t.same(problems({ ...kms, NODE_KMS_ENDPOINT: 'http://127.0.0.1:4566', NODE_DEVELOPMENT: 'true' }), [], 'a development machine\'s local KMS double');
  t.same(problems({ ...kms, NODE_KMS_ENDPOINT: 'https://kms.eu-west-1.amazonaws.com' }), [], 'https');
  t.match(problems({ ...kms, NODE_TEE_ATTEST_COMMAND: 'nsm-attest' }).join('\n'), /NODE_TEE_ATTEST_COMMAND/, 'the command is an absolute path');
  t.match(problems({ NODE_STORAGE_KEY_SEALER: 'dev-insecure', NODE_ENVIRONMENT: 'production' }).join('\n'), /dev-insecure is refused with NODE_ENVIRONMENT=production/);
  t.same(problems({ NODE_STORAGE_KEY_SEALER: 'dev-insecure' }), [], 'the dev sealer in a sandbox');
  t.match(problems({ NODE_KIND: 'tee', NODE_OWNER: 'org_1', NODE_ENVIRONMENT: 'production' }).join('\n'), /a tee node in production seals its storage key with kms; got file/);
  t.same(problems({ ...kms, NODE_KIND: 'tee', NODE_OWNER: 'org_1', NODE_ENVIRONMENT: 'production' }), [], 'a production tee node with kms');
  t.match(problems({ ...kms, NODE_KIND: 'tee', NODE_OWNER: 'org_1', NODE_ENVIRONMENT: 'production', NODE_TEE_ALLOW_DEV_ROOT: 'true' }).join('\n'), /NODE_TEE_ALLOW_DEV_ROOT .*must be false with NODE_ENVIRONMENT=production/, 'production refuses the dev attestation root');
  t.same(problems({ NODE_TEE_ALLOW_DEV_ROOT: 'true' }), [], 'the dev root in a sandbox');
  const all = [missing, problems({ ...kms, NODE_KMS_ENDPOINT: 'ftp://x', NODE_KMS_REGION: 'nowhere' })].flat().join('\n');
  t.notOk(all.includes(SECRET), 'no problem prints the secret');
});

t.test('the node loads its key through the dev sealer, and the store and identity survive a restart', async (t) => {
  const dir = tempDir(t);
  const config = loadNodeConfig({ NODE_DATA_DIR: dir, NODE_STORAGE_KEY_SEALER: 'dev-insecure' });
  const boot = async () => {
    const { log, lines } = capture();
    const key = await loadNodeStorageKey(config, log);
    const store = await SealedStore.open(join(dir, 'db'), key);
    const { identity, created } = await NodeIdentity.loadOrCreate(store);
    await store.close();
    return { nodeId: identity.nodeId, created, lines: lines(), key };
  };
  const first = await boot();
  t.equal(first.created, true);
  t.ok(first.lines.some((l) => l.msg === 'storage key made and sealed' && l.sealer === 'dev-insecure'));
  t.ok(first.lines.some((l) => l.level === 40 && /INSECURE dev sealer/.test(String(l.msg))), 'a warning at use');
  t.notOk(existsSync(join(dir, 'storage.key')), 'no key file is made');
  const second = await boot();
  t.equal(second.created, false, 'the identity is loaded');
  t.equal(second.nodeId, first.nodeId);
  t.ok(second.lines.some((l) => l.msg === 'storage key unsealed'));
  const logged = JSON.stringify([...first.lines, ...second.lines]);
  t.notOk(logged.includes(Buffer.from(first.key).toString('hex')), 'the key is never logged');
});

t.test('the node loads its key through KMS, attested by the NSM command, and survives a restart', async (t) => {
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
  const config = loadNodeConfig({
    NODE_DATA_DIR: dir, NODE_KIND: 'tee', NODE_OWNER: 'org_1', NODE_DEVELOPMENT: 'true', NODE_STORAGE_KEY_SEALER: 'kms', NODE_KMS_REGION: kms.region, NODE_KMS_ENDPOINT: kms.endpoint,
    NODE_KMS_KEY_ID: kms.keyArn, NODE_KMS_ACCESS_KEY_ID: ACCESS_KEY, NODE_KMS_SECRET_ACCESS_KEY: SECRET, NODE_TEE_ATTEST_COMMAND: nsm.command,
  });
  const { log, lines } = capture();
  const key = await loadNodeStorageKey(config, log);
  let store = await SealedStore.open(join(dir, 'db'), key);
  const { identity } = await NodeIdentity.loadOrCreate(store);
  await store.close();
  t.same(kms.calls.map((c) => [c.target, c.status]), [['TrentService.GenerateDataKey', 200], ['TrentService.Decrypt', 200]], 'generated, then unsealed once before use');
  t.equal(nsm.asked.length, 2, 'one document per request');
  t.same(nsm.asked, kms.calls.map((c) => c.recipientKey), 'each for the RSA key the request used');

  const again = await loadNodeStorageKey(config, log);
  t.same(again, key, 'a restart unseals the same key');
  store = await SealedStore.open(join(dir, 'db'), again);
  t.equal((await NodeIdentity.loadOrCreate(store)).identity.nodeId, identity.nodeId);
  await store.close();

  nsm.pcrs = { ...enclave, 0: new Uint8Array(48).fill(0xb0) };
  await refused(t, loadNodeStorageKey(config, log), 'forbidden', /does not unseal: KMS Decrypt refused \(400 AccessDeniedException\)/);
  nsm.pcrs = enclave;
  const logged = JSON.stringify(lines());
  t.notOk(logged.includes(SECRET) || logged.includes(Buffer.from(key).toString('hex')), 'neither the credentials nor the key are logged');
});

t.test('the NSM command: an absolute path, no environment, one document for the key asked', async (t) => {
  const authority = createDevAttestationAuthority();
  const nsm = await startNsmStandIn(authority, { 0: new Uint8Array(48).fill(1) });
  t.teardown(() => nsm.close());
  t.throws(() => nsmCommandAttester('nsm-attest'), { code: 'bad_config' });
  const attest = nsmCommandAttester(nsm.command);
  const spki = new Uint8Array(294).fill(7);
  // Credentials in the node's own environment do not reach the command.
  process.env.NODE_KMS_SECRET_ACCESS_KEY = SECRET;
  t.teardown(() => {
    delete process.env.NODE_KMS_SECRET_ACCESS_KEY;
  });
  t.ok((await attest(spki)).length > 0, "a document, for a command that was not handed the node's environment");
  for (const [mode, pattern] of [['other-key', /for another public key/], ['garbage', /did not print one base64 document/], ['fail', /failed \(exit 1\)/]] as const) {
    nsm.mode = mode;
    await refused(t, attest(spki), 'unavailable', pattern);
  }
  await refused(t, nsmCommandAttester('/nonexistent/nsm-attest')(spki), 'unavailable', /ENOENT/);
});
