// The platform API's wallets (docs/platform/wallets.md, docs/customers.md "Wallets: one resource, one
// path"): GET /v1/wallets/{id} answers a request signature and a bearer key of the linked workspace
// alike, and 404 to every other customer; the history pages newest first from the transactions' index;
// decommissioning is permissioned, audited, idempotent, refused while a transaction is in flight, and
// then refuses new transactions without changing anything.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { walletApp } from './wallet-app.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import type { TransactionRecord, TransactionState } from '../../../api/transactions/records.ts';
import type { WalletRecord } from '../../../api/vaults/records.ts';
import type { AuditEntry } from '../../../api/tenancy/audit-log.ts';

const BOB = '0x00000000000000000000000000000000000000b0';

/** A stored transaction of `w` in `state`, made at `at` (the worker is not running in these tests). */
function txOf(w: WalletRecord, id: string, state: TransactionState, at: string): TransactionRecord {
  return {
    id, org: w.org, vault_id: w.vault_id, wallet_id: w.id, chain: w.chain, family: 'evm', state, idempotency_key: `k-${id}`, request_hash: 'h', intent: '00', intent_signature: '00',
    api_key_id: 'key', intent_sha256: '00', transfers: [{ recipient: BOB, asset: `${w.chain}:native`, amount: '1' }], tx_hash: null, reason: null, fee: null, created_at: at, updated_at: at,
  };
}

t.test('GET /v1/wallets/{id}: one route, either credential, the linked organization only', async (t) => {
  const s = await walletApp(t);
  const { vault } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id);
  const url = `/v1/wallets/${w.id}`;

  const bySignature = await s.signed('GET', url);
  t.equal(bySignature.statusCode, 200, 'a request signature, as before');
  t.same(bySignature.json(), { id: w.id, vault_id: vault.id, chain: 'evm-local', address_type: 'evm', account_index: 0, address: w.address, derivation_path: w.derivation_path, created_at: w.created_at, state: 'active', decommissioned_at: null });
  const byBearer = await s.bearer('GET', url);
  t.equal(byBearer.statusCode, 200, 'a bearer key of the linked workspace');
  t.same(byBearer.json(), bySignature.json(), 'the same wallet, the same view');
  for (const role of ['developer', 'viewer']) t.equal((await s.bearer('GET', url, undefined, await s.acme.key(role))).statusCode, 200, `${role} has wallet.read`);

  const denied = await s.bearer('GET', url, undefined, await s.acme.key('brand_manager'));
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().code, 'role_denied', 'brand_manager lacks wallet.read');

  const missing = await s.bearer('GET', '/v1/wallets/wal_000000000000000000000000');
  t.equal(missing.statusCode, 404);
  const expected = missing.json();
  t.same(expected, { error: 'no such wallet', code: 'not_found', request_id: missing.headers['x-request-id'] });
  // Another workspace of the same tenant, another customer, an unlinked tenant: all as for no wallet.
  const production = await s.acme.key('owner', s.acme.production.id);
  const unlinked = await s.platform.tenancy.createTenant('Solo');
  const solo = (await s.platform.tenancy.createKey(unlinked.sandbox.id, 'owner')).token;
  for (const [what, token] of [['the tenant\'s production workspace', production], ['another customer', s.globex.owner], ['an unlinked tenant', solo]] as const) {
    const r = await s.bearer('GET', url, undefined, token);
    t.equal(r.statusCode, 404, what);
    // Each answer names its own request; all else is the same.
    t.same(r.json(), { ...expected, request_id: r.headers['x-request-id'] }, `${what}: the answer for a wallet that does not exist`);
  }
  t.equal((await s.signed('GET', url, undefined, s.globex.creds)).statusCode, 404, 'another organization\'s signature, as before');

  const badKey = await s.bearer('GET', url, undefined, 'svc_test_not-a-key');
  t.equal(badKey.statusCode, 401, 'a bearer key that does not authenticate is 401; no fall back to the signature');
  t.equal(badKey.json().code, 'unauthorized');
  t.equal((await s.app.inject({ method: 'GET', url })).statusCode, 401, 'no credential at all');
  t.equal((await s.bearer('GET', `/v1/wallets/${'x'.repeat(65)}`)).statusCode, 400, 'a malformed id is 400');

  // A wallet stored before decommissioning existed reads as active.
  const { state: _state, ...legacy } = w;
  await s.store.put('wallets', w.id, legacy);
  t.equal((await s.bearer('GET', url)).json().state, 'active');

  const doc = (await s.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { security?: unknown; tags?: unknown }>> };
  t.same(doc.paths['/v1/wallets/{walletId}']!.get!.security, [{ httpSignature: [] }, { bearer: [] }], 'the document lists both alternatives');
  for (const [path, method] of [['/v1/wallets/{walletId}/balance', 'get'], ['/v1/wallets/{walletId}/history', 'get'], ['/v1/wallets/{walletId}/ledger', 'get'], ['/v1/wallets/{walletId}/decommission', 'post'], ['/v1/wallets/{walletId}/qr', 'post']] as const) {
    t.same(doc.paths[path]?.[method]?.tags, ['wallets'], `${method} ${path} is documented under wallets`);
  }
});

