// The disk under a node may be malicious (docs/threat-model.md): it must not be able to edit, remove,
// add or roll back the records that decide authorization — a vault's owner, end-user requirement and
// committee pins, the OT retirement, used marks, the trust log — without the node noticing. Each test
// changes the LevelDB directory while the node is stopped, as a host with the disk would, and reopens.
import t, { type Test } from 'tap';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Level } from 'level';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { placeholderSetup } from './ot-setup-fixture.ts';

const storageKey = new Uint8Array(randomBytes(32));
const setupId = 'ab'.repeat(32);
const setup = placeholderSetup(1, { 2: setupId, 3: setupId });

function tmp(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'rollback-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** The host's view: the raw LevelDB, with no key. */
async function onDisk(dir: string, f: (db: Level<string, Uint8Array>) => Promise<void>): Promise<void> {
  const db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
  await db.open();
  await f(db);
  await db.close();
}

async function populated(dir: string): Promise<void> {
  const store = await SealedStore.open(dir, storageKey);
  await store.batch([{ type: 'put', key: 'key/k/current/committee', value: new TextEncoder().encode(JSON.stringify({ owner: 'acme', committee: [], tier: 'hosted', endUser: { required: true } })) }]);
  const vault = new VaultShareStore(store);
  await vault.putOt('k', setup);
  await vault.claimSession('cd'.repeat(32));
  await store.close();
}

t.test('an edited public record (a vault\'s owner and end-user requirement) is refused at open', async (t) => {
  const dir = tmp(t);
  await populated(dir);
  await onDisk(dir, (db) => db.put('key/k/current/committee', new TextEncoder().encode(JSON.stringify({ owner: 'mallory', committee: [], tier: 'hosted' }))));
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'tampered' });
});

t.test('a removed used mark is refused at open', async (t) => {
  const dir = tmp(t);
  await populated(dir);
  await onDisk(dir, (db) => db.del(`used/${'cd'.repeat(32)}`));
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'tampered' });
});

t.test('an added record is refused at open', async (t) => {
  const dir = tmp(t);
  await populated(dir);
  await onDisk(dir, (db) => db.put('trust/org/mallory', new Uint8Array([1, 2, 3])));
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'tampered' });
});

t.test('a retirement rolled back to its older sealed value is refused at open', async (t) => {
  const dir = tmp(t);
  await populated(dir);
  let before: Uint8Array | undefined;
  await onDisk(dir, async (db) => {
    before = await db.get('key/k/current/ot-retired');
  });
  const store = await SealedStore.open(dir, storageKey);
  await new VaultShareStore(store).retireOtPairs('k', [{ peer: 2, setupId }]);
  t.same((await new VaultShareStore(store).ot('k'))?.retired, [2]);
  await store.close();
  // The host writes back the record as it was before the retirement: it opens under the storage key
  // (it is a genuine old ciphertext of that record), but the head accounts for the newer one.
  await onDisk(dir, (db) => db.put('key/k/current/ot-retired', before!));
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'tampered' });
});

t.test('a whole directory restored from an older copy is refused when a rollback anchor is kept elsewhere', async (t) => {
  const dir = tmp(t);
  const elsewhere = tmp(t);
  const anchorFile = join(elsewhere, 'anchor');
  const store = await SealedStore.open(dir, storageKey, { anchor: new FileRollbackAnchor(anchorFile, storageKey) });
  await new VaultShareStore(store).putOt('k', setup);
  await store.close();
  const copy = tmp(t);
  cpSync(dir, copy, { recursive: true });
  const again = await SealedStore.open(dir, storageKey, { anchor: new FileRollbackAnchor(anchorFile, storageKey) });
  await new VaultShareStore(again).retireOtPairs('k', [{ peer: 3, setupId }]);
  await again.close();
  rmSync(dir, { recursive: true, force: true });
  cpSync(copy, dir, { recursive: true });
  await t.rejects(SealedStore.open(dir, storageKey, { anchor: new FileRollbackAnchor(anchorFile, storageKey) }), { code: 'rolled_back' }, 'the older copy is consistent in itself, but behind the anchor');
  const current = await SealedStore.open(copy, storageKey);
  t.ok(current, 'without an anchor the older copy opens: the anchor is what makes the version monotonic');
  await current.close();
});

