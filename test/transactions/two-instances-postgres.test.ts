// Two API instances stepping one wallet's transactions from one PostgreSQL database (docs/api-storage.md
// "Moving the loops onto it"): each instance has its own store connection, services and transaction
// worker, as two API processes would; transactions are submitted through one instance's routes. The sign
// jobs share the wallet's ordering key on the shared job queue, so nonces are chosen one transaction at a
// time across both instances. One instance stops midway; the other finishes every transaction. On a real
// anvil: every transaction final, nonces 0..n-1 each used once, each signed once and broadcast once, and
// the chain saw exactly n transactions from the wallet.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { PostgresRecordStore } from '../../api/store/postgres/postgres-record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { TransactionWorker, type Chains } from '../../api/transactions/transaction-worker.ts';
import { EvmChain } from '../../api/chains/evm/evm-chain.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { signedHeaders } from '../../api/sdk/request-signer.ts';
import type { CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import type { VaultRecord } from '../../api/vaults/records.ts';
import { startAnvil } from '../chains/anvil.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { signingCoordinator } from '../api/wallets/wallet-app.ts';
import { newDatabase, startPostgres } from '../support/postgres.ts';
import { injectFetch } from '../support/inject-fetch.ts';

const DEV = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex;
const BOB = '0x00000000000000000000000000000000000000b0' as Hex;
const log = createLogger('api', 'silent');

t.test('two instances on one database: one wallet\'s transactions each take one nonce, are signed once and broadcast once', async (t) => {
  const server = await startPostgres();
  const anvil = await startAnvil();
  const url = await newDatabase(server, 'two');
  const [storeA, storeB] = [await PostgresRecordStore.open({ connectionString: url }), await PostgresRecordStore.open({ connectionString: url })];
  const closers: (() => Promise<unknown>)[] = [() => server.stop(), () => anvil.stop(), () => storeA.close(), () => storeB.close()];
  t.teardown(async () => {
    for (const close of closers.reverse()) await close();
  });

  const chain = new EvmChain(evmNetwork('evm-local')!, anvil.url);
  const broadcasts = new Map<string, number>();
  // The chain as both instances reach it, counting what each sends (by transaction hash).
  const counted = Object.create(chain) as EvmChain;
  counted.broadcast = async (raw: Hex, hash: Hex) => {
    broadcasts.set(hash, (broadcasts.get(hash) ?? 0) + 1);
    return chain.broadcast(raw, hash);
  };
  const chains: Chains = { evm: (c) => (c === 'evm-local' ? counted : undefined), bitcoin: () => undefined };

  const instance = (store: PostgresRecordStore) => {
    const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 3 } });
    return { store, vaults, transactions: new TransactionService({ vaults, hasBackend: () => true }) };
  };
  const a = instance(storeA);
  const b = instance(storeB);

  const apiSecret = ed25519.utils.randomSecretKey();
  const { org, key } = await a.vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(apiSecret)));
  const vaultKey = secp256k1.utils.randomSecretKey();
  const chainCode = randomBytes(32);
  const created = await a.vaults.createVault(org.id, { tier: 'hosted' });
  const active: VaultRecord = { ...created, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(vaultKey, true)), chain_code: bytesToHex(chainCode) };
  await storeA.batch([a.vaults.vaultOp(active)]);
  const wallet = (await b.vaults.createWallet(org.id, active.id, 'evm-local', 0, undefined)).wallet;
  const dev = createWalletClient({ chain: foundry, transport: http(anvil.url), account: DEV });
  await anvil.publicClient.waitForTransactionReceipt({ hash: await dev.sendTransaction({ to: wallet.address as Hex, value: parseEther('1') }) });

  // Each instance signs through its own coordinator client; the signatures are counted per instance.
  const signer = signingCoordinator(vaultKey, chainCode);
  const signs = { a: 0, b: 0 };
  const coordinatorOf = (who: 'a' | 'b') => ({ sign: async (req: unknown) => (signs[who]++, (signer.sign as (r: unknown) => unknown)(req)) }) as unknown as CoordinatorClient;
  const worker = (who: 'a' | 'b', s: typeof a) =>
    new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator: coordinatorOf(who), chains, log, pollMs: 40, workerId: `instance-${who}` });
  const workerA = worker('a', a);
  const workerB = worker('b', b);
  workerA.start();
  workerB.start();
  closers.push(() => workerA.stop(), () => workerB.stop());

  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: '/nonexistent' }), logger: log, vaults: a.vaults, transactions: a.transactions });
  closers.push(() => app.close());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: org.id, keyId: key.id, secretKey: apiSecret, fetch: injectFetch(app) });
  const submit = async (i: number): Promise<string> => {
    const intent = await client.evmIntent({ wallet, to: BOB, amount: 1000n + BigInt(i), idempotencyKey: `pay-${i}` });
    const body = JSON.stringify({ wallet_id: wallet.id, intent: bytesToHex(intent), idempotency_key: `pay-${i}`, intent_signature: client.signIntent(intent) });
    const r = await app.inject({ method: 'POST', url: '/v1/transactions', payload: body, headers: { host: 'api.test', ...signedHeaders({ keyId: key.id, secretKey: apiSecret }, 'POST', 'http://api.test/v1/transactions', body) } });
    t.equal(r.statusCode, 202, r.statusCode === 202 ? `pay-${i} accepted` : r.body);
    return (r.json() as { id: string }).id;
  };
  const stored = async (id: string) => (await storeB.get<TransactionRecord>('transactions', id))!;
  const reached = (ids: string[], states: string[]) => waitUntil(async () => {
    await anvil.testClient.mine({ blocks: 1 });
    const now = await Promise.all(ids.map(stored));
    const ended = now.find((x) => x.state === 'failed' || x.state === 'rejected');
    if (ended) throw new Error(`${ended.id} ended ${ended.state}: ${ended.reason}`);
    return now.every((x) => states.includes(x.state));
  }, 60_000, `transactions to reach ${states.join('/')}`, 50);

  // Four submitted at once, stepped by both instances.
  const first = await Promise.all([0, 1, 2, 3].map(submit));
  await reached(first, ['broadcast', 'confirmed', 'final']);
  // Instance A stops (its leases given back at once); B takes every job from here, and three more.
  await workerA.stop(); // (stopped twice at teardown: the second is a no-op)
  const signedByA = signs.a;
  const second = await Promise.all([4, 5, 6].map(submit));
  const all = [...first, ...second];
  await reached(all, ['final']);

  const txs = await Promise.all(all.map(stored));
  t.same(txs.map((x) => x.nonce).sort((x, y) => x! - y!), [0, 1, 2, 3, 4, 5, 6], 'nonces 0..6, each taken once across both instances');
  t.equal(signs.a + signs.b, 7, `seven signatures in all (instance A ${signs.a}, instance B ${signs.b})`);
  t.equal(signs.a, signedByA, 'none by the stopped instance after it stopped');
  t.ok(signs.b >= 3, 'the remaining instance signed the later three');
  t.same([...broadcasts.values()], txs.map(() => 1), 'each transaction broadcast exactly once');
  t.same(new Set(broadcasts.keys()), new Set(txs.map((x) => x.tx_hash)), 'and what was broadcast is what each transaction records');
  t.equal(await anvil.publicClient.getTransactionCount({ address: wallet.address as Hex }), 7, 'the chain saw exactly seven transactions from the wallet');
  // A job is marked done after the record it wrote: the last follow may still hold its lease for a moment.
  const jobStates = async () => (await (storeB as unknown as { pool: { query: (q: string) => Promise<{ rows: { state: string; n: number }[] }> } }).pool.query(
    "SELECT state, count(*)::int AS n FROM jobs WHERE kind = 'transaction_progress' GROUP BY state ORDER BY state",
  )).rows;
  await waitUntil(async () => (await jobStates()).every((r) => r.state === 'done'), 10_000, 'the last jobs to be marked done').catch(() => undefined);
  t.same(await jobStates(), [{ state: 'done', n: 14 }], 'fourteen jobs, a sign and a follow per transaction, all done');
});
