// GET /v1/vaults/{vaultId}/wallets (docs/vault-api.md "Lists"): a vault's wallets oldest first, in pages,
// filtered by chain from an index of its own; 404 for a vault of another organization; a cursor serves
// only its own vault, filters and organization; wallets derived before the chain index existed join it
// when the store opens.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { randomBytes } from 'node:crypto';
import { vaultApp } from './vault-app.ts';
import { refusesBadLimits, refusesForgedCursors, tickingClock, walk } from './list-walk.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import type { VaultService } from '../../../api/vaults/vault-service.ts';
import type { RecordRepository } from '../../../api/store/record-repository.ts';

async function activeVault(vaults: VaultService, store: RecordRepository, org: string): Promise<VaultRecord> {
  const v = await vaults.createVault(org, { tier: 'hosted' });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) };
  await store.batch([vaults.vaultOp(active)]);
  return active;
}

async function setup(t: Parameters<typeof vaultApp>[0]) {
  const s = await vaultApp(t, { now: tickingClock() });
  const vault = await activeVault(s.vaults, s.store, s.org.id);
  const sibling = await activeVault(s.vaults, s.store, s.org.id);
  const secretB = ed25519.utils.randomSecretKey();
  const b = await s.vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(secretB)));
  const credsB = { keyId: b.key.id, secretKey: secretB };
  const vaultB = await activeVault(s.vaults, s.store, b.org.id);
  // Chains interleaved, through the API; the sibling vault and B derive between them.
  const wallets: WalletRecord[] = [];
  const plan: [string, number][] = [['evm-local', 0], ['bitcoin-regtest', 0], ['evm-local', 1], ['base-sepolia', 0], ['evm-local', 2], ['bitcoin-regtest', 1], ['evm-local', 3], ['bitcoin-regtest', 2], ['evm-local', 4]];
  for (const [chain, account_index] of plan) {
    const r = await s.call('POST', `/v1/vaults/${vault.id}/wallets`, { chain, account_index });
    t.equal(r.statusCode, 201, r.body);
    wallets.push(r.json());
    await s.vaults.createWallet(s.org.id, sibling.id, chain, account_index, undefined);
    await s.vaults.createWallet(b.org.id, vaultB.id, chain, account_index, undefined);
  }
  return { ...s, vault, sibling, vaultB, credsB, wallets };
}

t.test('a walk in small pages lists each wallet of the vault once, oldest first, and no other vault\'s', async (t) => {
  const { call, vault, sibling, vaultB, credsB, wallets } = await setup(t);
  for (const limit of [1, 2, 4, 9]) {
    const w = await walk(t, call, `/v1/vaults/${vault.id}/wallets`, limit);
    t.same(w.ids, wallets.map((x) => x.id), `limit ${limit}: in derivation order, each once`);
  }
  const page = (await call('GET', `/v1/vaults/${vault.id}/wallets?limit=1`)).json();
  t.same(page.data[0], wallets[0], 'an item is the wallet as its derivation answered it');
  const siblings = await walk(t, call, `/v1/vaults/${sibling.id}/wallets`, 4);
  t.equal(siblings.ids.length, 9);
  t.notOk(siblings.ids.some((id) => wallets.some((x) => x.id === id)), 'the sibling vault lists its own wallets only');
  const b = await walk(t, call, `/v1/vaults/${vaultB.id}/wallets`, 5, credsB);
  t.equal(b.ids.length, 9, 'B lists its own vault');
  t.notOk(b.ids.some((id) => wallets.some((x) => x.id === id)));
});

t.test('the chain filter walks the vault\'s wallets of that chain, in order', async (t) => {
  const { call, vault, wallets } = await setup(t);
  for (const chain of ['evm-local', 'bitcoin-regtest', 'base-sepolia', 'ethereum-sepolia', 'ethereum']) {
    const w = await walk(t, call, `/v1/vaults/${vault.id}/wallets?chain=${chain}`, 2);
    t.same(w.ids, wallets.filter((x) => x.chain === chain).map((x) => x.id), chain);
  }
  const bad = await call('GET', `/v1/vaults/${vault.id}/wallets?chain=dogecoin`);
  t.equal(bad.statusCode, 400, 'a chain the service does not know');
  t.match(bad.json(), { code: 'invalid_request', error: /chain.*one of/ });
});

