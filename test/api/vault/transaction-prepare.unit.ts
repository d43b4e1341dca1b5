// POST /v1/transactions/prepare and the nonce an EVM intent names (docs/transactions.md "Nonces"): the
// API reserves each idempotency key a nonce of its own, answers the same key with the same one, holds a
// submitted transaction's nonce against every other, lets a reservation nobody used lapse, and refuses
// intents that leave the nonce or the Bitcoin inputs to the service. Every refusal reads the store back.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { RESERVATION_SECONDS } from '../../../api/transactions/evm-nonces.ts';
import { decodeIntent, encodeIntent, signIntent, type EvmTransferIntent } from '../../../core/intents/intent.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { injectFetch } from '../../support/inject-fetch.ts';

const BOB = '0x00000000000000000000000000000000000000b0';

async function setup(t: Test) {
  let nowMs = Date.now();
  const clock = () => new Date(nowMs);
  let transactions!: TransactionService;
  const s = await vaultApp(t, { transactions: (vaults) => (transactions = new TransactionService({ vaults, hasBackend: () => true, now: clock })) });
  const v = await s.vaults.createVault(s.org.id, { tier: 'hosted' });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) };
  await s.store.batch([s.vaults.vaultOp(active)]);
  const evm = (await s.vaults.createWallet(s.org.id, active.id, 'evm-local', 0, undefined)).wallet;
  const btc = (await s.vaults.createWallet(s.org.id, active.id, 'bitcoin-regtest', 0, undefined)).wallet;
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.org.id, keyId: s.creds.keyId, secretKey: s.creds.secretKey, fetch: injectFetch(s.app) });
  const prepare = (key: string, extra: Record<string, unknown> = {}, wallet = evm.id) => s.call('POST', '/v1/transactions/prepare', { wallet_id: wallet, idempotency_key: key, ...extra });
  const submitIntent = (bytes: Uint8Array, key: string) =>
    s.call('POST', '/v1/transactions', { wallet_id: evm.id, intent: bytesToHex(bytes), idempotency_key: key, intent_signature: bytesToHex(signIntent(bytes, s.creds.secretKey)) });
  const count = async (collection: string) => {
    let n = 0;
    for await (const _ of s.store.all(collection)) n++;
    return n;
  };
  const snapshot = async () => [await count('transactions'), await count('tx_jobs'), await count('evm_nonce_holds')];
  return { s, evm, btc, client, prepare, submitIntent, snapshot, transactions: () => transactions, advance: (seconds: number) => { nowMs += seconds * 1000; } };
}

t.test('each idempotency key gets a nonce of its own, the same one again, and the SDK sends at it in one call', async (t) => {
  const { s, evm, client, prepare } = await setup(t);
  const a = await prepare('pay-a');
  t.equal(a.statusCode, 200, a.body);
  t.match(a.json(), { wallet_id: evm.id, chain: 'evm-local', chain_id: 31337, address: evm.address, nonce: 0 });
  t.ok(Math.abs(a.json().not_after - (Math.floor(Date.now() / 1000) + 3600)) <= 5, 'not_after an hour ahead by default');
  t.same((await prepare('pay-a')).json(), a.json(), 'the same key: the same nonce and not_after');
  t.equal((await prepare('pay-b')).json().nonce, 1, 'another key: the next nonce');
  const sent = await client.sendEvm({ wallet: evm, to: BOB, amount: 5n, idempotencyKey: 'pay-c' });
  t.equal(sent.nonce, 2, 'sendEvm reserves and sends at the next free nonce');
  t.equal((await prepare('pay-c')).json().nonce, 2, 'a submitted key answers its transaction\'s nonce');
  // A retry of the whole call builds the same bytes: the API answers it as a replay.
  const again = await client.sendEvm({ wallet: evm, to: BOB, amount: 5n, idempotencyKey: 'pay-c' });
  t.equal(again.id, sent.id, 'a retried send is the same transaction');
  const stored = await s.store.get<{ nonce: number; intent: string }>('transactions', sent.id);
  t.equal(stored!.nonce, 2);
});

