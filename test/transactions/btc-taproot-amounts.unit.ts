// A Taproot spend is signed over the amounts its inputs really hold (docs/transactions.md "Amounts the
// signatures commit to"): BIP-341 commits to every spent amount, and a P2TR intent need not name them.
// A backend that lists an output with another amount (stale, buggy or hostile) made the service sign
// over that amount: the signatures verified over the service's own digests, and the chain refused the
// spend with `mandatory-script-verify-flag-failed` (an invalid Schnorr signature). The worker now reads
// each named input's amount from the bytes of the transaction that made it, whose txid it checks.
import t from 'tap';
import * as bitcoin from 'bitcoinjs-lib';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { RegtestChain } from '../../deploy/regtest/regtest-chain.ts';
import { EsploraServer } from '../../deploy/regtest/esplora-server.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { walletApp } from '../api/wallets/wallet-app.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import type { CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import { BitcoinChain } from '../../api/chains/bitcoin/bitcoin-chain.ts';
import type { Utxo } from '../../api/chains/bitcoin/esplora-client.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import { createLogger } from '../../common/logger.ts';
import { fixtureSigner } from '../coordinator/fixture-signer.ts';

const info = BITCOIN_NETWORKS.find((n) => n.chain === 'bitcoin-regtest')!;
const ELSEWHERE = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

/** A backend whose address listing takes 1000 sat off every output: what the worker must not sign over. */
class MislistingChain extends BitcoinChain {
  override async utxos(address: string): Promise<Utxo[]> {
    return (await super.utxos(address)).map((u) => ({ ...u, value: u.value - 1000n }));
  }
}

t.test('a Taproot spend whose backend lists its input with another amount is signed over the real amount, and the chain takes it', async (t) => {
  const chain = new RegtestChain().init();
  const server = new EsploraServer(chain);
  const backend = new MislistingChain(info, await server.listen(0));
  t.teardown(() => server.close());
  const chains = { evm: () => undefined, bitcoin: (c: string) => (c === 'bitcoin-regtest' ? backend : undefined) };
  const s = await walletApp(t, { chains });
  const { vault, secret, chainCode } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id, 'bitcoin-regtest', 0, 'p2tr');
  const coin = chain.fund(w.address, 100_000n);
  chain.mine(1);
  // The cluster's Taproot signature (BIP-340 under the BIP-341 output key of the wallet's path).
  const signer = fixtureSigner(BigInt('0x' + bytesToHex(secret)), bytesToHex(chainCode));
  const coordinator = {
    sign: async (req: { path: number[]; digests: Uint8Array[] }) => ({ ...signer.sign(req.path, 'taproot', req.digests), recoveryIds: [] }),
  } as unknown as CoordinatorClient;
  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator, log: createLogger('worker', 'silent'), pollMs: 50, maxRetryDelayMs: 50, chains });
  worker.start();
  t.teardown(() => worker.stop());

  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey });
  // A P2TR intent names its input without an amount.
  const intent = client.bitcoinIntent({
    wallet: w, outputs: [{ address: ELSEWHERE, amount: 50_000n }], maxFeeRate: 10n, maxFee: 5_000n, idempotencyKey: 'p2tr-amounts',
    inputs: [{ txid: hexToBytes(coin.txid), vout: coin.vout }],
  });
  const r = await s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: 'p2tr-amounts', intent_signature: client.signIntent(intent) });
  t.equal(r.statusCode, 202, r.body);
  const id = r.json().id as string;
  const stored = async () => (await s.store.get<TransactionRecord>('transactions', id))!;
  await waitUntil(async () => {
    const x = await stored();
    if (x.state === 'failed' || x.state === 'rejected') throw new Error(`${x.state}: ${x.reason}`);
    if (x.state === 'broadcast' || x.state === 'confirmed') chain.mine(1);
    return x.state === 'final';
  }, 30_000, 'the spend to be final', 50);
  t.same(chain.rejected, [], 'the chain refused nothing');
  const done = await stored();
  const mined = bitcoin.Transaction.fromHex(chain.txs.get(done.tx_hash!)!.hex);
  t.equal(BigInt(done.fee!), 100_000n - mined.outs.reduce((a, o) => a + o.value, 0n), 'the fee is counted from the real amount');
});
