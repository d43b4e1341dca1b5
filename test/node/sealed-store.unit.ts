// Secrets at rest: sealed under the storage key, bound to their record, refused under another key;
// the identity survives a reopen; batches are atomic.
import t from 'tap';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SealedStore, SealedStoreError } from '../../node/storage/sealed-store.ts';
import { LevelKvBackend } from '../../node/storage/level-kv-backend.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import type { KvOp } from '../../node/storage/kv-backend.ts';
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

/** The real LevelDB backend, counting its batches and able to fail the next one. */
class CountingBackend extends LevelKvBackend {
  batches = 0;
  failNext = false;
  override async batch(ops: readonly KvOp[], opts: { sync: boolean }): Promise<void> {
    this.batches++;
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk full');
    }
    return super.batch(ops, opts);
  }
}

t.test('concurrent writes go down as groups: one sync for many, each caller answered after its group', async (t) => {
  const d = dir();
  const key = new Uint8Array(32).fill(3);
  const anchor = new FileRollbackAnchor(join(d, 'anchor'), key);
  const backend = new CountingBackend(join(d, 'db'));
  const store = await SealedStore.openOn(backend, key, { anchor });
  const before = store.version;
  const start = backend.batches;
  const n = 40;
  // Each caller writes two records, one of them overwriting a shared key in arrival order.
  const done = await Promise.all(Array.from({ length: n }, (_, i) =>
    store.batch([
      { type: 'put', key: `g/${String(i).padStart(2, '0')}`, value: new Uint8Array([i]), secret: i % 2 === 0 },
      { type: 'put', key: 'shared', value: new Uint8Array([i]) },
    ]).then(() => store.version)));
  const groups = backend.batches - start;
  t.ok(groups < n, `${n} callers' writes went down in ${groups} batches`);
  t.ok(groups >= 2, 'the first write went alone, the ones that waited behind it together');
  t.equal(store.version, before + BigInt(groups), 'one head version per group');
  t.ok(done.every((v) => v > before), 'every caller resolved after a head that holds its write');
  t.same(await store.get('shared'), new Uint8Array([n - 1]), 'the last caller to arrive wrote the shared key last');
  for (let i = 0; i < n; i++) {
    const k = `g/${String(i).padStart(2, '0')}`;
    t.same(i % 2 === 0 ? await store.getSecret(k) : await store.get(k), new Uint8Array([i]));
  }
  t.equal(await anchor.read(), store.version, 'the anchor holds the last group\'s version');

  // Groups stay within a batch's limits: ten 1 MiB writes cannot all go down in one 4 MiB group.
  const bigStart = backend.batches;
  await Promise.all(Array.from({ length: 10 }, (_, i) => store.put(`big/${i}`, new Uint8Array(1024 * 1024).fill(i))));
  t.ok(backend.batches - bigStart >= 3, `ten 1 MiB writes took ${backend.batches - bigStart} batches of at most 4 MiB`);
  t.same((await store.get('big/9'))![0], 9);

  // A group whose batch fails fails every caller in it and changes nothing; the next write goes on.
  const v = store.version;
  backend.failNext = true;
  const results = await Promise.allSettled([store.put('x/1', new Uint8Array([1])), store.put('x/2', new Uint8Array([2]))]);
  t.equal(results[0]!.status, 'rejected', 'the failed batch rejects its caller');
  t.equal(results[1]!.status, 'fulfilled', 'the write queued behind it goes down in the next group');
  for (const [i, r] of results.entries()) {
    if (r.status === 'rejected') t.equal(await store.get(`x/${i + 1}`), undefined, `x/${i + 1}: nothing written`);
  }
  await store.put('after', new Uint8Array([9]));
  t.same(await store.get('after'), new Uint8Array([9]));
  t.ok(store.version > v);
  await store.close();

  // Everything that resolved is there after a reopen, and the head and anchor agree.
  const again = await SealedStore.open(join(d, 'db'), key, { anchor: new FileRollbackAnchor(join(d, 'anchor'), key) });
  t.same(await again.get('shared'), new Uint8Array([n - 1]));
  t.same(await again.get('after'), new Uint8Array([9]));
  await again.close();
});
