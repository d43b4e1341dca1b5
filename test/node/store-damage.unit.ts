// Damage to a node's LevelDB directory, done as a crash or a careless host would while the node is
// stopped, is refused with a message that names what was found (docs/storage.md "Damage"): a lost
// write-ahead log (the last writes gone) against the rollback anchor, a deleted CURRENT file, a garbage
// MANIFEST. None of them opens as a store, new or old.
import t, { type Test } from 'tap';
import { mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';

const storageKey = new Uint8Array(randomBytes(32));
const enc = new TextEncoder();

function tmp(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'damage-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A store with records in its tables (written, then replayed into a table by a reopen) and more only in its log. */
async function written(root: string): Promise<{ dir: string; anchor: FileRollbackAnchor }> {
  const dir = join(root, 'db');
  const anchor = new FileRollbackAnchor(join(root, 'anchor'), storageKey);
  let store = await SealedStore.open(dir, storageKey, { anchor });
  await store.batch([{ type: 'put', key: 'key/a', value: enc.encode('first') }]);
  await store.close();
  // Reopening replays the log into a table and starts a new log: what follows is in the log alone.
  store = await SealedStore.open(dir, storageKey, { anchor });
  await store.batch([{ type: 'put', key: 'key/b', value: enc.encode('last') }]);
  await store.close();
  return { dir, anchor };
}

const files = (dir: string, re: RegExp) => readdirSync(dir).filter((f) => re.test(f));

t.test('a truncated write-ahead log loses the last writes: refused against the anchor, naming the log', async (t) => {
  const { dir, anchor } = await written(tmp(t));
  const logs = files(dir, /\.log$/).filter((f) => f !== 'LOG');
  t.ok(logs.length > 0, 'the last writes are in a log file');
  for (const f of logs) truncateSync(join(dir, f), 0);
  await t.rejects(SealedStore.open(dir, storageKey, { anchor }), { code: 'rolled_back', message: /last writes were lost \(a truncated or deleted write-ahead log\)/ });
  // The same with the log deleted.
  const again = await written(tmp(t));
  for (const f of files(again.dir, /\.log$/).filter((f) => f !== 'LOG')) rmSync(join(again.dir, f));
  await t.rejects(SealedStore.open(again.dir, storageKey, { anchor: again.anchor }), { code: 'rolled_back' });
});

t.test('a deleted CURRENT file is damage, not an empty new store nor tampering', async (t) => {
  const { dir, anchor } = await written(tmp(t));
  rmSync(join(dir, 'CURRENT'));
  await t.rejects(SealedStore.open(dir, storageKey, { anchor }), { code: 'store_damaged', message: /holds database files but no CURRENT file .* the directory is damaged\. Restore the data directory/ });
  t.same(files(dir, /^CURRENT$/), [], 'nothing was created in its place');
  // Without an anchor too: LevelDB would otherwise have made a new, empty database there.
  await t.rejects(SealedStore.open(dir, storageKey), { code: 'store_damaged' });
});

t.test('a garbage MANIFEST is damage, with LevelDB\'s reason', async (t) => {
  const { dir, anchor } = await written(tmp(t));
  for (const f of files(dir, /^MANIFEST-/)) writeFileSync(join(dir, f), randomBytes(200));
  await t.rejects(SealedStore.open(dir, storageKey, { anchor }), { code: 'store_damaged', message: /^LevelDB cannot open .*: Corruption/ });
});

t.test('a directory another process holds is not called damaged', async (t) => {
  const { dir, anchor } = await written(tmp(t));
  const holder = await SealedStore.open(dir, storageKey, { anchor });
  t.teardown(() => holder.close());
  const err = await SealedStore.open(dir, storageKey).then(() => undefined, (e: unknown) => e as Error & { code?: string });
  t.not(err?.code, 'store_damaged');
  t.match(err?.message, /in use by another process/);
});
