// A wallet's balance and ledger against real chains: on a real anvil, a native and an ERC-20 transfer
// go through the transaction worker (signed by a stand-in coordinator holding the vault's key, broadcast,
// mined, final); the balance the API reads is anvil's, and equals the funding less what the ledger
// debited (transfers and the fees the receipts show). The ledger writes nothing twice when a final
// transaction is processed again. A Bitcoin balance comes from the Esplora double's unspent outputs; a
// backend that does not answer is 502 chain_unavailable, a chain without one 409.
import t from 'tap';
import { createRequire } from 'node:module';
import { parseEther, type Abi, type Hex } from 'viem';
import { bytesToHex } from '@noble/hashes/utils.js';
import { EsploraDouble } from '../../chains/esplora-double.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { walletApp, signingCoordinator } from './wallet-app.ts';
import { CustodyClient, type SendEvmParameters } from '../../../api/sdk/client.ts';
import { TransactionWorker } from '../../../api/transactions/transaction-worker.ts';
import { TRANSACTION_PROGRESS } from '../../../api/transactions/transaction-service.ts';
import type { TransactionRecord, TransactionJob } from '../../../api/transactions/records.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { BitcoinChain } from '../../../api/chains/bitcoin/bitcoin-chain.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../../core/chains/bitcoin/bitcoin-networks.ts';
import { createLogger } from '../../../common/logger.ts';
import { anvilWallet, DEV } from './anvil-wallet.ts';
import { injectFetch } from '../../support/inject-fetch.ts';

const require = createRequire(import.meta.url);
const token = require('@openzeppelin/contracts-v4/build/contracts/ERC20PresetFixedSupply.json') as { abi: Abi; bytecode: Hex };
const BOB = '0x00000000000000000000000000000000000000b0' as Hex;

interface Entry { sequence: number; kind: string; direction: string; asset: string; amount: string; transaction_id: string; id: string }
interface Balance { block_height: number; as_of: string; balances: { asset: string; amount: string | null; unconfirmed_amount?: string }[] }

