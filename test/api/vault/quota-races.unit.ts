// Quotas under concurrency (docs/security.md): concurrent signed requests that each fit under a quota
// alone, but not all together, make exactly as many records as the quota has room for; the rest get
// 429 rate_limited. The same for the last-active-key rule of revocation. Each through the whole app.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import type { ApiKeyRecord, VaultRecord } from '../../../api/vaults/records.ts';
import type { RecordRepository } from '../../../api/store/record-repository.ts';

const newPub = () => bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
const all = async <T>(store: RecordRepository, collection: string) => {
  const out: T[] = [];
  for await (const v of store.all<T>(collection)) out.push(v);
  return out;
};

t.test('8 concurrent vault creations at a quota of 4: four 202, four 429, four vaults', async (t) => {
  const { call, store } = await vaultApp(t, { limits: { apiKeysPerOrg: 10, vaultsPerOrg: 4 } });
  const res = await Promise.all(Array.from({ length: 8 }, (_, i) => call('POST', '/v1/vaults', { tier: 'hosted', name: `v${i}` })));
  t.same(res.map((r) => r.statusCode).sort(), [202, 202, 202, 202, 429, 429, 429, 429]);
  for (const r of res.filter((x) => x.statusCode === 429)) t.same(r.json(), { error: 'vault quota reached (4)', code: 'rate_limited', request_id: r.headers['x-request-id'] });
  t.equal((await all<VaultRecord>(store, 'vaults')).length, 4, 'the store holds 4 vaults');
  t.equal((await all(store, 'jobs')).length, 4, 'and 4 key-generation jobs');
  t.equal((await call('POST', '/v1/vaults', { tier: 'hosted' })).statusCode, 429, 'and the quota stays full');
});

t.test('8 concurrent API key registrations with room for 4: four 201, four 429, and the trust log has the four', async (t) => {
  // A quota of 5 active keys, one of them the organization's first key.
  const { call, store, vaults, org } = await vaultApp(t, { limits: { apiKeysPerOrg: 5, vaultsPerOrg: 10 } });
  const res = await Promise.all(Array.from({ length: 8 }, () => call('POST', '/v1/api-keys', { public_key: newPub() })));
  t.same(res.map((r) => r.statusCode).sort(), [201, 201, 201, 201, 429, 429, 429, 429]);
  for (const r of res.filter((x) => x.statusCode === 429)) t.same(r.json(), { error: 'API key quota reached (5 active keys)', code: 'rate_limited', request_id: r.headers['x-request-id'] });
  const keys = await all<ApiKeyRecord>(store, 'api_keys');
  t.equal(keys.length, 5, 'the store holds 5 keys: the first and the 4 registered');
  const accepted = new Set(res.filter((r) => r.statusCode === 201).map((r) => r.json().id as string));
  t.same(new Set(keys.map((k) => k.id).filter((id) => accepted.has(id))), accepted, 'exactly the accepted ones');
  t.equal((await vaults.trustLog(org.id)).length, 4, 'one trust entry per accepted registration, none for a refused one');
});

t.test('the same public key registered 4 times at once: one 201, three 400', async (t) => {
  const { call, store } = await vaultApp(t, { limits: { apiKeysPerOrg: 10, vaultsPerOrg: 10 } });
  const pub = newPub();
  const res = await Promise.all(Array.from({ length: 4 }, () => call('POST', '/v1/api-keys', { public_key: pub })));
  t.same(res.map((r) => r.statusCode).sort(), [201, 400, 400, 400]);
  t.equal((await all(store, 'api_keys')).length, 2);
});

t.test('two concurrent revocations of the last two active keys: one 200, one 409, one key left', async (t) => {
  const { call, store, creds } = await vaultApp(t, { limits: { apiKeysPerOrg: 10, vaultsPerOrg: 10 } });
  const secret = ed25519.utils.randomSecretKey();
  const second = await call('POST', '/v1/api-keys', { public_key: bytesToHex(ed25519.getPublicKey(secret)) });
  t.equal(second.statusCode, 201);
  const secondCreds = { keyId: second.json().id as string, secretKey: secret };
  // Each key revokes the other.
  const res = await Promise.all([
    call('POST', `/v1/api-keys/${secondCreds.keyId}/revoke`, undefined, creds),
    call('POST', `/v1/api-keys/${creds.keyId}/revoke`, undefined, secondCreds),
  ]);
  t.same(res.map((r) => r.statusCode).sort(), [200, 409]);
  t.equal((await all<ApiKeyRecord>(store, 'api_keys')).filter((k) => !k.revoked).length, 1, 'an organization never loses its last active key');
});