t.test('a nonce held by a transaction or by another key\'s reservation is refused, and the refusal changes nothing', async (t) => {
  const { evm, client, prepare, submitIntent, snapshot } = await setup(t);
  const reserved = (await prepare('holder')).json().nonce as number;
  const build = (key: string, nonce: bigint) => client.evmIntent({ wallet: evm, to: BOB, amount: 7n, idempotencyKey: key, nonce });
  let before = await snapshot();
  const taken = await submitIntent(await build('thief', BigInt(reserved)), 'thief');
  t.equal(taken.statusCode, 409);
  t.equal(taken.json().code, 'nonce_taken');
  t.match(taken.json().error, /reserved for another idempotency key/);
  t.same(await snapshot(), before, 'nothing stored');

  t.equal((await submitIntent(await build('holder', BigInt(reserved)), 'holder')).statusCode, 202, 'the key that reserved it sends at it');
  before = await snapshot();
  const twice = await submitIntent(await build('second', BigInt(reserved)), 'second');
  t.equal(twice.statusCode, 409);
  t.match(twice.json(), { code: 'nonce_taken', error: /held by transaction txn_/ });
  t.same(await snapshot(), before, 'nothing stored');
  // A nonce nobody holds may be named directly (the customer keeps its own count).
  t.equal((await submitIntent(await build('own-count', 9n), 'own-count')).statusCode, 202);
  t.equal((await prepare('next')).json().nonce, 1, 'prepare skips what transactions hold and fills the lowest free nonce');
});

t.test('a reservation nobody used lapses; its nonce goes to the next key and the late submission is refused', async (t) => {
  const { client, evm, prepare, submitIntent, advance } = await setup(t);
  const late = await prepare('late');
  t.equal(late.json().nonce, 0);
  const lateIntent = await client.evmIntent({ wallet: evm, to: BOB, amount: 1n, idempotencyKey: 'late', nonce: 0n, notAfter: BigInt(late.json().not_after) });
  t.equal((await prepare('early')).json().nonce, 1, 'while it is reserved, the next key gets nonce 1');
  advance(RESERVATION_SECONDS + 1);
  t.equal((await prepare('fresh')).json().nonce, 0, 'lapsed: nonce 0 is given out again');
  t.equal((await submitIntent(await client.evmIntent({ wallet: evm, to: BOB, amount: 1n, idempotencyKey: 'fresh', nonce: 0n }), 'fresh')).statusCode, 202);
  const refused = await submitIntent(lateIntent, 'late');
  t.equal(refused.statusCode, 409, 'only one transaction holds a nonce: the late one is refused');
  t.equal(refused.json().code, 'nonce_taken');
  t.equal((await prepare('late')).json().nonce, 1, 'the late key gets a new nonce (1 lapsed too) and signs new bytes');
});

t.test('a refused submission lets go of its key\'s reservation, so later transactions do not wait on it', async (t) => {
  const { s, evm, client, prepare, snapshot } = await setup(t);
  const p = await client.prepareEvm({ wallet: evm, to: BOB, amount: 3n, idempotencyKey: 'refused' });
  t.equal((await prepare('refused')).json().nonce, 0, 'reserved');
  const before = await snapshot();
  const r = await s.call('POST', '/v1/transactions', { ...p.body, intent_signature: '00'.repeat(64) });
  t.equal(r.statusCode, 403, 'a bad signature is refused');
  t.same(await snapshot(), [before[0], before[1], before[2]! - 1], 'no transaction stored; the reservation is gone');
  t.equal((await prepare('next')).json().nonce, 0, 'the next key gets the nonce');
  // The refused key, sent again properly, prepares again and gets a nonce of its own.
  const again = await client.sendEvm({ wallet: evm, to: BOB, amount: 3n, idempotencyKey: 'refused' });
  t.equal(again.nonce, 1);
});

