// The node's trust registry in its sealed store: what a log taught it survives a restart, a later log
// that omits a revocation cannot undo it, concurrent logs lose no update, and the record is sealed.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { signBootstrap, TrustEntryError } from '../../core/trust/trust-entry.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { parseApiKeys } from '../../node/runtime/authorization/api-key-registry.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_registry';
const operator = seed('registry operator');
const opts = { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))] };
const first = signer(ORG, seed('registry first'));
const second = signer(ORG, seed('registry second'));
const bootstrap = signBootstrap(ORG, first.publicKey, 1_795_000_000, operator);
const add = signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey });
const revoke = signedEntry(first, 'POST', `/v1/api-keys/${second.keyId}/revoke`);

t.test('what a log taught the node survives a restart; an omitted revocation stays in force', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trust-'));
  const key = new Uint8Array(32).fill(3);
  let store = await SealedStore.open(dir, key);
  let reg = new TrustRegistry(store, opts);
  await reg.apply(ORG, [bootstrap, add]);
  t.ok(await reg.activeKey(ORG, second.keyId), 'registered through the log');
  await reg.apply(ORG, [bootstrap, add, revoke]);
  t.notOk(await reg.activeKey(ORG, second.keyId), 'revoked');
  const raw = await store.raw(`trust/org/${ORG}`);
  t.notOk(Buffer.from(raw!).toString('latin1').includes(second.publicKey), 'the record is sealed');
  await store.close();

  store = await SealedStore.open(dir, key);
  reg = new TrustRegistry(store, opts);
  t.ok(await reg.activeKey(ORG, first.keyId), 'after a restart');
  await reg.apply(ORG, [bootstrap, add]);
  t.notOk(await reg.activeKey(ORG, second.keyId), 'a log that omits the revocation does not bring the key back');
  t.equal((await reg.state(ORG)).applied.length, 3);
  await t.rejects(reg.apply(ORG, [signBootstrap(ORG, second.publicKey, 5, operator)]), TrustEntryError, 'a second bootstrap after a restart');
  await store.close();
  // Under another storage key the store itself does not open, so no trust record is read at all.
  await t.rejects(SealedStore.open(dir, new Uint8Array(32).fill(4)), /does not open/, 'refused under another storage key');
});

t.test('a failing log stores nothing; concurrent logs lose no update', async (t) => {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'trust-')), new Uint8Array(32).fill(5));
  t.teardown(() => store.close());
  const reg = new TrustRegistry(store, opts);
  await t.rejects(reg.apply(ORG, [bootstrap, signedEntry(signer(ORG, seed('nobody')), 'POST', '/v1/api-keys', { public_key: second.publicKey })]), { code: 'bad_trust_log' });
  t.notOk(await reg.activeKey(ORG, first.keyId), 'not even the valid prefix');
  const keys = ['a', 'b', 'c', 'd'].map((n) => signer(ORG, seed(`concurrent ${n}`)));
  await Promise.all(keys.map((k) => reg.apply(ORG, [bootstrap, signedEntry(first, 'POST', '/v1/api-keys', { public_key: k.publicKey })])));
  for (const k of keys) t.ok(await reg.activeKey(ORG, k.keyId), `${k.keyId} kept`);
  await t.rejects(reg.state('bad org'), TrustEntryError, 'organization ids are checked');
});

t.test('the bootstrap file: keys by their configured ids, under the stored revocations', async (t) => {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'trust-')), new Uint8Array(32).fill(6));
  t.teardown(() => store.close());
  const fileKeys = parseApiKeys({ [ORG]: { key_1: first.publicKey.toUpperCase() } });
  const reg = new TrustRegistry(store, { ...opts, fileKeys });
  t.ok(reg.knownFromFile(ORG));
  t.notOk(reg.knownFromFile('org_else'));
  t.ok(await reg.activeKey(ORG, 'key_1'));
  const legacy = signer(ORG, seed('registry first'), 'key_1');
  await reg.apply(ORG, [signedEntry(legacy, 'POST', '/v1/api-keys', { public_key: second.publicKey }), signedEntry(second, 'POST', '/v1/api-keys/key_1/revoke')]);
  t.notOk(await reg.activeKey(ORG, 'key_1'), 'revoked through the log');
  t.ok(await reg.activeKey(ORG, second.keyId));
  t.throws(() => parseApiKeys({ [ORG]: { key_1: 'abc' } }), /32-byte hex/);
  t.throws(() => parseApiKeys({ 'bad org': {} }), /not a valid organization/);
  t.throws(() => parseApiKeys([]), /expected an object/);
});
