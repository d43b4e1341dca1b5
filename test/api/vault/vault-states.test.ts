// Vault states the operator and the reshare drive (docs/vault-api.md): freeze and unfreeze by the
// operator command on the real store, what a frozen or resharing vault refuses, and the trust log the
// API keeps for the nodes: exactly the accepted key and end-user-auth changes, in order, never a refused one.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { bytesToHex } from '@noble/hashes/utils.js';
import { exportJWK, generateKeyPair } from 'jose';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { decodeTrustEntry, verifyBootstrap } from '../../../core/trust/trust-entry.ts';
import { apiKeyId } from '../../../core/trust/api-key-id.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../../support/program.ts';

const root = resolve(import.meta.dirname, '../../..');
const LIMITS = { apiKeysPerOrg: 2, vaultsPerOrg: 5 };

async function open(dir: string) {
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: LIMITS });
  return { store, vaults };
}

/** An active vault with a known key, as key generation would leave it. */
async function activeVault(vaults: VaultService, store: RecordStore, org: string): Promise<VaultRecord> {
  const v = await vaults.createVault(org, { tier: 'hosted', name: 'treasury' });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: '00'.repeat(32) };
  await store.batch([vaults.vaultOp(active)]);
  return active;
}

t.test('operator freeze and unfreeze: a frozen vault refuses reshare and transactions; unfreeze returns it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-states-'));
  let { store, vaults } = await open(dir);
  const secret = ed25519.utils.randomSecretKey();
  const org = (await vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(secret)))).org.id;
  const v = await activeVault(vaults, store, org);
  await store.close();

  const admin = (...args: string[]) => JSON.parse(execFileSync(PROGRAM_LAUNCHER, [...programArgs('api/admin/main.ts'), ...args], {
    cwd: root, env: { PATH: process.env.PATH ?? '', API_DATA_DIR: dir }, encoding: 'utf8',
  })) as { vault: string; state: string };
  t.same(admin('vault', 'freeze', '--id', v.id), { vault: v.id, state: 'frozen' });
  t.throws(() => execFileSync(PROGRAM_LAUNCHER, [...programArgs('api/admin/main.ts'), 'vault', 'freeze', '--id', v.id], {
    cwd: root, env: { PATH: process.env.PATH ?? '', API_DATA_DIR: dir }, stdio: 'pipe',
  }), 'freezing a frozen vault is refused');

  ({ store, vaults } = await open(dir));
  t.equal((await vaults.vault(org, v.id)).state, 'frozen');
  await t.rejects(vaults.reshare(org, v.id, undefined), { kind: 'conflict', code: 'conflict' }, 'no reshare while frozen');
  const txs = new TransactionService({ vaults, hasBackend: () => true });
  const w = await vaults.createWallet(org, v.id, 'evm-local', 0, undefined);
  const creds: ApiCredentials = { keyId: (await vaults.listKeys(org))[0]!.id, secretKey: secret };
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, transactions: txs });
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: org, keyId: creds.keyId, secretKey: secret });
  const notAfter = Math.floor(Date.now() / 1000) + 600;
  const intent = await client.evmIntent({ wallet: w.wallet, to: '0x' + '11'.repeat(20), amount: 5n, idempotencyKey: 'k1', notAfter: BigInt(notAfter), nonce: 0n });
  const body = JSON.stringify({ wallet_id: w.wallet.id, to: '0x' + '11'.repeat(20), amount: '5', not_after: notAfter, nonce: 0, idempotency_key: 'k1', intent_signature: client.signIntent(intent) });
  const res = await app.inject({ method: 'POST', url: '/v1/transactions', payload: body, headers: { host: 'api.test', ...signedHeaders(creds, 'POST', 'http://api.test/v1/transactions', body) } });
  t.equal(res.statusCode, 409, 'a frozen vault accepts no transaction');
  t.equal(res.json().code, 'conflict');
  await app.close();
  await store.close();

  t.same(admin('vault', 'unfreeze', '--id', v.id), { vault: v.id, state: 'active' }, 'unfreeze returns the state it was frozen from');
  ({ store, vaults } = await open(dir));
  const events = [];
  for await (const e of store.all<{ type: string; resource_id: string }>('outbox')) if (e.resource_id === v.id) events.push(e.type);
  t.same(events.filter((e) => e.startsWith('vault.') && e !== 'vault.created'), ['vault.frozen', 'vault.unfrozen'], 'each change is in the outbox');
  const started = await vaults.reshare(org, v.id, 'hosted');
  t.equal(started.status, 'accepted');
  t.equal((await vaults.vault(org, v.id)).state, 'resharing');
  await t.rejects(vaults.reshare(org, v.id, undefined), { kind: 'conflict', code: 'conflict' }, 'one reshare at a time');
  await store.close();
});

t.test('trust log: operator bootstrap first, then exactly the accepted key and end-user-auth requests, in order', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-trust-'));
  const { store, vaults } = await open(dir);
  t.teardown(() => store.close());
  const operator = ed25519.utils.randomSecretKey();
  const secret = ed25519.utils.randomSecretKey();
  const pub = bytesToHex(ed25519.getPublicKey(secret));
  const { org: { id: org }, key } = await vaults.createOrg('Acme', pub, 'bootstrap', operator);
  t.equal(key.id, apiKeyId(org, pub), 'the key id derives from the key');
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults });
  t.teardown(() => app.close());
  const creds: ApiCredentials = { keyId: key.id, secretKey: secret };
  const call = (method: 'POST' | 'PUT', path: string, body?: unknown) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(creds, method, `http://api.test${path}`, payload) } });
  };
  const second = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  t.equal((await call('POST', '/v1/api-keys', { public_key: second })).statusCode, 201);
  const dup = await call('POST', '/v1/api-keys', { public_key: second });
  t.equal(dup.statusCode, 400, `a refused registration: ${dup.body}`);
  t.equal((await call('POST', '/v1/api-keys', { public_key: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) })).statusCode, 429, 'over quota');
  const jwk = await exportJWK((await generateKeyPair('ES256')).publicKey);
  t.equal((await call('PUT', '/v1/config/end-user-auth', { jwks: { keys: [jwk] }, audience: 'aud' })).statusCode, 200);
  t.equal((await call('PUT', '/v1/config/end-user-auth', { jwks: { keys: [{ ...jwk, d: 'x' }] }, audience: 'aud' })).statusCode, 400, 'private material refused');
  t.equal((await call('POST', `/v1/api-keys/${apiKeyId(org, second)}/revoke`)).statusCode, 200);

  const log = (await vaults.trustLog(org)).map(decodeTrustEntry);
  t.same(log.map((e) => (e.kind === 'bootstrap' ? 'bootstrap' : `${e.method} ${new URL(e.url).pathname}`)), [
    'bootstrap', 'POST /v1/api-keys', 'PUT /v1/config/end-user-auth', `POST /v1/api-keys/${apiKeyId(org, second)}/revoke`,
  ], 'refused requests never enter the log');
  const boot = log[0]!;
  t.ok(boot.kind === 'bootstrap' && verifyBootstrap(boot, [bytesToHex(ed25519.getPublicKey(operator))]), 'the bootstrap verifies under the operator key');
  const reg = log[1]!;
  t.ok(reg.kind === 'request' && new TextDecoder().decode(reg.body).includes(second), 'the entry carries the exact body that was signed');
});