t.test('GET /v1/wallets/{id}/history: newest first, paginated, filtered by state, per wallet', async (t) => {
  const s = await walletApp(t);
  const { vault } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id);
  const other = await s.wallet(s.acme.org, vault.id, 'evm-local', 1);
  const made = [
    txOf(w, 'txn_a', 'final', '2030-01-01T00:00:01.000Z'), txOf(w, 'txn_b', 'failed', '2030-01-01T00:00:02.000Z'),
    txOf(w, 'txn_c', 'final', '2030-01-01T00:00:03.000Z'), txOf(other, 'txn_d', 'final', '2030-01-01T00:00:04.000Z'),
  ];
  await s.store.batch(made.map((x) => s.transactions.txOp(x)));

  const first = await s.bearer('GET', `/v1/wallets/${w.id}/history?limit=2`);
  t.equal(first.statusCode, 200, first.body);
  const p1 = first.json() as { data: { id: string }[]; has_more: boolean; next_cursor: string | null };
  t.same(p1.data.map((x) => x.id), ['txn_c', 'txn_b'], 'newest first; the other wallet\'s transaction is not listed');
  t.equal(p1.has_more, true);
  const p2 = (await s.bearer('GET', `/v1/wallets/${w.id}/history?limit=2&cursor=${encodeURIComponent(p1.next_cursor!)}`)).json() as typeof p1;
  t.same(p2.data.map((x) => x.id), ['txn_a']);
  t.same([p2.has_more, p2.next_cursor], [false, null]);
  t.same((await s.bearer('GET', `/v1/wallets/${w.id}/history?state=final`)).json().data.map((x: { id: string }) => x.id), ['txn_c', 'txn_a'], 'a state filter');

  const foreign = await s.bearer('GET', `/v1/wallets/${other.id}/history?cursor=${encodeURIComponent(p1.next_cursor!)}`);
  t.equal(foreign.statusCode, 400, 'a cursor of another wallet\'s history is refused');
  t.equal(foreign.json().code, 'invalid_cursor');
  for (const q of ['limit=0', 'limit=101', 'limit=ten', 'state=lost', 'colour=red']) t.equal((await s.bearer('GET', `/v1/wallets/${w.id}/history?${q}`)).statusCode, 400, `?${q} is 400`);
  t.equal((await s.bearer('GET', `/v1/wallets/${w.id}/history`, undefined, s.globex.owner)).statusCode, 404, 'another customer');
  t.equal((await s.bearer('GET', `/v1/wallets/${w.id}/history`, undefined, await s.acme.key('brand_manager'))).statusCode, 403);
  t.equal((await s.bearer('GET', `/v1/wallets/${w.id}/ledger`, undefined, s.globex.owner)).statusCode, 404, 'nor its ledger');
  t.same((await s.bearer('GET', `/v1/wallets/${w.id}/ledger`)).json(), { data: [], next_cursor: null, has_more: false }, 'no entry without money moved');
});

