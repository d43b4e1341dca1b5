// The vault API through app.inject with a real LevelDB store: request signatures, API keys, vaults and
// wallets, and the error shape and status of every refusal.
import t, { type Test } from 'tap';
import { vaultApp } from './vault-app.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { HDKey } from '@scure/bip32';
import { publicKeyToAddress } from 'viem/utils';
import { toHex } from 'viem';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';

function setup(t: Test, limits = { apiKeysPerOrg: 3, vaultsPerOrg: 2 }) {
  return vaultApp(t, { limits });
}

t.test('API keys: register, list, revoke; a revoked key stops authenticating at once', async (t) => {
  const { call, creds } = await setup(t);
  const second = ed25519.utils.randomSecretKey();
  const reg = await call('POST', '/v1/api-keys', { public_key: bytesToHex(ed25519.getPublicKey(second)), label: 'ci' });
  t.equal(reg.statusCode, 201);
  t.match(reg.json(), { label: 'ci', revoked: false });
  const list = await call('GET', '/v1/api-keys');
  t.equal(list.statusCode, 200);
  t.equal(list.json().api_keys.length, 2);
  const newCreds = { keyId: reg.json().id, secretKey: second };
  t.equal((await call('GET', '/v1/api-keys', undefined, newCreds)).statusCode, 200, 'the new key authenticates');
  const rev = await call('POST', `/v1/api-keys/${creds.keyId}/revoke`, undefined, newCreds);
  t.equal(rev.statusCode, 200);
  t.equal(rev.json().revoked, true);
  t.ok(rev.json().revoked_at);
  const refused = await call('GET', '/v1/api-keys');
  t.equal(refused.statusCode, 401, 'the revoked key is refused');
  t.same(Object.keys(refused.json()).sort(), ['code', 'error', 'request_id']);
  t.equal(refused.json().code, 'unauthorized');
  t.equal((await call('POST', `/v1/api-keys/${reg.json().id}/revoke`, undefined, newCreds)).statusCode, 409, 'the last active key stays');
});

t.test('request authentication refusals are 401 unauthorized and change nothing', async (t) => {
  const { app, call, creds, vaults, org } = await setup(t);
  const body = JSON.stringify({ tier: 'hosted' });
  const good = signedHeaders(creds, 'POST', 'http://api.test/v1/vaults', body);
  const cases: [string, Record<string, string>, string][] = [
    ['no signature', { 'content-type': 'application/json', 'content-digest': good['content-digest']! }, body],
    ['body changed after signing', good, JSON.stringify({ tier: 'self' })],
    ['digest of another body', { ...good, 'content-digest': signedHeaders(creds, 'POST', 'http://api.test/v1/vaults', '{"a":1}')['content-digest']! }, body],
    ['signed for another path', signedHeaders(creds, 'POST', 'http://api.test/v1/api-keys', body), body],
    ['signed for another host', signedHeaders(creds, 'POST', 'http://evil.test/v1/vaults', body), body],
    ['unknown key', signedHeaders({ ...creds, keyId: 'key_nope' }, 'POST', 'http://api.test/v1/vaults', body), body],
    ['wrong secret', signedHeaders({ ...creds, secretKey: ed25519.utils.randomSecretKey() }, 'POST', 'http://api.test/v1/vaults', body), body],
    ['stale', signedHeaders(creds, 'POST', 'http://api.test/v1/vaults', body, Math.floor(Date.now() / 1000) - 3600), body],
  ];
  for (const [what, headers, payload] of cases) {
    const r = await app.inject({ method: 'POST', url: '/v1/vaults', payload, headers: { host: 'api.test', ...headers } });
    t.equal(r.statusCode, 401, what);
    t.equal(r.json().code, 'unauthorized', what);
  }
  // The signature is checked before the body is parsed: an unsigned request with a body that is not
  // JSON is 401, never 400, and a body changed in transit spends no nonce.
  const garbage = '{"tier": "hosted", oops';
  const unsignedGarbage = await app.inject({ method: 'POST', url: '/v1/vaults', payload: garbage, headers: { host: 'api.test', 'content-type': 'application/json' } });
  t.equal(unsignedGarbage.statusCode, 401, 'unsigned and unparsable: 401, the body never parsed');
  const signedGarbage = await app.inject({ method: 'POST', url: '/v1/vaults', payload: garbage, headers: { host: 'api.test', ...signedHeaders(creds, 'POST', 'http://api.test/v1/vaults', garbage) } });
  t.equal(signedGarbage.statusCode, 400, 'signed and unparsable: the body is the caller\'s, 400');
  // A replay of a request that was accepted is refused.
  const first = await app.inject({ method: 'POST', url: '/v1/vaults', payload: body, headers: { host: 'api.test', ...good } });
  t.equal(first.statusCode, 202);
  const replay = await app.inject({ method: 'POST', url: '/v1/vaults', payload: body, headers: { host: 'api.test', ...good } });
  t.equal(replay.statusCode, 401, 'replayed nonce');
  t.match(replay.json().error, /nonce/);
  t.equal((await vaults.store.byIndex<VaultRecord>('vaults', `org/${org.id}/`)).length, 1, 'only the first request created a vault');
  void call;
});

