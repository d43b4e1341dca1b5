// GET /v1/transactions (docs/vault-api.md "Lists"): the organization's transactions oldest first, in
// pages, filtered by vault, wallet and state, each filter walking an index of its own (the organization's,
// the vault's or the wallet's, with or without the state) so no filter reads another organization's
// transactions; state changes move a transaction between the state entries; a cursor serves only its own
// list, filters and organization; transactions stored before these indexes existed join them when the
// store opens.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { refusesBadLimits, refusesForgedCursors, tickingClock, walk, type Call } from './list-walk.ts';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import type { TransactionRecord, TransactionState } from '../../../api/transactions/records.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import type { VaultService } from '../../../api/vaults/vault-service.ts';

const RECIPIENT = '0x00000000000000000000000000000000000000a1';

async function activeVault(vaults: VaultService, org: string): Promise<VaultRecord> {
  const v = await vaults.createVault(org, { tier: 'hosted' });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) };
  await vaults.store.batch([vaults.vaultOp(active)]);
  return active;
}

/** Submits a signed EVM transfer through POST /v1/transactions, as the SDK would. */
async function submit(t: Test, call: Call, creds: ApiCredentials, org: string, wallet: WalletRecord, key: string): Promise<TransactionRecord> {
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: org, keyId: creds.keyId, secretKey: creds.secretKey });
  // The nonce and not_after as POST /v1/transactions/prepare reserves them for the key.
  const prepared = (await call('POST', '/v1/transactions/prepare', { wallet_id: wallet.id, idempotency_key: key }, creds)).json() as { nonce: number; not_after: number };
  const intent = await client.evmIntent({ wallet, to: RECIPIENT, amount: 5n, idempotencyKey: key, nonce: BigInt(prepared.nonce), notAfter: BigInt(prepared.not_after) });
  const r = await call('POST', '/v1/transactions', { wallet_id: wallet.id, intent: bytesToHex(intent), idempotency_key: key, intent_signature: client.signIntent(intent) }, creds);
  t.equal(r.statusCode, 202, r.body);
  return r.json();
}

async function setup(t: Test) {
  const clock = tickingClock();
  let transactions!: TransactionService;
  const s = await vaultApp(t, { now: clock, transactions: (vaults) => (transactions = new TransactionService({ vaults, hasBackend: () => true, now: clock })) });
  const wallet = async (org: string, vaultId: string, account: number) => (await s.vaults.createWallet(org, vaultId, 'evm-local', account, undefined)).wallet;
  const v1 = await activeVault(s.vaults, s.org.id);
  const v2 = await activeVault(s.vaults, s.org.id);
  const w1 = await wallet(s.org.id, v1.id, 0);
  const w2 = await wallet(s.org.id, v1.id, 1);
  const w3 = await wallet(s.org.id, v2.id, 0);
  const secretB = ed25519.utils.randomSecretKey();
  const b = await s.vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(secretB)));
  const credsB = { keyId: b.key.id, secretKey: secretB };
  const vB = await activeVault(s.vaults, b.org.id);
  const wB = await wallet(b.org.id, vB.id, 0);

  // Twelve of A's across its three wallets, B's two in between.
  const plan = [w1, w2, w3, w1, w1, w3, w2, w1, w3, w2, w1, w3];
  const txs: TransactionRecord[] = [];
  const txsB: TransactionRecord[] = [];
  for (const [i, w] of plan.entries()) {
    txs.push(await submit(t, s.call, s.creds, s.org.id, w, `a-${i}`));
    if (i === 3 || i === 8) txsB.push(await submit(t, s.call, credsB, b.org.id, wB, `b-${i}`));
  }
  // State changes as the worker stores them (with the record they replace), and one as an older writer
  // did, without: its `created` entries stay behind.
  const move = async (i: number, state: TransactionState, withPrev = true) => {
    const prev = (await s.store.get<TransactionRecord>('transactions', txs[i]!.id))!;
    const next = { ...prev, state, updated_at: clock().toISOString() };
    await s.store.batch([withPrev ? transactions.txOp(next, prev) : transactions.txOp(next)]);
    txs[i] = { ...txs[i]!, state };
  };
  await move(1, 'failed');
  await move(4, 'final');
  await move(8, 'final');
  await move(10, 'rejected');
  await move(0, 'checks');
  await move(0, 'signed');
  await move(6, 'broadcast', false);
  return { ...s, transactions, v1, v2, w1, w2, w3, vB, wB, credsB, txs, txsB, clock };
}

