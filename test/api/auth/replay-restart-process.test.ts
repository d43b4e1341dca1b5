// The real API process: a signed vault-API request and a signed production platform request are
// accepted once; concurrent copies of a signed request against the live process make one change; the
// process is killed (SIGKILL, no shutdown) and a new one started on the same data directory refuses the
// exact requests again with 401, and nothing changed (docs/security.md, "Request signatures").
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join, resolve } from 'node:path';
import { writeFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, freePort, waitUntil, type Proc } from '../../cluster/cluster-harness.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';

const root = resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);
// Four operator commands and two API starts, each a TypeScript process: slow on a loaded machine.
t.setTimeout(300_000);

async function admin(dataDir: string, ...args: string[]): Promise<Record<string, string>> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', API_DATA_DIR: dataDir, API_OPERATOR_KEY_FILE: join(dataDir, '..', 'operator.key') };
  const { stdout } = await run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: root, env });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, string>;
}

interface Frozen { method: 'POST' | 'GET'; path: string; headers: Record<string, string>; body?: string }

t.test('SIGKILL and restart on the same data: the exact signed requests are refused, nothing changed', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  const dataDir = join(cluster.dir, 'api');
  const secret = ed25519.utils.randomSecretKey();
  const operatorFile = join(cluster.dir, 'operator.key');
  writeFileSync(operatorFile, bytesToHex(ed25519.utils.randomSecretKey()), { mode: 0o600 });
  const org = await admin(dataDir, 'org', 'create', '--name', 'Acme', '--public-key', bytesToHex(ed25519.getPublicKey(secret)));
  const creds: ApiCredentials = { keyId: org.api_key_id!, secretKey: secret };
  const tenant = await admin(dataDir, 'tenant', 'create', '--name', 'Acme');
  const liveSecret = ed25519.utils.randomSecretKey();
  const live = await admin(dataDir, 'key', 'create', '--workspace', tenant.production_workspace!, '--role', 'developer', '--public-key', bytesToHex(ed25519.getPublicKey(liveSecret)));
  t.match(live.bearer_token, /^svc_live_/);
  const liveCreds: ApiCredentials = { keyId: live.key_id!, secretKey: liveSecret };

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const start = async (): Promise<Proc> => {
    const p = cluster.spawn('api', 'api/server.ts', { API_HOST: '127.0.0.1', API_PORT: String(port), API_DATA_DIR: dataDir, API_LOG_LEVEL: 'warn' });
    await waitUntil(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true, 30_000, 'api healthz');
    return p;
  };
  const freeze = (method: 'POST' | 'GET', path: string, c: ApiCredentials, body?: unknown, bearer?: string): Frozen => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return { method, path, body: payload, headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...signedHeaders(c, method, `${base}${path}`, payload) } };
  };
  const send = async (r: Frozen) => {
    const res = await fetch(`${base}${r.path}`, { method: r.method, headers: r.headers, ...(r.body !== undefined ? { body: r.body } : {}) });
    return { status: res.status, requestId: res.headers.get('x-request-id'), json: (await res.json()) as Record<string, unknown> };
  };
  const keyCount = async () => ((await send(freeze('GET', '/v1/api-keys', creds))).json.api_keys as unknown[]).length;
  const endpointCount = async () => {
    const res = await fetch(`${base}/v1/webhook-endpoints?limit=100`, { headers: { authorization: `Bearer ${live.bearer_token}` } });
    return ((await res.json()) as { data: unknown[] }).data.length;
  };

  const api1 = await start();
  const addKey = freeze('POST', '/v1/api-keys', creds, { public_key: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())), label: 'ci' });
  const addHook = freeze('POST', '/v1/webhook-endpoints', liveCreds, { url: 'https://example.com/hook', events: ['payment.confirmed'] }, live.bearer_token);
  t.equal((await send(addKey)).status, 201, 'the key registration is accepted');
  t.equal((await send(addHook)).status, 201, 'the production webhook endpoint is created');
  // Eight concurrent copies of one more signed request, each on its own connection.
  const burst = freeze('POST', '/v1/webhook-endpoints', liveCreds, { url: 'https://example.com/burst', events: ['payment.confirmed'] }, live.bearer_token);
  const statuses = (await Promise.all(Array.from({ length: 8 }, () => send(burst)))).map((r) => r.status).sort();
  t.same(statuses, [201, 401, 401, 401, 401, 401, 401, 401], 'concurrent copies: one accepted');
  t.equal((await send(addKey)).status, 401, 'a replay to the same process is refused');
  t.equal(await keyCount(), 2);
  t.equal(await endpointCount(), 2);

  const exit = await api1.kill('SIGKILL');
  t.equal(exit.signal, 'SIGKILL', 'killed, not stopped: nothing depends on a clean shutdown');
  await start();
  const keyReplay = await send(addKey);
  t.equal(keyReplay.status, 401, 'vault API: the exact request after the restart');
  t.same(keyReplay.json, { error: 'request signature refused: replayed: this nonce was already used', code: 'unauthorized', request_id: keyReplay.requestId });
  const hookReplay = await send(addHook);
  t.equal(hookReplay.status, 401, 'platform API: the exact request after the restart');
  t.equal(hookReplay.json.code, 'signature_required');
  t.match(hookReplay.json.error, /replayed/);
  t.equal((await send(burst)).status, 401, 'the burst request too');
  t.equal(await keyCount(), 2, 'still the bootstrap key and one registered key');
  t.equal(await endpointCount(), 2, 'still two webhook endpoints');
});