t.test('intents that leave the nonce or the inputs to the service are refused before anything is stored', async (t) => {
  const { s, evm, btc, client, prepare, submitIntent, snapshot } = await setup(t);
  const before = await snapshot();
  // The same intent as version 1: no nonce.
  const { nonce: _n, ...rest } = decodeIntent(await client.evmIntent({ wallet: evm, to: BOB, amount: 7n, idempotencyKey: 'v1', nonce: 0n })) as EvmTransferIntent;
  const noNonce = await submitIntent(encodeIntent(rest), 'v1');
  t.equal(noNonce.statusCode, 400);
  t.match(noNonce.json(), { code: 'invalid_request', error: /names no nonce.*prepare/ });
  // The convenience fields without a nonce name a version 1 intent too.
  const fields = { wallet_id: evm.id, to: BOB, amount: '7', not_after: Math.floor(Date.now() / 1000) + 600, idempotency_key: 'conv' };
  const conv = await s.call('POST', '/v1/transactions', { ...fields, intent_signature: '00'.repeat(64) });
  t.equal(conv.statusCode, 400);
  t.match(conv.json().error, /names no nonce/);
  // With the nonce, they work.
  const convIntent = await client.evmIntent({ wallet: evm, to: BOB, amount: 7n, idempotencyKey: 'conv', nonce: 4n, notAfter: BigInt(fields.not_after) });
  const ok = await s.call('POST', '/v1/transactions', { ...fields, nonce: 4, intent_signature: client.signIntent(convIntent) });
  t.equal(ok.statusCode, 202, ok.body);
  t.equal(ok.json().nonce, 4);
  const after = await snapshot();
  t.same(after, [before[0]! + 1, before[1]! + 1, before[2]! + 1], 'only the good one stored');

  // Bitcoin: no nonce to prepare; an intent naming no inputs is refused.
  const b = await prepare('btc', {}, btc.id);
  t.equal(b.statusCode, 400);
  t.match(b.json().error, /names the outputs it spends/);
  const open = encodeIntent({
    kind: 'btc.transfer', organization: s.org.id, walletId: btc.id, network: 'regtest', from: btc.address, outputs: [{ address: btc.address, amount: 1000n }],
    maxFeeRate: 5n, maxFee: 1000n, inputs: [], idempotencyKey: 'btc-open', notAfter: BigInt(Math.floor(Date.now() / 1000) + 600),
  });
  const r = await s.call('POST', '/v1/transactions', { wallet_id: btc.id, intent: bytesToHex(open), idempotency_key: 'btc-open', intent_signature: bytesToHex(signIntent(open, s.creds.secretKey)) });
  t.equal(r.statusCode, 400);
  t.match(r.json().error, /names no inputs/);
  t.same(await snapshot(), after, 'nothing stored');
});

t.test('prepare refuses bad input with its status and code', async (t) => {
  const { s, prepare, snapshot } = await setup(t);
  const before = await snapshot();
  const far = await prepare('far', { not_after: Math.floor(Date.now() / 1000) + 25 * 3600 });
  t.match([far.statusCode, far.json().code], [400, 'invalid_request']);
  t.match(far.json().error, /24 hours/);
  const past = await prepare('past', { not_after: 1000 });
  t.match([past.statusCode, past.json().error], [400, /passed/]);
  t.equal((await prepare('x', {}, 'wal_nope')).statusCode, 404);
  t.equal((await s.call('POST', '/v1/transactions/prepare', { wallet_id: 'w', idempotency_key: 'has space' })).statusCode, 400);
  t.equal((await s.call('POST', '/v1/transactions/prepare', { idempotency_key: 'k' })).statusCode, 400);
  t.same(await snapshot(), before, 'nothing stored');
});