t.test('a walk in small pages lists every transaction of the organization once, oldest first', async (t) => {
  const { call, txs, txsB, credsB } = await setup(t);
  for (const limit of [1, 5, 12]) {
    const w = await walk(t, call, '/v1/transactions', limit);
    t.same(w.ids, txs.map((x) => x.id), `limit ${limit}: in submission order, each once, none of B's`);
  }
  const b = await walk(t, call, '/v1/transactions', 1, credsB);
  t.same(b.ids, txsB.map((x) => x.id), 'B lists its two');
  const page = (await call('GET', '/v1/transactions?limit=3')).json();
  t.same(page.data[0], (await call('GET', `/v1/transactions/${txs[0]!.id}`)).json(), 'an item is the transaction as GET /v1/transactions/{id} shows it');
});

t.test('transactions submitted during a walk come at its end; none repeats, none is skipped', async (t) => {
  const { call, creds, org, txs, w1 } = await setup(t);
  const seen: string[] = [];
  const added: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await call('GET', `/v1/transactions?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const body = r.json() as { data: { id: string }[]; next_cursor: string | null };
    seen.push(...body.data.map((d) => d.id));
    cursor = body.next_cursor;
    if (added.length < 3) added.push((await submit(t, call, creds, org.id, w1, `during-${added.length}`)).id);
  } while (cursor);
  t.same(seen, [...txs.map((x) => x.id), ...added], 'the original twelve in order, then the new ones');
});

t.test('filters: vault, wallet, state and their combinations, each in pages and in order', async (t) => {
  const { call, txs, v1, v2, w1, w2, w3, vB, wB } = await setup(t);
  const ids = (f: (x: TransactionRecord) => boolean) => txs.filter(f).map((x) => x.id);
  const cases: [string, string[]][] = [
    [`vault_id=${v1.id}`, ids((x) => x.vault_id === v1.id)],
    [`vault_id=${v2.id}`, ids((x) => x.vault_id === v2.id)],
    [`wallet_id=${w2.id}`, ids((x) => x.wallet_id === w2.id)],
    [`wallet_id=${w2.id}&vault_id=${v1.id}`, ids((x) => x.wallet_id === w2.id)],
    [`wallet_id=${w3.id}&vault_id=${v1.id}`, []],
    ['state=final', ids((x) => x.state === 'final')],
    ['state=created', ids((x) => x.state === 'created')],
    ['state=broadcast', ids((x) => x.state === 'broadcast')],
    ['state=signed', ids((x) => x.state === 'signed')],
    ['state=checks', []],
    [`vault_id=${v1.id}&state=final`, ids((x) => x.vault_id === v1.id && x.state === 'final')],
    [`vault_id=${v2.id}&state=created`, ids((x) => x.vault_id === v2.id && x.state === 'created')],
    [`wallet_id=${w1.id}&state=created`, ids((x) => x.wallet_id === w1.id && x.state === 'created')],
    [`wallet_id=${w2.id}&state=broadcast`, ids((x) => x.wallet_id === w2.id && x.state === 'broadcast')],
    [`wallet_id=${w1.id}&vault_id=${v1.id}&state=rejected`, ids((x) => x.wallet_id === w1.id && x.state === 'rejected')],
    // Another organization's vault or wallet, or none at all: nothing, and its entries are not read.
    [`vault_id=${vB.id}`, []],
    [`wallet_id=${wB.id}`, []],
    [`wallet_id=${wB.id}&state=created`, []],
    ['vault_id=vlt_missing', []],
  ];
  for (const [q, want] of cases) t.same((await walk(t, call, `/v1/transactions?${q}`, 2)).ids, want, q);
  t.ok(ids((x) => x.state === 'broadcast').length === 1 && ids((x) => x.state === 'final').length === 2, 'the fixture has the states it means to');
});

t.test('a state change moves the transaction between state entries; a stale entry is never listed', async (t) => {
  const { store, org, txs } = await setup(t);
  const entries = async (state: string) => (await store.byIndex<TransactionRecord>('transactions', `org-state/${org.id}/${state}/`)).map((x) => x.id);
  t.notOk((await entries('created')).includes(txs[4]!.id), 'a transaction moved with the record it replaced leaves its old state\'s entries');
  t.notOk((await entries('checks')).includes(txs[0]!.id), 'also those of a state in between');
  t.ok((await entries('final')).includes(txs[4]!.id));
  t.ok((await entries('created')).includes(txs[6]!.id), 'one moved without it keeps a stale entry (the filter above still skipped it)');
});

t.test('a cursor serves only its own list, filters and organization; bad queries are 400', async (t) => {
  const { call, credsB, v1, v2 } = await setup(t);
  const first = (await call('GET', `/v1/transactions?vault_id=${v1.id}&state=created&limit=2`)).json();
  t.equal(first.has_more, true);
  const c = encodeURIComponent(first.next_cursor);
  t.equal((await call('GET', `/v1/transactions?vault_id=${v1.id}&state=created&limit=2&cursor=${c}`)).statusCode, 200, 'with the same filters it goes on');
  for (const q of [`vault_id=${v1.id}&state=final`, `vault_id=${v2.id}&state=created`, 'state=created', `vault_id=${v1.id}`, `vault_id=${v1.id}&state=created&wallet_id=wal_x`]) {
    const r = await call('GET', `/v1/transactions?${q}&cursor=${c}`);
    t.equal(r.statusCode, 400, `filters changed to ${q}`);
    t.equal(r.json().code, 'cursor_filter_mismatch', `filters changed to ${q}`);
  }
  const byB = await call('GET', `/v1/transactions?vault_id=${v1.id}&state=created&cursor=${c}`, undefined, credsB);
  t.equal(byB.statusCode, 400, 'B presenting A\'s cursor with the same filters');
  t.equal(byB.json().code, 'invalid_cursor');
  t.equal((await call('GET', `/v1/vaults?cursor=${c}`)).json().code, 'invalid_cursor', 'on the vault list');
  const vaultsCursor = (await call('GET', '/v1/vaults?limit=1')).json().next_cursor as string;
  t.equal((await call('GET', `/v1/transactions?cursor=${encodeURIComponent(vaultsCursor)}`)).json().code, 'invalid_cursor', 'the vault list\'s cursor here');
  await refusesForgedCursors(t, call, `/v1/transactions?vault_id=${v1.id}&state=created`, first.next_cursor);

  await refusesBadLimits(t, call, '/v1/transactions');
  for (const [what, q, names] of [
    ['an unknown state', 'state=pending', /state.*one of awaiting_approval, created, checks/], ['an empty vault_id', 'vault_id=', /vault_id/],
    ['a wallet_id of 65 characters', `wallet_id=${'w'.repeat(65)}`, /wallet_id/], ['an unknown parameter', 'tx_hash=0x00', /tx_hash.*Unexpected property/],
    ['a vault_id given twice', `vault_id=${v1.id}&vault_id=${v2.id}`, /vault_id/],
  ] as const) {
    const r = await call('GET', `/v1/transactions?${q}`);
    t.equal(r.statusCode, 400, what);
    t.equal(r.json().code, 'invalid_request', what);
    t.match(r.json().error, names, `${what}: the message names the parameter`);
  }
});

t.test('transactions stored before the organization and state indexes existed are listed once the store opens', async (t) => {
  const { call, store, vaults, transactions, org, creds, txs, v1, w1 } = await setup(t);
  // A transaction as an earlier version stored it: idempotency, vault and wallet entries only.
  const old: TransactionRecord = { ...(await store.get<TransactionRecord>('transactions', txs[3]!.id))!, id: 'txn_' + 'e'.repeat(24), idempotency_key: 'old-1', state: 'created', created_at: new Date(Date.now() + 60_000).toISOString() };
  await store.batch([{
    type: 'put', collection: 'transactions', id: old.id, value: old,
    index: [`idem/${org.id}/old-1`, `vault/${v1.id}/${old.created_at}/${old.id}`, `wallet/${w1.id}/${old.created_at}/${old.id}`],
  }, { type: 'del', collection: 'index_versions', id: 'transactions' }]);
  t.notOk((await walk(t, call, '/v1/transactions', 25)).ids.includes(old.id), 'before: the organization\'s list does not see it');

  // The API opens again over the same store.
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: mkdtempSync(join(tmpdir(), 'api-')) }), logger: createLogger('api', 'silent'), vaults, transactions });
  t.teardown(() => app.close());
  const reopened: Call = (method, path, body, c = creds) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(c, method, `http://api.test${path}`, payload) } });
  };
  t.equal(await store.get('index_versions', 'transactions'), 1, 'the reindex ran and its version is kept');
  const all = txs.map((x) => x.id);
  t.same((await walk(t, reopened, '/v1/transactions', 5)).ids, [...all, old.id], 'after: listed once, last (the newest)');
  t.same((await walk(t, reopened, '/v1/transactions?state=created', 2)).ids, [...txs.filter((x) => x.state === 'created').map((x) => x.id), old.id], 'and under its state');
  t.same((await walk(t, reopened, `/v1/transactions?wallet_id=${w1.id}&state=created`, 2)).ids, [...txs.filter((x) => x.wallet_id === w1.id && x.state === 'created').map((x) => x.id), old.id], 'and under its wallet\'s state');
  t.same((await walk(t, call, '/v1/transactions', 25)).ids, [...all, old.id], 'the first app, on the same store, sees it too');
});
