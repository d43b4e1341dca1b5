// POST /v1/vaults/{id}/retry and DELETE /v1/vaults/{id} (docs/vault-api.md "Vault states"): a failed
// vault generates its key afresh or goes; a vault with a key is never deleted and never retried; both
// are signed requests, scoped to the organization, with their events, and documented in OpenAPI.
import t from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { vaultApp } from './vault-app.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';
import type { JobRecord, VaultRecord } from '../../../api/vaults/records.ts';
import type { RecordRepository } from '../../../api/store/record-repository.ts';
import { CustodyApiError, CustodyClient } from '../../../api/sdk/client.ts';

type App = Awaited<ReturnType<typeof vaultApp>>;

/** Any method, signed as the SDK signs (vault-app's `call` takes GET, POST and PUT). */
function send(a: App, method: 'POST' | 'DELETE', path: string, creds: ApiCredentials = a.creds) {
  return a.app.inject({ method, url: path, headers: { host: 'api.test', ...signedHeaders(creds, method, `http://api.test${path}`) } });
}

/** A vault as VaultJobs leaves one whose key generation failed for good: `failed`, its problem, no job. */
async function failedVault(a: App, name: string): Promise<VaultRecord> {
  const created = (await a.call('POST', '/v1/vaults', { tier: 'hosted', name })).json() as { id: string };
  const v = await a.vaults.vault(a.org.id, created.id);
  const jobs = await jobsOf(a.store, v.id);
  await a.store.batch([
    a.vaults.vaultOp({ ...v, state: 'failed', problem: 'not_enough_nodes: hosted keys need 3 service nodes; 1 attached' }),
    ...jobs.map((j) => ({ type: 'del' as const, collection: 'jobs', id: j.id })),
  ]);
  return a.vaults.vault(a.org.id, v.id);
}

async function jobsOf(store: RecordRepository, vaultId: string): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  for await (const j of store.all<JobRecord>('jobs')) if (j.vault_id === vaultId) out.push(j);
  return out;
}

async function eventsOf(store: RecordRepository, id: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const out: { type: string; data: Record<string, unknown>; resource_id: string }[] = [];
  for await (const e of store.all<{ type: string; data: Record<string, unknown>; resource_id: string }>('outbox')) if (e.resource_id === id) out.push(e);
  return out;
}

t.test('retry: failed -> creating with one fresh job; again while creating changes nothing; other states 409', async (t) => {
  const a = await vaultApp(t);
  const v = await failedVault(a, 'cold');
  t.equal(v.state, 'failed');

  const first = await send(a, 'POST', `/v1/vaults/${v.id}/retry`);
  t.equal(first.statusCode, 202, 'a failed vault is retried');
  t.match(first.json(), { id: v.id, state: 'creating', problem: null, public_key: null, xpub: null });
  const jobs = await jobsOf(a.store, v.id);
  t.equal(jobs.length, 1, 'one key generation is queued');
  t.match(jobs[0], { kind: 'create_key', attempts: 0, next_at: 0 }, 'with a full set of attempts');
  t.equal((await a.vaults.vault(a.org.id, v.id)).creation_request, v.creation_request, 'the customer\'s signed creation request goes with it again');

  const again = await send(a, 'POST', `/v1/vaults/${v.id}/retry`);
  t.equal(again.statusCode, 202, 'a second retry is answered as the first');
  t.equal(again.json().state, 'creating');
  t.equal((await jobsOf(a.store, v.id)).length, 1, 'and queues nothing more');
  const events = await eventsOf(a.store, v.id);
  t.same(events.filter((e) => e.type === 'vault.retried').map((e) => e.data), [{ vault_id: v.id, state: 'creating', previous_problem: v.problem }], 'one vault.retried event');

  // Concurrent retries of one failed vault queue one generation.
  const w = await failedVault(a, 'warm');
  const answers = await Promise.all([1, 2, 3].map(() => send(a, 'POST', `/v1/vaults/${w.id}/retry`)));
  t.same(answers.map((r) => r.statusCode), [202, 202, 202]);
  t.equal((await jobsOf(a.store, w.id)).length, 1, 'three concurrent retries, one job');

  // A vault with a key: nothing to retry.
  const active = { ...(await failedVault(a, 'hot')), state: 'active' as const, public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: 'ab'.repeat(32), problem: null };
  await a.store.batch([a.vaults.vaultOp(active)]);
  for (const state of ['active', 'resharing', 'reshare_pending', 'frozen'] as const) {
    await a.store.batch([a.vaults.vaultOp({ ...active, state })]);
    const res = await send(a, 'POST', `/v1/vaults/${active.id}/retry`);
    t.equal(res.statusCode, 409, `${state}: not retried`);
    t.match(res.json(), { code: 'conflict', error: new RegExp(`the vault is ${state}; only a failed vault can be retried`) });
  }
  t.equal((await jobsOf(a.store, active.id)).length, 0, 'and nothing was queued for it');
});

