// API keys: valid Ed25519 public keys only (docs/security.md). Every place a key is registered refuses
// the small-order points (canonical and not), off-curve and non-canonical encodings and mixed-order
// points with 400 invalid_request, before any quota is looked at, and changes nothing: POST /api-keys,
// the operator's organization command, PUT /config/end-user-auth (OKP Ed25519 JWKs), POST /vaults'
// customer node, workspace signing keys and the service-node roster. A valid key still works.
import t from 'tap';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { exportJWK, generateKeyPair } from 'jose';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vaultApp } from './vault-app.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { BAD_ED25519_KEYS } from '../../vectors/ed25519-bad-keys.ts';
import { nodeIdFor } from '../../../core/trust/node-id.ts';
import { signRoster } from '../../../core/trust/roster.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { TenancyService } from '../../../api/tenancy/tenancy-service.ts';
import type { RecordRepository as Store } from '../../../api/store/record-repository.ts';

const BAD = Object.entries(BAD_ED25519_KEYS);
const newPub = () => bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
const count = async (store: Store, collection: string) => {
  let n = 0;
  for await (const _ of store.all(collection)) n++;
  return n;
};

t.test('POST /v1/api-keys refuses each bad key with 400 before the quota, and registers nothing', async (t) => {
  // A quota of 3: the first key and one more leave one slot.
  const { call, store, vaults, org } = await vaultApp(t, { limits: { apiKeysPerOrg: 3, vaultsPerOrg: 5 } });
  t.equal((await call('POST', '/v1/api-keys', { public_key: newPub() })).statusCode, 201);
  for (const [name, hex] of BAD) {
    for (const public_key of [hex, hex.toUpperCase()]) {
      const r = await call('POST', '/v1/api-keys', { public_key });
      t.equal(r.statusCode, 400, `${name}: ${r.body}`);
      t.same(r.json(), { error: 'public_key is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)', code: 'invalid_request', request_id: r.headers['x-request-id'] });
    }
  }
  t.equal((await vaults.listKeys(org.id)).length, 2, 'no bad key was registered');
  t.equal((await vaults.trustLog(org.id)).length, 1, 'nor entered in the trust log');
  t.equal(await count(store, 'outbox'), 1, 'nor announced');
  const good = await call('POST', '/v1/api-keys', { public_key: newPub() });
  t.equal(good.statusCode, 201, 'the slot is still free for a valid key');
  // At the quota, a bad key is still 400, not 429: the key is checked before the quota is.
  const [name, hex] = BAD[0]!;
  const atQuota = await call('POST', '/v1/api-keys', { public_key: hex });
  t.equal(atQuota.statusCode, 400, `${name} at the quota`);
  t.equal((await call('POST', '/v1/api-keys', { public_key: newPub() })).statusCode, 429, 'a valid key at the quota is 429');
});

t.test('the operator command (createOrg) refuses a bad first key', async (t) => {
  const { vaults, store } = await vaultApp(t);
  const orgs = await count(store, 'orgs');
  for (const [name, hex] of BAD) await t.rejects(vaults.createOrg('Bad', hex), { code: 'invalid_request', message: /not a valid Ed25519 public key/ }, name);
  t.equal(await count(store, 'orgs'), orgs, 'no organization created');
});

t.test('PUT /v1/config/end-user-auth refuses an OKP Ed25519 JWK with a bad x; a valid one registers', async (t) => {
  const { app, creds, store } = await vaultApp(t);
  const put = (body: unknown) => {
    const payload = JSON.stringify(body);
    return app.inject({ method: 'PUT', url: '/v1/config/end-user-auth', payload, headers: { host: 'api.test', ...signedHeaders(creds, 'PUT', 'http://api.test/v1/config/end-user-auth', payload) } });
  };
  const ec = { ...(await exportJWK((await generateKeyPair('ES256')).publicKey)), kid: 'ec' };
  for (const [name, hex] of BAD) {
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(hexToBytes(hex)).toString('base64url'), kid: 'bad' };
    const r = await put({ jwks: { keys: [ec, jwk] }, audience: 'https://wallet.test' });
    t.equal(r.statusCode, 400, `${name}: ${r.body}`);
    t.match(r.json(), { code: 'invalid_request', error: /jwks\.keys\[1\]\.x is not a valid Ed25519 public key/ });
  }
  t.equal(await count(store, 'end_user_auth'), 0, 'nothing registered');
  const good = { ...(await exportJWK((await generateKeyPair('EdDSA', { crv: 'Ed25519' })).publicKey)), kid: 'ed' };
  t.equal(good.crv, 'Ed25519');
  t.equal((await put({ jwks: { keys: [ec, good] }, audience: 'https://wallet.test' })).statusCode, 200);
});

t.test('POST /v1/vaults refuses a customer node whose signing key is bad, before the quota', async (t) => {
  const { call, store } = await vaultApp(t, { limits: { apiKeysPerOrg: 3, vaultsPerOrg: 1 } });
  const ek = bytesToHex(x25519.getPublicKey(x25519.utils.randomSecretKey()));
  for (const [name, hex] of BAD) {
    const customer_node = { node_id: nodeIdFor(hexToBytes(hex)), signing_key: hex, encryption_key: ek };
    const r = await call('POST', '/v1/vaults', { tier: 'self', customer_node });
    t.equal(r.statusCode, 400, `${name}: ${r.body}`);
    t.match(r.json(), { code: 'invalid_request', error: /customer_node\.signing_key is not a valid Ed25519 public key/ });
  }
  t.equal(await count(store, 'vaults'), 0, 'no vault created, the one slot left');
  const sk = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
  for (const [name, hex] of BAD) {
    const r = await call('POST', '/v1/nodes', { kind: 'self', node_id: nodeIdFor(hexToBytes(hex)), signing_key: hex, encryption_key: ek });
    t.equal(r.statusCode, 400, `enrolment, ${name}: ${r.body}`);
    t.match(r.json(), { code: 'invalid_request', error: /signing_key is not a valid Ed25519 public key/ });
  }
  t.equal(await count(store, 'nodes'), 0, 'no node enrolled');
  const node = { node_id: nodeIdFor(sk), signing_key: bytesToHex(sk), encryption_key: ek };
  t.equal((await call('POST', '/v1/nodes', { kind: 'self', ...node })).statusCode, 201, 'the node enrols');
  t.equal((await call('POST', '/v1/vaults', { tier: 'self', customer_node: node })).statusCode, 202, 'a valid, enrolled node key works');
});

t.test('workspace signing keys and the service-node roster refuse bad keys too', async (t) => {
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'ed25519-keys-')));
  t.teardown(() => store.close());
  const tenancy = new TenancyService(store);
  const { production } = await tenancy.createTenant('Acme');
  for (const [name, hex] of BAD) await t.rejects(tenancy.createKey(production.id, 'developer', { signingPublicKey: hex }), { code: 'validation_failed', message: /not a valid Ed25519 public key/ }, name);
  t.equal(await count(store, 'bearer_keys'), 0);
  t.ok((await tenancy.createKey(production.id, 'developer', { signingPublicKey: newPub() })).token, 'a valid key works');

  const operator = ed25519.utils.randomSecretKey();
  const ek = bytesToHex(x25519.getPublicKey(x25519.utils.randomSecretKey()));
  for (const [name, hex] of BAD) {
    t.throws(() => signRoster({ version: 1, created: 1_795_000_000, nodes: [{ nodeId: nodeIdFor(hexToBytes(hex)), signingKey: hex, encryptionKey: ek }] }, operator), { code: 'bad_roster', message: /not a valid Ed25519 public key/ }, name);
  }
});
