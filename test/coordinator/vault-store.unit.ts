// The coordinator's vault records: version 2 round-trips, version 1 records written before the vault
// vocabulary (keyId, generating, needs_attention) read as version 2 with the vault API's state names.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { readVaultRecord, VaultStore, type VaultRecord } from '../../coordinator/vaults/vault-store.ts';

const base = { owner: 'org_acme', tier: 'hosted', threshold: 2, committee: [{ nodeId: 'n1', index: 1 }], epoch: 3, rotation: 1, publicKey: '02ab', chainCode: 'cd', createdAtMs: 1, updatedAtMs: 2 };

t.test('version 1 records read with the vault API state names', async (t) => {
  const states: [string, string][] = [['generating', 'creating'], ['active', 'active'], ['resharing', 'resharing'], ['needs_attention', 'reshare_pending'], ['failed', 'failed']];
  for (const [old, now] of states) {
    const r = readVaultRecord(JSON.stringify({ v: 1, keyId: 'vault-1', ...base, state: old, problem: 'why' }));
    t.same(r, { v: 2, vaultId: 'vault-1', ...base, state: now, problem: 'why' }, old);
    t.notOk('keyId' in r, `${old}: no keyId left`);
  }
  t.throws(() => readVaultRecord(JSON.stringify({ v: 1, keyId: 'vault-1', ...base, state: 'sleeping' })), /unreadable vault record/);
  t.throws(() => readVaultRecord(JSON.stringify({ v: 3, vaultId: 'vault-1', ...base, state: 'active' })), /unreadable vault record \(version 3\)/);
});

t.test('the store reads old records and writes version 2 under the same key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-store-'));
  const db = new Level<string, string>(dir);
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await db.put('key/vault-old', JSON.stringify({ v: 1, keyId: 'vault-old', ...base, state: 'needs_attention' }));
  const store = new VaultStore(db);
  const old = await store.get('vault-old');
  t.equal(old?.state, 'reshare_pending');
  t.equal(old?.vaultId, 'vault-old');
  const next: VaultRecord = { ...old!, state: 'active' };
  await store.put(next);
  t.same(JSON.parse((await db.get('key/vault-old'))!), next, 'rewritten as version 2');
  t.notOk(await store.create({ ...next }), 'the id is taken');
  t.ok(await store.create({ ...next, vaultId: 'vault-new' }));
  const all = [];
  for await (const r of store.all()) all.push(r.vaultId);
  t.same(all, ['vault-new', 'vault-old']);
});