t.test('delete: a failed vault, or a creating one between attempts, goes with its job; a vault with a key stays (409)', async (t) => {
  const a = await vaultApp(t, { limits: { apiKeysPerOrg: 3, vaultsPerOrg: 2 } });
  const v = await failedVault(a, 'doomed');
  const gone = await send(a, 'DELETE', `/v1/vaults/${v.id}`);
  t.equal(gone.statusCode, 204);
  t.equal(gone.body, '', 'no body');
  t.equal((await a.call('GET', `/v1/vaults/${v.id}`)).statusCode, 404, 'the vault is gone');
  t.same((await a.call('GET', '/v1/vaults')).json().data, [], 'and no longer listed');
  t.same((await eventsOf(a.store, v.id)).map((e) => e.type), ['vault.created', 'vault.deleted'], 'vault.deleted is in the outbox');
  t.equal((await send(a, 'DELETE', `/v1/vaults/${v.id}`)).statusCode, 404, 'deleting it again: 404');
  t.equal((await send(a, 'POST', `/v1/vaults/${v.id}/retry`)).statusCode, 404, 'retrying it: 404');

  // A vault still creating (its job waiting for its next attempt) has no key either: it goes with its job.
  const creating = (await a.call('POST', '/v1/vaults', { tier: 'hosted' })).json() as { id: string };
  t.equal((await jobsOf(a.store, creating.id)).length, 1);
  t.equal((await send(a, 'DELETE', `/v1/vaults/${creating.id}`)).statusCode, 204, 'a creating vault is deleted');
  t.equal((await jobsOf(a.store, creating.id)).length, 0, 'its key job is dropped with it');

  // Deleting frees the vault quota (2 here): two more can be created.
  for (const n of ['x', 'y']) t.equal((await a.call('POST', '/v1/vaults', { tier: 'hosted', name: n })).statusCode, 202, `vault ${n} fits the quota`);
  t.equal((await a.call('POST', '/v1/vaults', { tier: 'hosted', name: 'z' })).statusCode, 429, 'the quota still holds');

  // A key generation running now (its job holds the vault) keeps the vault until it settles.
  const running = (await a.call('GET', '/v1/vaults')).json().data[0] as { id: string };
  const held = await a.vaults.withVault(running.id, async () => {
    const busy = await send(a, 'DELETE', `/v1/vaults/${running.id}`);
    t.equal(busy.statusCode, 409, 'no deletion under a running key generation');
    t.match(busy.json(), { code: 'conflict', error: /key generation is running now/ });
    t.same(await a.vaults.withVault(running.id, async () => 'second'), { ran: false }, 'one holder at a time');
  });
  t.ok(held.ran, 'a key job takes the vault');
  t.equal((await a.call('GET', `/v1/vaults/${running.id}`)).statusCode, 200, 'the vault is still there');

  // A vault with a key is never deleted, in any state.
  const keyed = await a.vaults.vault(a.org.id, running.id);
  for (const state of ['active', 'resharing', 'reshare_pending', 'frozen'] as const) {
    await a.store.batch([a.vaults.vaultOp({ ...keyed, state, public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: '01'.repeat(32) })]);
    const res = await send(a, 'DELETE', `/v1/vaults/${keyed.id}`);
    t.equal(res.statusCode, 409, `${state}: not deleted`);
    t.match(res.json(), { code: 'conflict', error: /has a key; a vault with a key is never deleted/ });
  }
  t.equal((await a.call('GET', `/v1/vaults/${keyed.id}`)).statusCode, 200, 'it is still there');
});

