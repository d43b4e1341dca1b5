// A broadcast Bitcoin transaction that can never be included ends `failed` (`dropped`) and releases its
// ledger holds (docs/transactions.md "Dropped transactions"): the worker spends a wallet's output on the
// regtest double, the backend restarts without it in its mempool (as a node that evicted it), the
// wallet's key spends the same output elsewhere, that spend is mined, and the worker sees the input
// taken while its own transaction is unknown. Before that, unknown to a backend is only unconfirmed.
import t from 'tap';
import * as bitcoin from 'bitcoinjs-lib';
import { HDKey } from '@scure/bip32';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { RegtestChain } from '../../deploy/regtest/regtest-chain.ts';
import { EsploraServer } from '../../deploy/regtest/esplora-server.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { walletApp, signingCoordinator } from '../api/wallets/wallet-app.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import { BitcoinChain } from '../../api/chains/bitcoin/bitcoin-chain.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import { createLogger } from '../../common/logger.ts';

const net = bitcoin.networks.regtest;
const info = BITCOIN_NETWORKS.find((n) => n.chain === 'bitcoin-regtest')!;
const ELSEWHERE = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

t.test('a spend whose input another transaction took fails as dropped and releases its holds', async (t) => {
  let chain = new RegtestChain().init();
  let server = new EsploraServer(chain);
  let backend = new BitcoinChain(info, await server.listen(0));
  t.teardown(() => server.close());
  const s = await walletApp(t, { chains: { evm: () => undefined, bitcoin: (c) => (c === 'bitcoin-regtest' ? backend : undefined) } });
  const { vault, secret, chainCode } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id, 'bitcoin-regtest', 0, 'p2wpkh');
  const coin = chain.fund(w.address, 100_000n);

  const worker = new TransactionWorker({
    vaults: s.vaults, transactions: s.transactions, coordinator: signingCoordinator(secret, chainCode), log: createLogger('worker', 'silent'), pollMs: 50, dropCheckAfterMs: 0,
    chains: { evm: () => undefined, bitcoin: (c) => (c === 'bitcoin-regtest' ? backend : undefined) },
  });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey });
  const intent = client.bitcoinIntent({
    wallet: w, outputs: [{ address: ELSEWHERE, amount: 50_000n }], maxFeeRate: 10n, maxFee: 5_000n, idempotencyKey: 'btc-drop',
    inputs: [{ txid: hexToBytes(coin.txid), vout: coin.vout, amount: 100_000n }],
  });
  const r = await s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: 'btc-drop', intent_signature: client.signIntent(intent) });
  t.equal(r.statusCode, 202, r.body);
  const id = r.json().id as string;
  const stored = async () => (await s.store.get<TransactionRecord>('transactions', id))!;
  await waitUntil(async () => (await stored()).state === 'broadcast', 30_000, 'the spend to be broadcast', 50);
  t.ok(chain.mempool.includes((await stored()).tx_hash!), 'in the backend\'s mempool');

  // The backend restarts from its blocks with an empty mempool: the spend is unknown there, which is
  // only "unconfirmed", not a failure, while its input is unspent.
  const blocks = chain.blocks.map((b) => b.hex);
  await server.close();
  chain = new RegtestChain();
  chain.restore(blocks, []);
  server = new EsploraServer(chain);
  backend = new BitcoinChain(info, await server.listen(0));
  t.same(await backend.confirmations((await stored()).tx_hash!), { confirmations: 0 }, 'unknown to the backend is unconfirmed');
  await new Promise((res) => setTimeout(res, 300));
  t.equal((await stored()).state, 'broadcast', 'while its input is unspent, it waits');

  // The wallet's key spends the same output to another address; that spend is mined.
  const key = new HDKey({ privateKey: secret, chainCode }).derive(w.derivation_path);
  const pub = key.publicKey!;
  const other = new bitcoin.Transaction();
  other.version = 2;
  other.addInput(Buffer.from(coin.txid, 'hex').reverse(), coin.vout, 0xfffffffd);
  other.addOutput(bitcoin.address.toOutputScript(ELSEWHERE, net), 90_000n);
  const digest = other.hashForWitnessV0(0, bitcoin.payments.p2pkh({ pubkey: pub, network: net }).output!, 100_000n, bitcoin.Transaction.SIGHASH_ALL);
  other.setWitness(0, [new Uint8Array([...secp256k1.sign(digest, key.privateKey!, { prehash: false, format: 'der' }), bitcoin.Transaction.SIGHASH_ALL]), pub]);
  const conflicting = chain.submit(other.toHex());
  chain.mine(1);

  await waitUntil(async () => (await stored()).state === 'failed', 30_000, 'the dropped spend to fail', 50);
  const failed = await stored();
  t.match(failed.reason, new RegExp(`^dropped: input ${coin.txid}:${coin.vout} was spent by another transaction`), 'its reason');
  t.not(conflicting, failed.tx_hash, 'spent by the other transaction');
  const ledger = (await s.bearer('GET', `/v1/wallets/${w.id}/ledger?limit=50`)).json().data as { kind: string; transaction_id: string; direction: string }[];
  t.same(ledger.filter((e) => e.transaction_id === id).map((e) => `${e.kind}/${e.direction}`).sort(), ['hold/debit', 'hold/debit', 'hold_release/credit', 'hold_release/credit'], 'its holds (output and fee) are released, nothing transferred');
});
