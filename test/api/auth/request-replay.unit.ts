// Request signatures through the whole app on a real LevelDB store (docs/security.md, "Request
// signatures"): accepted at most once, across a new app on the same store and under concurrent copies;
// never after `expires`, whatever the clock skew; both for the vault API and for production changes
// of the platform API. test/api/auth/replay-restart-process.test.ts restarts the real process.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';

const HOST = 'api.test';
const nowS = () => Math.floor(Date.now() / 1000);

/** The vault and platform APIs on the store in `dir`, with an injectable clock (Unix seconds). */
async function open(t: Test, dir: string, clock: { now?: number } = {}) {
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 50, vaultsPerOrg: 50 } });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, platform,
    now: () => clock.now ?? nowS(),
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
    await store.close();
  };
  t.teardown(close);
  return { store, vaults, platform, app, close };
}

/** An organization with its first key, and a production workspace key with a signing key. */
async function principals(s: Awaited<ReturnType<typeof open>>) {
  const secret = ed25519.utils.randomSecretKey();
  const { org, key } = await s.vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(secret)));
  const creds: ApiCredentials = { keyId: key.id, secretKey: secret };
  const { production } = await s.platform.tenancy.createTenant('Acme');
  const liveSecret = ed25519.utils.randomSecretKey();
  const live = await s.platform.tenancy.createKey(production.id, 'developer', { signingPublicKey: bytesToHex(ed25519.getPublicKey(liveSecret)) });
  return { org: org.id, creds, live: { token: live.token, creds: { keyId: live.key.id, secretKey: liveSecret } } };
}

const count = async (store: RecordStore, collection: string) => {
  let n = 0;
  for await (const _ of store.all(collection)) n++;
  return n;
};

/** One signed request, frozen: the exact headers and body a replay sends again. */
function vaultRequest(creds: ApiCredentials, path: string, body: unknown, created?: number) {
  const payload = JSON.stringify(body);
  return { method: 'POST' as const, url: path, payload, headers: { host: HOST, ...signedHeaders(creds, 'POST', `http://${HOST}${path}`, payload, created) } };
}
function platformRequest(live: { token: string; creds: ApiCredentials }, path: string, body: unknown, created?: number) {
  const payload = JSON.stringify(body);
  return { method: 'POST' as const, url: path, payload, headers: { host: HOST, authorization: `Bearer ${live.token}`, ...signedHeaders(live.creds, 'POST', `http://${HOST}${path}`, payload, created) } };
}
const hook = { url: 'https://example.com/hook', events: ['payment.confirmed'] };

t.test('a new app on the same store refuses a replay of a request the old one accepted', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'replay-'));
  const first = await open(t, dir);
  const who = await principals(first);
  const addKey = vaultRequest(who.creds, '/v1/api-keys', { public_key: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) });
  const addHook = platformRequest(who.live, '/v1/webhook-endpoints', hook);
  t.equal((await first.app.inject(addKey)).statusCode, 201, 'the key registration is accepted');
  t.equal((await first.app.inject(addHook)).statusCode, 201, 'the production webhook endpoint is created');
  await first.close();

  const second = await open(t, dir);
  const keyReplay = await second.app.inject(addKey);
  t.equal(keyReplay.statusCode, 401, 'vault API replay after the restart');
  t.same(keyReplay.json(), { error: 'request signature refused: replayed: this nonce was already used', code: 'unauthorized', request_id: keyReplay.headers['x-request-id'] });
  const hookReplay = await second.app.inject(addHook);
  t.equal(hookReplay.statusCode, 401, 'platform API replay after the restart');
  t.equal(hookReplay.json().code, 'signature_required');
  t.match(hookReplay.json().error, /replayed/);
  t.equal((await second.vaults.listKeys(who.org)).length, 2, 'one key registered, not two');
  t.equal(await count(second.store, 'webhook_endpoints'), 1, 'one webhook endpoint, not two');
  t.equal(await count(second.store, 'trust_log'), 1, 'one trust entry: the registration, once');
});

t.test('never after expires: 1 s late is refused, whatever the skew; created ahead keeps its allowance', async (t) => {
  const clock: { now?: number } = {};
  const s = await open(t, mkdtempSync(join(tmpdir(), 'replay-')), clock);
  const who = await principals(s);
  const T = nowS();
  // signedHeaders signs created = T, expires = T + 60.
  const late = [vaultRequest(who.creds, '/v1/vaults', { tier: 'hosted' }, T), platformRequest(who.live, '/v1/webhook-endpoints', hook, T)];
  clock.now = T + 61;
  const [v, p] = [await s.app.inject(late[0]!), await s.app.inject(late[1]!)];
  t.equal(v.statusCode, 401, 'vault API, 1 s after expires');
  t.match(v.json(), { code: 'unauthorized', error: /signature expired/ });
  t.equal(p.statusCode, 401, 'platform API, 1 s after expires');
  t.match(p.json(), { code: 'signature_required', error: /signature expired/ });
  t.equal(await count(s.store, 'vaults'), 0);
  t.equal(await count(s.store, 'webhook_endpoints'), 0);
  t.equal(await count(s.store, 'request_nonces'), 0, 'a refused signature claims no nonce');

  clock.now = T + 60;
  t.equal((await s.app.inject(vaultRequest(who.creds, '/v1/vaults', { tier: 'hosted' }, T))).statusCode, 202, 'at expires it is still accepted');
  t.equal((await s.app.inject(platformRequest(who.live, '/v1/webhook-endpoints', hook, T))).statusCode, 201);
  clock.now = T - 30;
  t.equal((await s.app.inject(vaultRequest(who.creds, '/v1/vaults', { tier: 'hosted' }, T))).statusCode, 202, 'created 30 s ahead of the clock: accepted');
  clock.now = T - 31;
  const ahead = await s.app.inject(vaultRequest(who.creds, '/v1/vaults', { tier: 'hosted' }, T));
  t.equal(ahead.statusCode, 401, 'created 31 s ahead: refused');
  t.match(ahead.json().error, /in the future/);
});

t.test('concurrent copies of one signed request: exactly one is accepted', async (t) => {
  const s = await open(t, mkdtempSync(join(tmpdir(), 'replay-')));
  const who = await principals(s);
  const vault = vaultRequest(who.creds, '/v1/vaults', { tier: 'hosted' });
  const endpoint = platformRequest(who.live, '/v1/webhook-endpoints', hook);
  const [vaultRes, hookRes] = await Promise.all([
    Promise.all(Array.from({ length: 8 }, () => s.app.inject(vault))),
    Promise.all(Array.from({ length: 8 }, () => s.app.inject(endpoint))),
  ]);
  t.same(vaultRes.map((r) => r.statusCode).sort(), [202, 401, 401, 401, 401, 401, 401, 401], 'vault API: one 202, seven 401');
  t.same(hookRes.map((r) => r.statusCode).sort(), [201, 401, 401, 401, 401, 401, 401, 401], 'platform API: one 201, seven 401');
  t.ok(vaultRes.filter((r) => r.statusCode === 401).every((r) => /replayed/.test(r.json().error)), 'the others are refused as replays');
  t.equal(await count(s.store, 'vaults'), 1);
  t.equal(await count(s.store, 'webhook_endpoints'), 1);
});