t.test('retry and delete are signed requests of the organization', async (t) => {
  const a = await vaultApp(t);
  const v = await failedVault(a, 'mine');
  for (const [method, path] of [['POST', `/v1/vaults/${v.id}/retry`], ['DELETE', `/v1/vaults/${v.id}`]] as const) {
    const unsigned = await a.app.inject({ method, url: path, headers: { host: 'api.test' } });
    t.equal(unsigned.statusCode, 401, `${method} ${path} unsigned: 401`);
    t.equal(unsigned.json().code, 'unauthorized');
  }
  // Another organization sees no such vault.
  const secret = ed25519.utils.randomSecretKey();
  const other = await a.vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(secret)));
  const theirs: ApiCredentials = { keyId: other.key.id, secretKey: secret };
  t.equal((await send(a, 'POST', `/v1/vaults/${v.id}/retry`, theirs)).statusCode, 404, 'another organization cannot retry it');
  t.equal((await send(a, 'DELETE', `/v1/vaults/${v.id}`, theirs)).statusCode, 404, 'nor delete it');
  await a.vaults.withVault(v.id, async () => {
    t.equal((await send(a, 'DELETE', `/v1/vaults/${v.id}`, theirs)).statusCode, 404, 'nor learn that its key generation is running');
  });
  t.equal((await a.vaults.vault(a.org.id, v.id)).state, 'failed', 'the vault is untouched');

  const doc = (await a.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const [path, method] of [['/v1/vaults/{vaultId}/retry', 'post'], ['/v1/vaults/{vaultId}', 'delete']] as const) {
    const op = doc.paths[path]?.[method];
    t.ok(typeof op?.summary === 'string' && op.summary.length > 10, `${method} ${path} has a summary`);
    const declared = new Set(((doc.tags ?? []) as { name: string }[]).map((x) => x.name));
    t.ok(Array.isArray(op?.tags) && op.tags.length > 0 && (!declared.size || op.tags.every((x: string) => declared.has(x))), `${method} ${path} is tagged (${JSON.stringify(op?.tags)})`);
    t.same(op?.security, [{ httpSignature: [] }], `${method} ${path} names its request signature`);
    t.ok(op?.responses?.['409'], `${method} ${path} documents its 409`);
  }
});

t.test('the SDK: retryVault and deleteVault, with the API\'s codes on refusal', async (t) => {
  const a = await vaultApp(t);
  // The SDK's own request path, answered by the app in process.
  const viaApp: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const res = await a.app.inject({ method: init!.method as 'POST', url: url.pathname + url.search, headers: { ...(init!.headers as Record<string, string>), host: url.host }, ...(init!.body ? { payload: String(init!.body) } : {}) });
    return new Response(res.statusCode === 204 ? null : res.body, { status: res.statusCode, headers: { 'content-type': String(res.headers['content-type'] ?? 'application/json') } });
  };
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey, fetch: viaApp });
  const v = await failedVault(a, 'sdk');
  t.match(await client.retryVault(v.id), { id: v.id, state: 'creating' }, 'retryVault: back in creating');
  await client.deleteVault(v.id);
  await t.rejects(client.getVault(v.id), { constructor: CustodyApiError, status: 404, code: 'not_found' }, 'deleteVault: gone');
  await t.rejects(client.deleteVault(v.id), { status: 404, code: 'not_found' }, 'a second delete: 404');
});
