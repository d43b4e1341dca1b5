// Chain truth for Bitcoin (docs/transactions.md "Adopted transactions"): when an intent's inputs are spent
// by another signing of that same intent (same inputs, the intent's outputs, change back to the wallet,
// fee within the ceiling), the transaction follows that one to final instead of failing, whether it was
// broadcast, signed or still signing when that happened; and a signature from the cluster that does not
// verify is never broadcast: the transaction says why and signs again. On the regtest double, which runs
// every input through a script interpreter; the cluster is the test's coordinator with the whole key.
import t, { type Test } from 'tap';
import * as bitcoin from 'bitcoinjs-lib';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { RegtestChain } from '../../deploy/regtest/regtest-chain.ts';
import { EsploraServer } from '../../deploy/regtest/esplora-server.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { walletApp, signingCoordinator } from '../api/wallets/wallet-app.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import type { CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import { BitcoinChain } from '../../api/chains/bitcoin/bitcoin-chain.ts';
import { buildSpend, finalizeP2wpkh } from '../../api/chains/bitcoin/build-spend.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import { decodeIntent, type BtcTransferIntent } from '../../core/intents/intent.ts';
import { decodeBlob } from '../../core/codec/blob.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { createLogger } from '../../common/logger.ts';

const net = bitcoin.networks.regtest;
const info = BITCOIN_NETWORKS.find((n) => n.chain === 'bitcoin-regtest')!;
const ELSEWHERE = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

type SignRequest = Parameters<CoordinatorClient['sign']>[0];
type SignReply = Awaited<ReturnType<CoordinatorClient['sign']>>;

/** A backend whose fee estimate the test sets, so two signings of one intent differ in fee. */
class RatedChain extends BitcoinChain {
  rate = 2n;
  override feeRate(): Promise<bigint> {
    return Promise.resolve(this.rate);
  }
}

async function setup(t: Test, behave: (req: SignRequest, honest: (req: SignRequest) => Promise<SignReply>) => Promise<SignReply>) {
  let chain = new RegtestChain().init();
  let server = new EsploraServer(chain);
  let backend = new RatedChain(info, await server.listen(0));
  t.teardown(() => server.close());
  const chains = { evm: () => undefined, bitcoin: (c: string) => (c === 'bitcoin-regtest' ? backend : undefined) };
  const s = await walletApp(t, { chains });
  const { vault, secret, chainCode } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id, 'bitcoin-regtest', 0, 'p2wpkh');
  const coin = chain.fund(w.address, 100_000n);
  const honest = signingCoordinator(secret, chainCode);
  const signings: SignRequest[] = [];
  const coordinator = { sign: async (req: SignRequest) => (signings.push(req), behave(req, (r) => honest.sign(r))) } as unknown as CoordinatorClient;
  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator, log: createLogger('worker', 'silent'), pollMs: 50, dropCheckAfterMs: 0, maxRetryDelayMs: 50, chains });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey });
  const intent = client.bitcoinIntent({
    wallet: w, outputs: [{ address: ELSEWHERE, amount: 50_000n }], maxFeeRate: 10n, maxFee: 5_000n, idempotencyKey: 'btc-reconcile',
    inputs: [{ txid: hexToBytes(coin.txid), vout: coin.vout, amount: 100_000n }],
  });
  const path = w.derivation_path.split('/').slice(1).map(Number);
  /** The intent signed at `rate` sat/vB with the wallet's key: what another signing of it is. */
  const signAt = async (rate: bigint) => {
    const spend = buildSpend(decodeIntent(intent) as BtcTransferIntent, await backend.utxos(w.address), rate);
    const out = await honest.sign({ path, digests: spend.digests } as SignRequest);
    return { raw: finalizeP2wpkh(spend, out.signatures, out.publicKey, net), txid: spend.tx.getId(), fee: spend.fee };
  };
  const submit = async () => {
    const r = await s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: 'btc-reconcile', intent_signature: client.signIntent(intent) });
    t.equal(r.statusCode, 202, r.body);
    return r.json().id as string;
  };
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;
  const final = (id: string) => waitUntil(async () => {
    const r = await stored(id);
    if (r.state === 'failed' || r.state === 'rejected') throw new Error(`${r.state}: ${r.reason}`);
    if (r.state === 'broadcast' || r.state === 'confirmed') chain.mine(1);
    return r.state === 'final';
  }, 30_000, 'the transaction to be final', 50);
  const ledger = async (id: string) => ((await s.bearer('GET', `/v1/wallets/${w.id}/ledger?limit=50`)).json().data as { kind: string; transaction_id: string; direction: string; amount: string; counterparty: string | null }[])
    .filter((e) => e.transaction_id === id);
  /** The backend restarts from its blocks with an empty mempool, as a node that evicted a transaction. */
  const restart = async () => {
    const blocks = chain.blocks.map((b) => b.hex);
    await server.close();
    const rate = backend.rate;
    chain = new RegtestChain();
    chain.restore(blocks, []);
    server = new EsploraServer(chain);
    backend = new RatedChain(info, await server.listen(0));
    backend.rate = rate;
  };
  return { s, w, coin, signings, signAt, submit, stored, final, ledger, restart, chain: () => chain, backend: () => backend };
}