t.test('an untouched store reopens, its version having grown with every write', async (t) => {
  const dir = tmp(t);
  await populated(dir);
  const store = await SealedStore.open(dir, storageKey);
  t.equal(store.version, 3n, 'three writes');
  t.same((await new VaultShareStore(store).ot('k'))?.peers['2']?.setupId, setupId);
  await store.close();
});

t.test('a removed head is refused: the store is not adopted as it stands', async (t) => {
  const dir = tmp(t);
  await populated(dir);
  await onDisk(dir, async (db) => {
    await db.put('key/k/current/committee', new TextEncoder().encode(JSON.stringify({ owner: 'mallory', committee: [], tier: 'hosted' })));
    await db.del('\u0000head');
  });
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'tampered' });
});

t.test('with an anchor, a removed head is refused even when adoption is allowed', async (t) => {
  const dir = tmp(t);
  const anchorFile = join(tmp(t), 'anchor');
  const store = await SealedStore.open(dir, storageKey, { anchor: new FileRollbackAnchor(anchorFile, storageKey) });
  await store.put('a', new Uint8Array([1]));
  await store.close();
  await onDisk(dir, (db) => db.del('\u0000head'));
  await t.rejects(SealedStore.open(dir, storageKey, { adoptUnheaded: true, anchor: new FileRollbackAnchor(anchorFile, storageKey) }), { code: 'rolled_back' });
});

t.test('a store written before heads existed is adopted once, when allowed', async (t) => {
  const dir = tmp(t);
  await onDisk(dir, (db) => db.put('identity/v1', new Uint8Array([1])));
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'tampered' }, 'not by default');
  const store = await SealedStore.open(dir, storageKey, { adoptUnheaded: true });
  t.ok(store.adopted);
  t.equal(store.version, 1n);
  await store.close();
  const again = await SealedStore.open(dir, storageKey);
  t.notOk(again.adopted, 'and verified from then on');
  await again.close();
});

t.test('the anchor keeps two slots: a torn write reads as the version before, a file of one slot is read and upgraded', async (t) => {
  const d = tmp(t);
  const file = join(d, 'anchor');
  const anchor = new FileRollbackAnchor(file, storageKey);
  t.equal(await anchor.read(), undefined, 'new: nothing held');
  await anchor.write(5n);
  t.equal(readFileSync(file).length, 96, 'two 48-byte slots');
  for (const v of [6n, 7n, 8n]) await anchor.write(v);
  await anchor.write(3n);
  t.equal(await new FileRollbackAnchor(file, storageKey).read(), 8n, 'a lower version is ignored; the highest is read back');

  // A crash tears the slot being written (8 is in slot 0): the anchor reads as the other slot's 7.
  const torn = new Uint8Array(readFileSync(file));
  torn[30]! ^= 0xff;
  writeFileSync(file, torn);
  t.equal(await new FileRollbackAnchor(file, storageKey).read(), 7n, 'a slot that does not open is passed over');
  // Both slots unreadable (or another key): refused, never taken as new.
  torn[48 + 30]! ^= 0xff;
  writeFileSync(file, torn);
  await t.rejects(new FileRollbackAnchor(file, storageKey).read(), { code: 'bad_anchor' }, 'no slot opens: refused');
  await t.rejects(new FileRollbackAnchor(file, new Uint8Array(32).fill(9)).read(), { code: 'bad_anchor' }, 'another key: refused');
  writeFileSync(file, new Uint8Array(50));
  await t.rejects(new FileRollbackAnchor(file, storageKey).read(), { code: 'bad_anchor' }, 'another length: refused');

  // The earlier form (one slot) still reads, and its next write turns it into two slots.
  const fresh = new FileRollbackAnchor(file, storageKey);
  rmSync(file);
  await fresh.write(11n);
  writeFileSync(file, readFileSync(file).subarray(0, 48));
  const legacy = new FileRollbackAnchor(file, storageKey);
  t.equal(await legacy.read(), 11n, 'one slot reads');
  await legacy.write(12n);
  t.equal(readFileSync(file).length, 96, 'rewritten in two slots');
  t.equal(await new FileRollbackAnchor(file, storageKey).read(), 12n);
});