t.test('EVM: transfers through the worker, the balance read from anvil, and the ledger that explains it', async (t) => {
  const { anvil, chains, s, vault, secret, chainCode, w, address, dev } = await anvilWallet(t);
  // Funded with 1 ETH (anvil-wallet.ts) and a token's whole supply; a second token the wallet does not
  // hold, which only the vault's policy names, as it names an address that is no token.
  const deploy = async (holder: Hex) => (await anvil.publicClient.waitForTransactionReceipt({ hash: await dev.deployContract({ abi: token.abi, bytecode: token.bytecode, args: ['Test', 'TST', 1000n, holder] }) })).contractAddress!.toLowerCase() as Hex;
  const held = await deploy(address);
  const named = await deploy(DEV);
  await s.store.batch([s.vaults.vaultOp({ ...vault, policy: { per_transaction_cap: { [`evm-local:${named}`]: '1000000', [`evm-local:${BOB}`]: '1' } } })]);

  const read = async () => {
    const r = await s.bearer('GET', `/v1/wallets/${w.id}/balance`);
    t.equal(r.statusCode, 200, r.body.slice(0, 300));
    return r.json() as Balance;
  };
  const first = await read();
  const block = await anvil.publicClient.getBlock({ blockTag: 'latest' });
  t.equal(first.block_height, Number(block.number), 'the block it was read at');
  t.equal(first.as_of, new Date(Number(block.timestamp) * 1000).toISOString(), 'and that block\'s time');
  t.same(first.balances, [
    { asset: 'evm-local:native', amount: parseEther('1').toString() },
    ...[[BOB, null], [named, '0']].sort(([a], [b]) => (a! < b! ? -1 : 1)).map(([c, amount]) => ({ asset: `evm-local:${c}`, amount })),
  ], 'native first, then the tokens the policy names; an address that is no token has no amount');

  const worker = new TransactionWorker({
    vaults: s.vaults, transactions: s.transactions, coordinator: signingCoordinator(secret, chainCode), chains, log: createLogger('worker', 'silent'), pollMs: 50,
  });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey, fetch: injectFetch(s.app) });
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;
  const untilFinal = async (id: string) => waitUntil(async () => {
    const state = (await stored(id)).state;
    if (state === 'failed' || state === 'rejected') throw new Error(`${id} ended ${state}: ${(await stored(id)).reason}`);
    if (state === 'confirmed') await anvil.testClient.mine({ blocks: 1 });
    return state === 'final';
  }, 60_000, `${id} to be final`, 100);
  const send = async (p: Omit<SendEvmParameters, 'wallet'>) => {
    const intent = await client.evmIntent({ ...p, wallet: w });
    const r = await s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: p.idempotencyKey, intent_signature: client.signIntent(intent) });
    t.equal(r.statusCode, 202, r.body);
    const id = r.json().id as string;
    await untilFinal(id);
    return stored(id);
  };
  const native = await send({ to: BOB, amount: parseEther('0.1'), idempotencyKey: 'pay-bob' });
  const tokens = await send({ to: BOB, amount: 250n, asset: held, idempotencyKey: 'tokens-bob' });
  const paid = async (x: TransactionRecord) => {
    const r = await anvil.publicClient.getTransactionReceipt({ hash: x.tx_hash as Hex });
    return r.gasUsed * r.effectiveGasPrice;
  };
  const fees = [await paid(native), await paid(tokens)];
  t.equal(await anvil.publicClient.getBalance({ address: BOB }), parseEther('0.1'), 'the transfer happened on chain');

  const after = await read();
  const onChain = await anvil.publicClient.getBalance({ address });
  t.equal(after.balances[0]!.amount, onChain.toString(), 'the native balance is anvil\'s');
  t.equal(onChain, parseEther('1') - parseEther('0.1') - fees[0]! - fees[1]!, 'the funding less the transfer and the two fees paid');
  t.same(after.balances.find((b) => b.asset === `evm-local:${held}`), { asset: `evm-local:${held}`, amount: '750' }, 'the token it sent is listed, with what it holds now');

  // The ledger: holds at broadcast, then releases, the transfer and the fee paid at final.
  const walk = async (): Promise<Entry[]> => {
    const out: Entry[] = [];
    let cursor: string | null = null;
    do {
      const r = await s.bearer('GET', `/v1/wallets/${w.id}/ledger?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      t.equal(r.statusCode, 200, r.body.slice(0, 200));
      const page = r.json() as { data: Entry[]; next_cursor: string | null };
      out.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  };
  const ledger = await walk();
  const nativeAsset = 'evm-local:native';
  const tokenAsset = `evm-local:${held}`;
  t.same(ledger.map((e) => [e.sequence, e.transaction_id, e.kind, e.direction, e.asset, e.amount]), [
    [1, native.id, 'hold', 'debit', nativeAsset, parseEther('0.1').toString()], [2, native.id, 'hold', 'debit', nativeAsset, native.fee],
    [3, native.id, 'hold_release', 'credit', nativeAsset, parseEther('0.1').toString()], [4, native.id, 'hold_release', 'credit', nativeAsset, native.fee],
    [5, native.id, 'transfer', 'debit', nativeAsset, parseEther('0.1').toString()], [6, native.id, 'fee', 'debit', nativeAsset, fees[0]!.toString()],
    [7, tokens.id, 'hold', 'debit', tokenAsset, '250'], [8, tokens.id, 'hold', 'debit', nativeAsset, tokens.fee],
    [9, tokens.id, 'hold_release', 'credit', tokenAsset, '250'], [10, tokens.id, 'hold_release', 'credit', nativeAsset, tokens.fee],
    [11, tokens.id, 'transfer', 'debit', tokenAsset, '250'], [12, tokens.id, 'fee', 'debit', nativeAsset, fees[1]!.toString()],
  ], 'two pages and a half of entries, in sequence');
  const net = (asset: string) => ledger.filter((e) => e.asset === asset).reduce((a, e) => a + (e.direction === 'debit' ? -BigInt(e.amount) : BigInt(e.amount)), 0n);
  t.equal(net(nativeAsset), onChain - parseEther('1'), 'the ledger\'s native movements are the balance\'s change');
  t.equal(net(tokenAsset), -250n);
  t.same((await s.bearer('GET', `/v1/wallets/${w.id}/history`)).json().data.map((x: { id: string }) => x.id), [tokens.id, native.id], 'the history, newest first');

  // Processed again (a job back in the queue and the record one state earlier, as after a restart that
  // lost the worker's progress but not the ledger): the transaction becomes final again and writes no
  // entry twice.
  await worker.stop();
  const final = await stored(native.id);
  const confirmed: TransactionRecord = { ...final, state: 'confirmed' };
  await s.store.batch([
    s.transactions.txOp(confirmed, final), { type: 'put', collection: 'tx_jobs', id: native.id, value: { id: native.id, attempts: 0, next_at: 0 } satisfies TransactionJob },
    { type: 'enqueue', kind: TRANSACTION_PROGRESS, key: native.id, payload: { phase: 'follow' } },
  ]);
  const again = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator: undefined, chains, log: createLogger('worker', 'silent'), pollMs: 50 });
  again.start();
  t.teardown(() => again.stop());
  await untilFinal(native.id);
  t.same(await walk(), ledger, 'the same entries, the same sequence numbers');
  t.equal(await s.store.get<number>('ledger_sequences', w.id), 12, 'no number given twice');
});

t.test('Bitcoin: confirmed and unconfirmed outputs at the backend\'s tip', async (t) => {
  const esplora = new EsploraDouble();
  await esplora.start();
  t.teardown(() => esplora.stop());
  const btc = new BitcoinChain(BITCOIN_NETWORKS.find((n) => n.chain === 'bitcoin-regtest')!, esplora.url);
  const s = await walletApp(t, { chains: { evm: () => undefined, bitcoin: (c) => (c === 'bitcoin-regtest' ? btc : undefined) } });
  const { vault } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id, 'bitcoin-regtest', 0, 'p2wpkh');
  esplora.fund(w.address, 70_000n);
  esplora.fund(w.address, 5_000n);
  esplora.fund(w.address, 30_000n, { confirm: false });
  const r = await s.bearer('GET', `/v1/wallets/${w.id}/balance`);
  t.equal(r.statusCode, 200, r.body);
  const b = r.json() as Balance;
  t.same(b.balances, [{ asset: 'bitcoin-regtest:native', amount: '75000', unconfirmed_amount: '30000' }]);
  t.equal(b.block_height, esplora.height);
  t.equal((await s.bearer('GET', `/v1/wallets/${w.id}/balance`, undefined, s.globex.owner)).statusCode, 404, 'another customer');
  t.equal((await s.bearer('GET', `/v1/wallets/${w.id}/balance`, undefined, await s.acme.key('brand_manager'))).statusCode, 403);
});

t.test('a backend that does not answer is 502 chain_unavailable; a chain without one, 409', async (t) => {
  const down = new EvmChain(evmNetwork('evm-local')!, 'http://127.0.0.1:9/rpc?apikey=secret-in-url', 2_000);
  const s = await walletApp(t, { chains: { evm: (c) => (c === 'evm-local' ? down : undefined), bitcoin: () => undefined } });
  const { vault } = await s.activeVault(s.acme.org);
  const evm = await s.wallet(s.acme.org, vault.id);
  const r = await s.bearer('GET', `/v1/wallets/${evm.id}/balance`);
  t.equal(r.statusCode, 502);
  t.equal(r.json().code, 'chain_unavailable');
  t.match(r.json().error, /evm-local backend did not answer/);
  t.notMatch(r.body, /secret-in-url|127\.0\.0\.1/, 'the backend\'s address is not repeated');
  const btc = await s.wallet(s.acme.org, vault.id, 'bitcoin-regtest', 0, 'p2wpkh');
  const none = await s.bearer('GET', `/v1/wallets/${btc.id}/balance`);
  t.equal(none.statusCode, 409);
  t.equal(none.json().code, 'conflict');
});
