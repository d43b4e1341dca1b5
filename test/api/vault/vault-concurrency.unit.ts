// Concurrent requests on one vault (issue: races of point 8): requests for one wallet derivation make
// one wallet, answered to every caller; reshare requests for one vault start one reshare, the others see
// it resharing. Each reads the store back.
import t from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { randomBytes } from 'node:crypto';
import { vaultApp } from './vault-app.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';

async function setup(t: Parameters<typeof vaultApp>[0]) {
  const s = await vaultApp(t);
  const v = await s.vaults.createVault(s.org.id, { tier: 'hosted' });
  const vault: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) };
  await s.store.batch([s.vaults.vaultOp(vault)]);
  const count = async <T>(collection: string, keep: (x: T) => boolean) => {
    let n = 0;
    for await (const x of s.store.all<T>(collection)) if (keep(x)) n++;
    return n;
  };
  return { s, vault, count };
}

t.test('concurrent requests for one derivation make one wallet, the same for every caller', async (t) => {
  const { s, vault, count } = await setup(t);
  const answers = await Promise.all(Array.from({ length: 8 }, () => s.call('POST', `/v1/vaults/${vault.id}/wallets`, { chain: 'evm-local', account_index: 5 })));
  t.equal(new Set(answers.map((r) => r.json().id as string)).size, 1, 'one wallet id for all eight');
  t.equal(answers.filter((r) => r.statusCode === 201).length, 1, 'one of them created it');
  t.equal(await count<WalletRecord>('wallets', (w) => w.vault_id === vault.id), 1, 'one record stored');
  t.equal(await count<{ type: string }>('outbox', (e) => e.type === 'vault.wallet.created'), 1, 'one wallet.created event');
});

t.test('concurrent reshare requests for one vault start one reshare', async (t) => {
  const { s, vault, count } = await setup(t);
  const answers = await Promise.all(Array.from({ length: 6 }, () => s.call('POST', `/v1/vaults/${vault.id}/reshare`, {})));
  t.same(answers.map((r) => r.statusCode).sort(), [202, 409, 409, 409, 409, 409], 'one accepted, the others refused');
  for (const r of answers.filter((x) => x.statusCode === 409)) t.match(r.json(), { code: 'conflict', error: /the vault is resharing/ });
  t.equal(await count<{ kind: string; vault_id: string }>('jobs', (j) => j.kind === 'reshare' && j.vault_id === vault.id), 1, 'one reshare job');
  t.equal(await count<{ type: string }>('outbox', (e) => e.type === 'vault.reshare.started'), 1, 'one reshare.started event');
  t.equal((await s.vaults.vault(s.org.id, vault.id)).state, 'resharing');
});
