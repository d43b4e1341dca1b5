// The vault API: the cost of RFC 9421 request verification (authenticated GET /v1/api-keys beside the
// same route with no authentication, same store, same handler), and POST /v1/transactions to `signed`
// on the local cluster (coordinator in this process, three node processes, anvil), one EVM transfer at
// a time, each from submission until the threshold ECDSA signature is stored. Each on the embedded LevelDB
// and on PostgreSQL (a local server started here), one API instance each, sharing the cluster and anvil.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parseEther, type Hex } from 'viem';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { PostgresRecordStore } from '../../api/store/postgres/postgres-record-store.ts';
import type { RecordRepository } from '../../api/store/record-repository.ts';
import { startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { VaultJobs } from '../../api/vaults/vault-jobs.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import { connectChains } from '../../api/chains/connect-chains.ts';
import { connectCoordinator, type CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import { apiKeyRoutes } from '../../api/routes/v1/api-keys.ts';
import { signedHeaders, type ApiCredentials } from '../../api/sdk/request-signer.ts';
import { CustodyClient, type Wallet } from '../../api/sdk/client.ts';
import { Cluster, waitUntil } from '../../test/cluster/cluster-harness.ts';
import { startAnvil, type Anvil } from '../../test/chains/anvil.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import type { BenchSuite } from '../harness.ts';

const log = createLogger('api', 'silent');
let dir = '';
let open: FastifyInstance;
let cluster: Cluster;
let anvil: Anvil;
let coordinator: CoordinatorClient;
let postgres: PostgresServer;
const REQUESTS = 2000;
/** Request budgets no run reaches (docs/operations.md "Rate limits"). */
const UNREFUSED = { API_RATE_LIMIT_PER_ADDRESS: '10000000', API_RATE_LIMIT_PER_KEY: '10000000' };

/** One API instance over its store: its app, workers, a customer with a funded wallet, and requests signed ahead. */
interface Stack {
  store: RecordRepository;
  vaults: VaultService;
  org: string;
  keyId: string;
  authed: FastifyInstance;
  worker: TransactionWorker;
  jobs: VaultJobs;
  sdk: CustodyClient;
  wallet: Wallet;
  creds: ApiCredentials;
  /** Signed ahead, so the timed runs measure the server's verification, not the client's signing. */
  presigned: Record<string, string>[];
  seq: number;
}
let leveldb: Stack;
let onPostgres: Stack;

async function stack(store: RecordRepository, operator: Uint8Array): Promise<Stack> {
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 10, vaultsPerOrg: 10 } });
  const secret = ed25519.utils.randomSecretKey();
  const { org, key } = await vaults.createOrg('Bench', bytesToHex(ed25519.getPublicKey(secret)), 'bench', operator);
  const chains = connectChains({ 'evm-local': anvil.url });
  const transactions = new TransactionService({ vaults, hasBackend: (c) => chains.has(c) });
  const worker = new TransactionWorker({ vaults, transactions, coordinator, chains, log, trustLog: (o) => vaults.trustLog(o), pollMs: 50 });
  const jobs = new VaultJobs(vaults, coordinator, log, 100);
  // Every request is still counted (the rate limits' cost is part of what is measured), never refused:
  // the timed runs send thousands a minute with one key from one address.
  const authed = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir, ...UNREFUSED }), logger: log, vaults, transactions, coordinator });
  const address = await authed.listen({ host: '127.0.0.1', port: 0 });
  jobs.start();
  worker.start();
  const sdk = new CustodyClient({ baseUrl: address, organization: org.id, keyId: key.id, secretKey: secret });
  const vault = await sdk.waitForVault((await sdk.createVault({ tier: 'hosted', name: 'bench' })).id, undefined, { timeoutMs: 120_000 });
  const wallet = await sdk.createWallet(vault.id, { chain: 'evm-local' });
  await anvil.testClient.setBalance({ address: wallet.address as Hex, value: parseEther('100') });
  return { store, vaults, org: org.id, keyId: key.id, authed, worker, jobs, sdk, wallet, creds: { keyId: key.id, secretKey: secret }, presigned: [], seq: 0 };
}