t.test('POST /v1/wallets/{id}/decommission: owners only, audited once, idempotent, refused while a transaction is in flight', async (t) => {
  const s = await walletApp(t);
  const { vault } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id);
  const spare = await s.wallet(s.acme.org, vault.id, 'evm-local', 1);
  const url = `/v1/wallets/${w.id}/decommission`;
  const audit = async () => (await s.platform.audit.list(s.acme.sandbox.id)).filter((e: AuditEntry) => e.action === 'wallet.decommission');
  const stateOf = async (id: string) => (await s.store.get<WalletRecord>('wallets', id))!.state ?? 'active';

  for (const role of ['developer', 'viewer', 'brand_manager']) {
    const r = await s.bearer('POST', url, undefined, await s.acme.key(role));
    t.equal(r.statusCode, 403, `${role} may not`);
    t.equal(r.json().code, 'role_denied');
  }
  t.equal((await s.bearer('POST', url, undefined, s.globex.owner)).statusCode, 404, 'another customer\'s wallet');
  const badBody = await s.bearer('POST', url, { reason: 'old' });
  t.equal(badBody.statusCode, 400, 'an unknown body field');
  t.equal(await stateOf(w.id), 'active', 'nothing changed by a refused call');

  for (const state of ['created', 'checks', 'signed', 'broadcast', 'confirmed'] as const) {
    await s.store.batch([s.transactions.txOp(txOf(w, 'txn_busy', state, '2030-01-01T00:00:00.000Z'), await s.store.get<TransactionRecord>('transactions', 'txn_busy'))]);
    const busy = await s.bearer('POST', url);
    t.equal(busy.statusCode, 409, `a transaction in ${state}`);
    t.equal(busy.json().code, 'transactions_in_flight');
  }
  t.equal(await stateOf(w.id), 'active');
  t.same(await audit(), [], 'a refusal is not audited');
  await s.store.batch([s.transactions.txOp(txOf(w, 'txn_busy', 'final', '2030-01-01T00:00:00.000Z'), await s.store.get<TransactionRecord>('transactions', 'txn_busy'))]);

  const done = await s.bearer('POST', url, undefined, s.acme.owner, { 'idempotency-key': 'retire-1' });
  t.equal(done.statusCode, 200, done.body);
  t.equal(done.json().state, 'decommissioned');
  t.match(done.json().decommissioned_at, /^\d{4}-\d\d-\d\dT/);
  const again = await s.bearer('POST', url);
  t.equal(again.statusCode, 200, 'a second call answers the wallet as it is');
  t.same(again.json(), done.json(), 'with the same decommissioned_at');
  t.same((await s.bearer('POST', url, undefined, s.acme.owner, { 'idempotency-key': 'retire-1' })).json(), done.json(), 'a replay under its key');
  const entries = await audit();
  t.equal(entries.length, 1, 'audited once');
  t.same([entries[0]!.resource_id, entries[0]!.actor.type, (entries[0]!.before as { state: string }).state, (entries[0]!.after as { state: string }).state], [w.id, 'api_key', 'active', 'decommissioned']);
  const reused = await s.bearer('POST', `/v1/wallets/${spare.id}/decommission`, undefined, s.acme.owner, { 'idempotency-key': 'retire-1' });
  t.equal(reused.statusCode, 409, 'the key names the other wallet');
  t.equal(reused.json().code, 'idempotency_key_reused');
  t.equal(await stateOf(spare.id), 'active');
  t.equal((await s.signed('GET', `/v1/wallets/${w.id}`)).json().state, 'decommissioned', 'the vault API sees the same wallet');

  // Deriving it again answers it as it is: decommissioned, never silently active again.
  const derived = await s.signed('POST', `/v1/vaults/${vault.id}/wallets`, { chain: 'evm-local' });
  t.equal(derived.statusCode, 200);
  t.same([derived.json().id, derived.json().state], [w.id, 'decommissioned']);
  const qr = await s.bearer('POST', `/v1/wallets/${w.id}/qr`, {});
  t.equal(qr.statusCode, 409);
  t.equal(qr.json().code, 'wallet_decommissioned', 'no payment request to a decommissioned wallet');
});

t.test('a decommissioned wallet takes no transaction, and the refusal changes nothing', async (t) => {
  const s = await walletApp(t);
  const { vault } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id);
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey });
  const submit = async (key: string) => {
    const intent = await client.evmIntent({ wallet: w, to: BOB, amount: 5n, idempotencyKey: key, nonce: key === 'before' ? 0n : 1n });
    return s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: key, intent_signature: client.signIntent(intent) });
  };
  const before = await submit('before');
  t.equal(before.statusCode, 202, 'accepted while active');
  const beforeId = before.json().id as string;
  await s.store.batch([s.transactions.txOp({ ...(await s.store.get<TransactionRecord>('transactions', beforeId))!, state: 'final' }, await s.store.get<TransactionRecord>('transactions', beforeId))]);
  t.equal((await s.bearer('POST', `/v1/wallets/${w.id}/decommission`)).statusCode, 200);

  const count = async (collection: string) => {
    let n = 0;
    for await (const _ of s.store.all(collection)) n++;
    return n;
  };
  const snapshot = async () => [await count('transactions'), await count('tx_jobs'), await count('outbox'), await count('evm_nonce_holds'), await count('ledger')];
  const was = await snapshot();
  const refused = await submit('after');
  t.equal(refused.statusCode, 409);
  t.equal(refused.json().code, 'wallet_decommissioned');
  t.same(await snapshot(), was, 'no transaction, job, event, nonce or ledger entry');
  const replay = await submit('before');
  t.equal(replay.statusCode, 202, 'the retry of a transaction accepted before is answered as it was');
  t.equal(replay.json().id, beforeId);
  t.same(await snapshot(), was);
});
