// Rollback protection fails closed (docs/storage.md "Rollback anchor"). A store written under a rollback
// anchor and reopened with the anchor missing, empty, more than a version behind, or not configured is
// refused, unless the operator accepts it for this start; an accepted open deletes every OT setup, its
// retirement record and the material made ahead, so an older copy of the data directory (served by a
// malicious disk) cannot un-retire an OT pair a peer probed, nor hand out a used presignature again.
import t, { type Test } from 'tap';
import { copyFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SealedStore, type SealedStoreOptions } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { storeVouching } from '../../node/storage/store-vouching.ts';
import { placeholderSetup } from './ot-setup-fixture.ts';

const storageKey = new Uint8Array(randomBytes(32));
const setupId = 'ab'.repeat(32);
const setup = placeholderSetup(1, { 2: setupId, 3: setupId });
const enc = new TextEncoder();
const production = storeVouching({ development: false, storeAcceptUnvouched: false, storeAdopt: false });
const accepted = storeVouching({ development: false, storeAcceptUnvouched: true, storeAdopt: false });

function tmp(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'unvouched-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const open = (dir: string, anchorFile: string | undefined, opts: SealedStoreOptions) =>
  SealedStore.open(join(dir, 'db'), storageKey, { ...opts, ...(anchorFile ? { anchor: new FileRollbackAnchor(anchorFile, storageKey) } : {}) });

/** A node's store as it stands after key generation, an OT setup and a presignature made ahead. */
async function written(dir: string, anchorFile: string): Promise<void> {
  const store = await open(dir, anchorFile, production);
  await store.batch([
    { type: 'put', key: 'key/k/current/committee', value: enc.encode(JSON.stringify({ owner: 'acme', committee: [] })) },
    { type: 'put', key: 'presig/k/0/e1', value: enc.encode('entry'), secret: true },
    { type: 'put', key: 'frost-nonce/k/0/n1', value: enc.encode('nonce'), secret: true },
  ]);
  const vault = new VaultShareStore(store);
  await vault.putOt('k', setup);
  await vault.claimSession('cd'.repeat(32));
  await store.close();
}

async function keys(dir: string, anchorFile: string): Promise<string[]> {
  const store = await open(dir, anchorFile, production);
  const out: string[] = [];
  for await (const k of store.keys('')) out.push(k);
  await store.close();
  return out;
}

t.test('a written store whose anchor is missing, empty, behind or not configured is refused without the override; nothing changes', async (t) => {
  const dir = tmp(t);
  const anchor = join(dir, 'anchor');
  await written(dir, anchor);
  const before = await keys(dir, anchor);
  const unvouched = { code: 'unvouched_store', message: /NODE_STORE_ACCEPT_UNVOUCHED/ };

  await t.rejects(open(dir, join(dir, 'a-new-anchor'), production), unvouched, 'a new, empty anchor');
  await t.rejects(open(dir, undefined, production), unvouched, 'no anchor configured');
  copyFileSync(anchor, join(dir, 'kept'));
  rmSync(anchor);
  await t.rejects(open(dir, anchor, production), unvouched, 'the anchor deleted');
  copyFileSync(join(dir, 'kept'), anchor);
  t.same(await keys(dir, anchor), before, 'the refusals changed nothing: with its own anchor the store opens as it was');

  // An anchor put back from two writes ago (a rollback of the anchor's own volume).
  const old = join(dir, 'old-anchor');
  copyFileSync(anchor, old);
  for (let i = 0; i < 2; i++) {
    const s = await open(dir, anchor, production);
    await s.put(`filler/${i}`, enc.encode('x'));
    await s.close();
  }
  copyFileSync(old, anchor);
  await t.rejects(open(dir, anchor, production), { code: 'unvouched_store', message: /behind/ }, 'an anchor two versions behind');
});

t.test('with the operator\'s override: opened, every OT setup, retirement record and pool entry deleted; shares, committees and used marks kept', async (t) => {
  const dir = tmp(t);
  const anchor = join(dir, 'anchor');
  await written(dir, anchor);
  rmSync(anchor);
  const store = await open(dir, anchor, accepted);
  t.match(store.unvouched, /holds nothing/, 'the store says why it was not vouched for');
  t.equal(store.droppedUnanchored, 4, 'the OT setup, its retirement record and two pool entries');
  const left: string[] = [];
  for await (const k of store.keys('')) left.push(k);
  t.same(left.sort(), ['key/k/current/committee', `used/${'cd'.repeat(32)}`], 'the committee and the used mark stay');
  t.equal(await new VaultShareStore(store).ot('k'), undefined, 'no OT setup: a fresh one must run');
  await store.close();
  // The override deleted them in a synced write under a new anchor: the next open is vouched for.
  const again = await open(dir, anchor, production);
  t.equal(again.unvouched, undefined);
  await again.close();
});

t.test('an old copy of the data directory cannot un-retire an OT pair', async (t) => {
  const dir = tmp(t);
  const anchor = join(dir, 'anchor');
  await written(dir, anchor);
  const copy = join(dir, 'copy');
  cpSync(join(dir, 'db'), copy, { recursive: true });
  // Pair {1, 2} is retired after a failed check.
  const store = await open(dir, anchor, production);
  await new VaultShareStore(store).retireOtPairs('k', [{ peer: 2, setupId }]);
  await store.close();
  // The disk serves the copy from before the retirement.
  rmSync(join(dir, 'db'), { recursive: true });
  cpSync(copy, join(dir, 'db'), { recursive: true });
  await t.rejects(open(dir, anchor, production), { code: 'rolled_back' }, 'with the anchor: refused as a rollback');
  rmSync(anchor);
  await t.rejects(open(dir, anchor, production), { code: 'unvouched_store' }, 'with the anchor gone too: refused');
  const overridden = await open(dir, anchor, accepted);
  t.equal(await new VaultShareStore(overridden).ot('k'), undefined, 'with the override: the un-retired setup is gone, not served');
  await overridden.close();
});

t.test('development mode opens an unvouched store and still deletes what could be replayed', async (t) => {
  const dir = tmp(t);
  await written(dir, join(dir, 'anchor'));
  const store = await open(dir, undefined, storeVouching({ development: true, storeAcceptUnvouched: false, storeAdopt: false }));
  t.match(store.unvouched, /no rollback anchor/);
  t.equal(await new VaultShareStore(store).ot('k'), undefined);
  await store.close();
});
