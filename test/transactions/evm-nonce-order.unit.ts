// EVM transactions name their nonce (docs/transactions.md "Nonces"), so the worker signs each one only
// when the chain's next nonce of the wallet is its own, on a real anvil: transactions submitted out of
// nonce order wait for the ones below them and then all mine, in order; a transaction that fails before
// it was sent releases its nonce, a later one waits for it (and says so), and the next prepare fills the
// gap; a transaction whose nonce the chain has already used fails `nonce_used`, unsigned.
import t from 'tap';
import { parseEther, type Hex } from 'viem';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { signingCoordinator } from '../api/wallets/wallet-app.ts';
import { CustodyClient, type SendEvmParameters } from '../../api/sdk/client.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import { createLogger } from '../../common/logger.ts';
import { anvilWallet } from '../api/wallets/anvil-wallet.ts';
import { injectFetch } from '../support/inject-fetch.ts';

const BOB = '0x00000000000000000000000000000000000000b0' as Hex;

t.test('a wallet\'s transactions are signed in nonce order, wait over a released nonce, and refuse a used one', async (t) => {
  const { anvil, chains, s, secret, chainCode, w, address } = await anvilWallet(t);
  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator: signingCoordinator(secret, chainCode), chains, log: createLogger('worker', 'silent'), pollMs: 50 });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey, fetch: injectFetch(s.app) });
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;
  const ended = (id: string) => waitUntil(async () => {
    const tx = await stored(id);
    if (tx.state === 'confirmed') await anvil.testClient.mine({ blocks: 1 });
    return ['final', 'failed', 'rejected'].includes(tx.state);
  }, 60_000, `${id} to end`, 50);
  const base = { wallet: w, to: BOB, amount: 1000n } as const;
  /** Built and signed at the nonce prepare reserves, not submitted yet. */
  const prepared = (key: string, over: Partial<SendEvmParameters> = {}) => client.prepareEvm({ ...base, idempotencyKey: key, ...over });

  // Out of nonce order: the later nonce is submitted first and waits for the earlier one.
  const first = await prepared('first');
  const second = await prepared('second');
  const b = await client.submitTransaction(second.body);
  t.equal(b.nonce, 1);
  await waitUntil(async () => (await stored(b.id)).waiting !== undefined, 10_000, 'the second to wait', 50);
  t.match((await client.getTransaction(b.id)).waiting, /nonce 1 waits for nonce 0/, 'GET /v1/transactions/{id} says what it waits for');
  t.equal((await stored(b.id)).tx_hash, null, 'nothing signed while it waits');
  const a = await client.submitTransaction(first.body);
  await ended(a.id);
  await ended(b.id);
  t.same([(await stored(a.id)).state, (await stored(b.id)).state], ['final', 'final'], 'both mine');
  t.notOk((await client.getTransaction(b.id)).waiting, 'no longer waiting');
  t.equal(await anvil.publicClient.getTransactionCount({ address }), 2);

  // A transfer the wallet cannot pay fails unsigned and releases nonce 2; the one prepared after it (3) waits.
  const over = await prepared('overspend', { amount: parseEther('5') });
  const later = await prepared('later');
  const failing = await client.submitTransaction(over.body);
  const waiting = await client.submitTransaction(later.body);
  t.equal([failing.nonce, waiting.nonce].join(), '2,3');
  await ended(failing.id);
  const f = await stored(failing.id);
  t.equal(f.state, 'failed');
  t.match(f.reason, /^insufficient_funds: .*nonce 2 is released/, 'the reason says the nonce is released');
  await waitUntil(async () => (await stored(waiting.id)).waiting !== undefined, 10_000, 'the later one to wait', 50);
  t.equal((await stored(waiting.id)).state, 'checks', 'it waits, unsigned');
  // The next send fills the gap; then the waiting one goes on.
  const filler = await client.sendEvm({ ...base, idempotencyKey: 'filler' });
  t.equal(filler.nonce, 2, 'the next prepare gives out the released nonce');
  await ended(filler.id);
  await ended(waiting.id);
  t.same([(await stored(filler.id)).state, (await stored(waiting.id)).state], ['final', 'final']);

  // An intent at a nonce the chain has used: failed, never signed, its nonce not released.
  const stale = await client.prepareEvm({ ...base, idempotencyKey: 'stale', nonce: 0n });
  const s0 = await client.submitTransaction(stale.body);
  await ended(s0.id);
  const r = await stored(s0.id);
  t.equal(r.state, 'failed');
  t.match(r.reason, /^nonce_used: nonce 0 .* is used already/);
  t.notMatch(r.reason, /released/, 'a used nonce is not released');
  t.equal(r.tx_hash, null, 'nothing signed');
  t.equal(await anvil.publicClient.getTransactionCount({ address }), 4, 'four transactions mined, no more');
});