t.test('vaults: 202 creating, quota 429, other organizations see 404, bad bodies 400', async (t) => {
  const { call, vaults, store } = await setup(t);
  const created = await call('POST', '/v1/vaults', { tier: 'hosted', name: 'treasury', end_user_subject: 'user-1' });
  t.equal(created.statusCode, 202);
  t.match(created.json(), { tier: 'hosted', state: 'creating', rotation: 0, public_key: null, name: 'treasury', end_user_subject: 'user-1' });
  const id = created.json().id;
  t.match((await call('GET', `/v1/vaults/${id}`)).json(), { id, state: 'creating' });
  t.equal((await call('POST', `/v1/vaults/${id}/wallets`, { chain: 'evm-local' })).statusCode, 400, 'no wallet before the key exists (the spec allows 400, 401, 404 here)');

  const other = ed25519.utils.randomSecretKey();
  const { key } = await vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(other)));
  const foreign = await call('GET', `/v1/vaults/${id}`, undefined, { keyId: key.id, secretKey: other });
  t.equal(foreign.statusCode, 404);
  t.equal(foreign.json().code, 'not_found');

  t.equal((await call('POST', '/v1/vaults', { tier: 'hosted' })).statusCode, 202);
  const over = await call('POST', '/v1/vaults', { tier: 'hosted' });
  t.equal(over.statusCode, 429);
  t.equal(over.json().code, 'rate_limited');

  for (const [what, body] of [
    ['no tier', {}], ['unknown tier', { tier: 'cold' }], ['extra field', { tier: 'hosted', colour: 'red' }], ['subject on a self vault', { tier: 'self', end_user_subject: 'u' }],
    ['empty name', { tier: 'hosted', name: '' }],
  ] as const) {
    const r = await call('POST', '/v1/vaults', body);
    t.equal(r.statusCode, 400, what);
    t.equal(r.json().code, 'invalid_request', what);
  }
  void store;
});

t.test('wallets derive instantly: EVM matches BIP-32 + viem, Bitcoin P2WPKH and P2TR, idempotent per account', async (t) => {
  const { call, store } = await setup(t);
  const v = (await call('POST', '/v1/vaults', { tier: 'hosted' })).json() as VaultRecord;
  // Stand in for the key job: a group key and chain code as the cluster would record them.
  const sk = secp256k1.utils.randomSecretKey();
  const groupKey = bytesToHex(secp256k1.getPublicKey(sk, true));
  const chainCode = bytesToHex(ed25519.utils.randomSecretKey());
  const rec = (await store.get<VaultRecord>('vaults', v.id))!;
  await store.put('vaults', v.id, { ...rec, state: 'active', public_key: groupKey, chain_code: chainCode });

  const evm = await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'evm-local', account_index: 3 });
  t.equal(evm.statusCode, 201);
  const hd = new HDKey({ publicKey: hexToBytes(groupKey), chainCode: hexToBytes(chainCode) }).derive('m/44/60/3/0/0');
  const expected = publicKeyToAddress(toHex(secp256k1.Point.fromBytes(hd.publicKey!).toBytes(false)));
  t.equal(evm.json().address, expected, 'EVM address from the BIP-32 oracle');
  t.equal(evm.json().derivation_path, 'm/44/60/3/0/0');
  const again = await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'evm-local', account_index: 3 });
  t.equal(again.statusCode, 200);
  t.equal(again.json().id, evm.json().id, 'same account, same wallet');
  const seg = await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'bitcoin-regtest' });
  t.match(seg.json(), { address_type: 'p2wpkh', address: /^bcrt1q/, derivation_path: 'm/84/1/0/0/0' });
  const tr = await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'bitcoin-testnet', address_type: 'p2tr' });
  t.match(tr.json(), { address_type: 'p2tr', address: /^tb1p/, derivation_path: 'm/86/1/0/0/0' });
  for (const [what, body, code] of [
    ['mainnet in sandbox', { chain: 'ethereum' }, 400], ['unknown chain', { chain: 'dogecoin' }, 400], ['negative account', { chain: 'evm-local', account_index: -1 }, 400],
    ['hardened account', { chain: 'evm-local', account_index: 2 ** 31 }, 400], ['address type on EVM', { chain: 'evm-local', address_type: 'p2tr' }, 400],
  ] as const) {
    const r = await call('POST', `/v1/vaults/${v.id}/wallets`, body);
    t.equal(r.statusCode, code, what);
    t.equal(r.json().code, 'invalid_request', what);
  }
  t.equal((await call('POST', '/v1/vaults/vlt_missing/wallets', { chain: 'evm-local' })).statusCode, 404);
});