t.test('another organization\'s vault: 404, with or without a cursor; nothing leaks', async (t) => {
  const { call, vault, vaultB, credsB } = await setup(t);
  const first = (await call('GET', `/v1/vaults/${vault.id}/wallets?limit=2`)).json();
  for (const path of [`/v1/vaults/${vault.id}/wallets`, `/v1/vaults/${vault.id}/wallets?chain=evm-local`, `/v1/vaults/${vault.id}/wallets?cursor=${encodeURIComponent(first.next_cursor)}&limit=2`]) {
    const r = await call('GET', path, undefined, credsB);
    t.equal(r.statusCode, 404, `B asks ${path}`);
    t.same(r.json(), { error: 'no such vault', code: 'not_found', request_id: r.headers['x-request-id'] });
  }
  t.equal((await call('GET', '/v1/vaults/vlt_missing/wallets')).statusCode, 404, 'an unknown vault');
  const ownB = await call('GET', `/v1/vaults/${vaultB.id}/wallets?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`, undefined, credsB);
  t.equal(ownB.statusCode, 400, 'A\'s cursor on B\'s own vault');
  t.equal(ownB.json().code, 'invalid_cursor');
});

t.test('a cursor serves only its own vault and filters', async (t) => {
  const { call, vault, sibling } = await setup(t);
  const first = (await call('GET', `/v1/vaults/${vault.id}/wallets?chain=evm-local&limit=2`)).json();
  const c = encodeURIComponent(first.next_cursor);
  const onSibling = await call('GET', `/v1/vaults/${sibling.id}/wallets?chain=evm-local&limit=2&cursor=${c}`);
  t.equal(onSibling.statusCode, 400, 'on another vault of the same organization');
  t.equal(onSibling.json().code, 'invalid_cursor');
  for (const q of ['', 'chain=bitcoin-regtest']) {
    const r = await call('GET', `/v1/vaults/${vault.id}/wallets?${q}&cursor=${c}`);
    t.equal(r.statusCode, 400, `filters changed to "${q}"`);
    t.equal(r.json().code, 'cursor_filter_mismatch');
  }
  t.equal((await call('GET', `/v1/vaults?cursor=${c}`)).json().code, 'invalid_cursor', 'on the vault list');
  await refusesForgedCursors(t, call, `/v1/vaults/${vault.id}/wallets?chain=evm-local`, first.next_cursor);
  await refusesBadLimits(t, call, `/v1/vaults/${vault.id}/wallets`);
  const unknown = await call('GET', `/v1/vaults/${vault.id}/wallets?account_index=1`);
  t.match(unknown.json(), { code: 'invalid_request', error: /account_index.*Unexpected property/ }, 'an unknown parameter');
});

t.test('wallets derived before the chain index existed join it when the store opens', async (t) => {
  const { call, store, vaults, vault, wallets, org } = await setup(t);
  // A wallet as an earlier version stored it: its vault and derivation entries, no chain entry.
  const old: WalletRecord = { ...wallets[0]!, id: 'wal_' + 'e'.repeat(24), account_index: 9, created_at: new Date(Date.now() + 60_000).toISOString(), org: org.id };
  await store.batch([{ type: 'put', collection: 'wallets', id: old.id, value: old, index: [`vault/${vault.id}/${old.created_at}/${old.id}`, `derivation/${vault.id}/evm-local/evm/9/${old.id}`] }]);
  await store.batch([{ type: 'del', collection: 'index_versions', id: 'wallets' }]);
  const evm = wallets.filter((x) => x.chain === 'evm-local').map((x) => x.id);
  t.same((await walk(t, call, `/v1/vaults/${vault.id}/wallets?chain=evm-local`, 3)).ids, evm, 'before: the filter does not see it');
  await vaults.prepareIndexes();
  t.same((await walk(t, call, `/v1/vaults/${vault.id}/wallets?chain=evm-local`, 3)).ids, [...evm, old.id], 'after: it is listed, last (the newest)');
  t.same((await walk(t, call, `/v1/vaults/${vault.id}/wallets`, 4)).ids, [...wallets.map((x) => x.id), old.id], 'and once in the whole list');
  t.equal(await store.get('index_versions', 'wallets'), 1, 'the version reached is kept');
  await store.batch([{ type: 'put', collection: 'wallets', id: 'wal_' + 'f'.repeat(24), value: { ...old, id: 'wal_' + 'f'.repeat(24) }, index: [] }]);
  await vaults.prepareIndexes();
  t.same((await walk(t, call, `/v1/vaults/${vault.id}/wallets?chain=evm-local`, 3)).ids, [...evm, old.id], 'once reached, the version is not run again');
});