async function submitToSigned(s: Stack): Promise<void> {
  const tx = await s.sdk.sendEvm({ wallet: s.wallet, to: '0x00000000000000000000000000000000000a11ce', amount: 1n, idempotencyKey: `bench-${s.seq++}` });
  await waitUntil(async () => {
    const t = await s.store.get<TransactionRecord>('transactions', tx.id);
    if (t?.state === 'failed' || t?.state === 'rejected') throw new Error(`bench transaction ${t.state}: ${t.reason}`);
    return t !== undefined && t.state !== 'created' && t.state !== 'checks';
  }, 60_000, 'signed', 2);
}

async function authedGet(s: Stack): Promise<void> {
  // Made on the first (warm-up) call, so they are fresh when the timed runs use them.
  if (!s.presigned.length) s.presigned = Array.from({ length: REQUESTS + 10 }, () => signedHeaders(s.creds, 'GET', 'http://api.bench/v1/api-keys'));
  const res = await s.authed.inject({ method: 'GET', url: '/v1/api-keys', headers: { host: 'api.bench', ...s.presigned.pop()! } });
  if (res.statusCode !== 200) throw new Error(`authenticated request refused: ${res.body}`);
}

async function stopStack(s: Stack): Promise<void> {
  await s.jobs.stop();
  await s.worker.stop();
  await s.authed.close();
  await s.store.close();
}

export const suite: BenchSuite = {
  title: 'vault API',
  async setup() {
    dir = mkdtempSync(join(tmpdir(), 'bench-api-'));
    const operator = ed25519.utils.randomSecretKey();
    cluster = new Cluster();
    await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
    const nodeEnv = { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) };
    await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, nodeEnv)));
    anvil = await startAnvil();
    coordinator = connectCoordinator({ address: `127.0.0.1:${cluster.coordinatorPort}` });
    postgres = await startPostgres();
    leveldb = await stack(await RecordStore.open(join(dir, 'api')), operator);
    onPostgres = await stack(await PostgresRecordStore.open({ connectionString: postgres.url }), operator);

    // The same route without authentication: a hook names the caller instead of a signature.
    open = Fastify({ logger: false });
    open.addHook('preHandler', async (req) => {
      req.caller = { org: leveldb.org, keyId: leveldb.keyId, created: Math.floor(Date.now() / 1000), entry: () => new Uint8Array() };
    });
    await open.register(apiKeyRoutes, { vaults: leveldb.vaults, prefix: '/v1' });
    await open.ready();
  },
  // Also after a setup that failed halfway (bench/harness.ts): stops only what was started.
  async teardown() {
    if (leveldb) await stopStack(leveldb);
    if (onPostgres) await stopStack(onPostgres);
    await open?.close();
    coordinator?.close();
    await cluster?.stop();
    await anvil?.stop();
    await postgres?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
  cases: [
    {
      name: 'api.get-api-keys.open', runs: REQUESTS, fn: async () => void (await open.inject({ method: 'GET', url: '/v1/api-keys' })),
      extra: () => ({ note: 'same route and store, no authentication' }),
    },
    {
      name: 'api.get-api-keys.rfc9421', baseline: 'api.get-api-keys.open', runs: REQUESTS, warmup: 5, fn: () => authedGet(leveldb),
      extra: () => ({ note: 'LevelDB: Ed25519 verify, Content-Digest, nonce claim per request' }),
    },
    {
      name: 'api.get-api-keys.rfc9421.postgres', baseline: 'api.get-api-keys.rfc9421', runs: REQUESTS, warmup: 5, fn: () => authedGet(onPostgres),
      extra: () => ({ note: 'the same on PostgreSQL (local server, one instance); ratio to LevelDB' }),
    },
    { name: 'api.post-transaction-to-signed.evm', baseline: 'baseline.ecdsa.sign', runs: 20, warmup: 2, fn: () => submitToSigned(leveldb) },
    {
      name: 'api.post-transaction-to-signed.evm.postgres', baseline: 'api.post-transaction-to-signed.evm', runs: 20, warmup: 2, fn: () => submitToSigned(onPostgres),
      extra: () => ({ note: 'records and job queue on PostgreSQL; ratio to LevelDB' }),
    },
  ],
};
