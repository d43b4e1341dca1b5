// A broadcast EVM transaction that can never be included ends `failed` (`dropped`) and releases its ledger
// holds (docs/transactions.md "Dropped transactions"): on a real anvil that mines only when told, the
// worker broadcasts a transfer, another transaction of the same wallet with the same nonce and a higher fee
// replaces it in the mempool (as a transaction sent outside the service would), blocks are mined to the
// finality depth, and the worker sees the nonce taken without a receipt of its own. A transaction that is
// merely waiting (its nonce not taken) stays `broadcast`, and one that is mined goes on to `final`.
import t from 'tap';
import { HDKey } from '@scure/bip32';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parseGwei, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { signingCoordinator } from '../api/wallets/wallet-app.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import { createLogger } from '../../common/logger.ts';
import { anvilWallet, DEV } from '../api/wallets/anvil-wallet.ts';
import { injectFetch } from '../support/inject-fetch.ts';

const BOB = '0x00000000000000000000000000000000000000b0' as Hex;

t.test('a transfer whose nonce another transaction took fails as dropped and releases its holds; a waiting one stays broadcast', async (t) => {
  const { anvil, chains, s, secret, chainCode, w, address } = await anvilWallet(t);
  await anvil.testClient.setAutomine(false);

  const worker = new TransactionWorker({
    vaults: s.vaults, transactions: s.transactions, coordinator: signingCoordinator(secret, chainCode), chains, log: createLogger('worker', 'silent'), pollMs: 50, dropCheckAfterMs: 0,
  });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey, fetch: injectFetch(s.app) });
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;
  const submit = async (key: string) => {
    const intent = await client.evmIntent({ wallet: w, to: BOB, amount: 1000n, idempotencyKey: key });
    const r = await s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: key, intent_signature: client.signIntent(intent) });
    t.equal(r.statusCode, 202, r.body);
    const id = r.json().id as string;
    await waitUntil(async () => (await stored(id)).state === 'broadcast', 30_000, `${key} to be broadcast`, 50);
    return id;
  };

  // Waiting in the mempool, its nonce not taken: blocks without it do not fail it.
  const id = await submit('drop-me');
  const tx = await stored(id);
  t.ok(await anvil.publicClient.getTransaction({ hash: tx.tx_hash as Hex }), 'in the mempool');
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await stored(id)).state, 'broadcast', 'waiting is not dropped');

  // The wallet's key signs another transaction with the same nonce and a higher fee, sent outside the service.
  const child = new HDKey({ privateKey: secret, chainCode }).derive(w.derivation_path);
  const account = privateKeyToAccount(`0x${bytesToHex(child.privateKey!)}`);
  t.equal(account.address.toLowerCase(), address.toLowerCase(), 'the wallet\'s own key');
  const block = await anvil.publicClient.getBlock();
  const replacement = await account.signTransaction({
    type: 'eip1559', chainId: 31337, nonce: tx.nonce!, to: DEV, value: 1n, gas: 21_000n,
    maxFeePerGas: block.baseFeePerGas! * 4n + parseGwei('50'), maxPriorityFeePerGas: parseGwei('50'),
  });
  await anvil.publicClient.sendRawTransaction({ serializedTransaction: replacement });
  await anvil.testClient.mine({ blocks: 3 });
  t.equal(await anvil.publicClient.getTransactionCount({ address }), tx.nonce! + 1, 'the nonce is used');

  await waitUntil(async () => (await stored(id)).state === 'failed', 30_000, 'the dropped transfer to fail', 50);
  const failed = await stored(id);
  t.match(failed.reason, new RegExp(`^dropped: nonce ${tx.nonce} was used by another transaction`), 'its reason');
  const ledger = (await s.bearer('GET', `/v1/wallets/${w.id}/ledger?limit=50`)).json().data as { kind: string; transaction_id: string; direction: string; amount: string }[];
  const mine = ledger.filter((e) => e.transaction_id === id);
  t.same(mine.map((e) => `${e.kind}/${e.direction}`).sort(), ['hold/debit', 'hold/debit', 'hold_release/credit', 'hold_release/credit'], 'its two holds (value and fee ceiling) are released, nothing transferred');
  t.notMatch(failed.reason, /released/, 'the used nonce is not released');
  t.equal(await s.transactions.nonces.at('evm-local', address, tx.nonce!), undefined, 'the dropped transfer holds no nonce');

  // The next transfer takes the next nonce and, mined, goes on to final.
  const next = await submit('after-drop');
  t.equal((await stored(next)).nonce, tx.nonce! + 1);
  await anvil.testClient.setAutomine(true);
  await waitUntil(async () => {
    const state = (await stored(next)).state;
    if (state === 'failed') throw new Error(`ended failed: ${(await stored(next)).reason}`);
    if (state !== 'final') await anvil.testClient.mine({ blocks: 1 });
    return state === 'final';
  }, 30_000, 'the next transfer to be final', 100);
});
