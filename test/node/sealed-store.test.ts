// Secrets at rest: sealed under the storage key, bound to their record, refused under another key;
// the identity survives a reopen; batches are atomic.
import t from 'tap';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SealedStore, SealedStoreError } from '../../node/storage/sealed-store.ts';
import { loadStorageKey, StorageKeyError } from '../../node/storage/storage-key.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import { toHex } from '../../common/bytes.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'sealed-'));

t.test('the storage key file is created once with mode 0600 and read back', async (t) => {
  const d = dir();
  const file = join(d, 'keys', 'storage.key');
  t.throws(() => loadStorageKey(file, false), StorageKeyError, 'absent and not allowed to create');
  const k1 = loadStorageKey(file, true);
  t.equal(k1.length, 32);
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.same(loadStorageKey(file, true), k1, 'second load reads the same key');
  t.equal(readFileSync(file, 'utf8').trim(), toHex(k1));
});

t.test('secrets are not stored in the clear, and open only under the same key and record', async (t) => {
  const d = dir();
  const key = new Uint8Array(32).fill(7);
  const store = await SealedStore.open(d, key);
  const secret = new Uint8Array(48).fill(0xab);
  await store.putSecret('share/v1/a', secret);
  const raw = (await store.raw('share/v1/a'))!;
  t.notOk(toHex(raw).includes(toHex(secret.subarray(0, 16))), 'ciphertext does not contain the plaintext');
  t.same(await store.getSecret('share/v1/a'), secret);

  // Moving the ciphertext to another record does not open (the record key is associated data).
  await store.put('share/v1/b', raw);
  await t.rejects(store.getSecret('share/v1/b'), SealedStoreError);
  await store.close();

  // Under another key the store's authenticated head does not open, so nothing is read at all.
  await t.rejects(SealedStore.open(d, new Uint8Array(32).fill(8)), { code: 'unseal_failed' });
});

t.test('batches apply every operation together', async (t) => {
  const store = await SealedStore.open(dir(), new Uint8Array(32).fill(1));
  t.teardown(() => store.close());
  await store.batch([
    { type: 'put', key: 'a/1', value: new Uint8Array([1]) },
    { type: 'put', key: 'a/2', value: new Uint8Array([2]), secret: true },
  ]);
  t.same(await store.get('a/1'), new Uint8Array([1]));
  t.same(await store.getSecret('a/2'), new Uint8Array([2]));
  await store.batch([{ type: 'del', key: 'a/1' }, { type: 'put', key: 'a/3', value: new Uint8Array([3]) }]);
  const keys: string[] = [];
  for await (const k of store.keys('a/')) keys.push(k);
  t.same(keys, ['a/2', 'a/3']);
});

t.test('a node identity is created once and reloaded with the same id and keys', async (t) => {
  const d = dir();
  const key = new Uint8Array(32).fill(9);
  let store = await SealedStore.open(d, key);
  const first = await NodeIdentity.loadOrCreate(store);
  t.ok(first.created);
  t.equal(first.identity.nodeId, nodeIdFor(first.identity.signingKey));
  await store.close();
  store = await SealedStore.open(d, key);
  const second = await NodeIdentity.loadOrCreate(store);
  t.notOk(second.created);
  t.equal(second.identity.nodeId, first.identity.nodeId);
  t.same(second.identity.encryptionKey, first.identity.encryptionKey);
  await store.close();
  t.notMatch(JSON.stringify(first.identity), /secret/i, 'serializing an identity shows public parts only');
  t.same(Object.keys(JSON.parse(JSON.stringify(first.identity))).sort(), ['encryptionKey', 'nodeId', 'signingKey']);
});

t.test('a signing session id is claimed durably: refused again after a restart', async (t) => {
  const { VaultShareStore } = await import('../../node/storage/vault-shares.ts');
  const d = dir();
  const key = new Uint8Array(32).fill(4);
  let store = await SealedStore.open(d, key);
  await new VaultShareStore(store).claimSession('ab'.repeat(32));
  await t.rejects(new VaultShareStore(store).claimSession('ab'.repeat(32)), { code: 'session_reused' }, 'same process, new vault object');
  await store.close();
  store = await SealedStore.open(d, key);
  t.teardown(() => store.close());
  await t.rejects(new VaultShareStore(store).claimSession('ab'.repeat(32)), { code: 'session_reused' }, 'after reopening the store');
  await new VaultShareStore(store).claimSession('cd'.repeat(32));
  t.pass('another session id is accepted');
});