t.test('broadcast, then its inputs spent by another signing of the intent: the transaction follows that one to final', async (t) => {
  const h = await setup(t, (req, honest) => honest(req));
  h.backend().rate = 2n;
  // Another signing of the same intent, at another fee (as a retry after a fee change would make).
  const other = await h.signAt(6n);
  const id = await h.submit();
  await waitUntil(async () => (await h.stored(id)).state === 'broadcast', 30_000, 'the spend to be broadcast', 50);
  const first = await h.stored(id);
  t.not(first.tx_hash, other.txid, 'the two signings differ');

  // Evicted from the backend's mempool; the other signing is the one mined.
  await h.restart();
  t.equal(h.chain().submit(other.raw), other.txid);
  h.chain().mine(1);
  await h.final(id);
  const done = await h.stored(id);
  t.equal(done.tx_hash, other.txid, 'it follows the transaction the chain holds');
  t.equal(done.fee, String(other.fee), 'with that transaction\'s fee');
  t.equal(done.raw_tx, h.chain().txs.get(other.txid)!.hex, 'and its bytes');
  t.match(done.adopted, new RegExp(`^the chain holds ${other.txid}, another signing of this intent .*this service's last was ${first.tx_hash}`), 'the adoption is recorded with its reason');
  t.equal(done.reason, null, 'no failure reason');
  const seen = (await h.s.signed('GET', `/v1/transactions/${id}`)).json() as { tx_hash: string; fee: string; adopted?: string };
  t.same([seen.tx_hash, seen.fee, seen.adopted], [other.txid, String(other.fee), done.adopted], 'GET /v1/transactions/{id} answers the adopted hash, fee and reason');
  const legs = await h.ledger(id);
  const sum = (kind: string, counterparty: string | null) => legs.filter((e) => e.kind === kind && e.counterparty === counterparty).reduce((a, e) => a + BigInt(e.amount), 0n);
  t.equal(sum('hold', null), BigInt(first.fee!), 'the fee held at the first broadcast');
  t.equal(sum('hold_release', null), BigInt(first.fee!), 'is released as it was held');
  t.equal(sum('fee', null), other.fee, 'the fee paid is the adopted transaction\'s');
  t.equal(sum('transfer', ELSEWHERE), 50_000n, 'the transfer is written once');
});

t.test('a coordinator that broadcasts another signing of the intent itself: the worker\'s own broadcast is refused, and it adopts that one', async (t) => {
  let sent: { txid: string; fee: bigint } | undefined;
  const h = await setup(t, async (req, honest) => {
    if (!sent) {
      // It holds the intent and a template the nodes would sign: it has one signed at another fee and sends it.
      const other = await h.signAt(7n);
      h.chain().submit(other.raw);
      sent = other;
    }
    return honest(req);
  });
  h.backend().rate = 2n;
  const id = await h.submit();
  await h.final(id);
  const done = await h.stored(id);
  t.equal(done.tx_hash, sent!.txid, 'the transaction the coordinator sent is followed');
  t.equal(done.fee, String(sent!.fee));
  t.match(done.adopted, /another signing of this intent/);
  t.equal(h.chain().rejected.length, 1, 'the worker\'s own signing was refused by the backend, nothing else');
});

t.test('a coordinator that broadcasts the signing itself and answers an error: the retry finds the inputs spent by it, and adopts it', async (t) => {
  let sent: string | undefined;
  const h = await setup(t, async (req, honest) => {
    const out = await honest(req);
    if (sent) return out;
    // The signatures and the template are all it needs to send the transaction.
    const tpl = decodeBlob<{ tx: string; prevouts: { script: string; value: string }[] }>('btc-template', req.authorization!.template!);
    const tx = bitcoin.Transaction.fromHex(tpl.tx);
    const prevouts = tpl.prevouts.map((p) => ({ script: hexToBytes(p.script), value: BigInt(p.value) }));
    sent = h.chain().submit(finalizeP2wpkh({ tx, prevouts, digests: req.digests!, fee: 0n, template: req.authorization!.template! }, out.signatures, out.publicKey, net));
    // The fee estimate moves before the retry, so a new signing would differ.
    h.backend().rate = 5n;
    throw new CustodyError('rpc_error', '14 UNAVAILABLE: No connection established');
  });
  h.backend().rate = 2n;
  const id = await h.submit();
  await h.final(id);
  const done = await h.stored(id);
  t.equal(done.tx_hash, sent, 'the transaction the coordinator sent is followed');
  t.match(done.adopted, /another signing of this intent/);
  t.ok(h.signings.length >= 1);
});

t.test('a signature that does not verify is never broadcast: the transaction says why and signs again', async (t) => {
  let bad = 2;
  const h = await setup(t, async (req, honest) => {
    const out = await honest(req);
    if (bad-- <= 0) return out;
    return { ...out, signatures: out.signatures.map((s) => s.map((b, i) => (i === 40 ? b ^ 1 : b))) };
  });
  const id = await h.submit();
  await waitUntil(async () => ((await h.stored(id)).waiting ?? '').startsWith('bad_signature:'), 30_000, 'the reason to be recorded', 10);
  t.match((await h.stored(id)).waiting, /^bad_signature: the signature for input 0 does not verify under the wallet key; nothing was broadcast, signing again/);
  await h.final(id);
  const done = await h.stored(id);
  t.equal(h.signings.length, 3, 'signed three times: twice refused, once taken');
  t.equal(h.chain().rejected.length, 0, 'nothing was refused by the backend: no bad signature reached it');
  t.equal(done.waiting, undefined, 'the reason goes once a signature verifies');
  t.equal(done.adopted, undefined, 'its own transaction');
});
