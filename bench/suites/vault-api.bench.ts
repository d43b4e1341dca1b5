// The vault API: the cost of RFC 9421 request verification (authenticated GET /v1/api-keys beside the
// same route with no authentication, same store, same handler), and POST /v1/transactions to `signed`
// on the local cluster (coordinator in this process, three node processes, anvil), one EVM transfer at
// a time, each from submission until the threshold ECDSA signature is stored.
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
let store: RecordStore;
let authed: FastifyInstance;
let open: FastifyInstance;
let creds: ApiCredentials;
let cluster: Cluster;
let anvil: Anvil;
let coordinator: CoordinatorClient;
let worker: TransactionWorker;
let jobs: VaultJobs;
let sdk: CustodyClient;
let wallet: Wallet;
let seq = 0;
// Signed ahead, so the timed runs measure the server's verification, not the client's signing.
let presigned: Record<string, string>[] = [];
const REQUESTS = 2000;

async function submitToSigned(): Promise<void> {
  const tx = await sdk.sendEvm({ wallet, to: '0x00000000000000000000000000000000000a11ce', amount: 1n, idempotencyKey: `bench-${seq++}` });
  await waitUntil(async () => {
    const t = await store.get<TransactionRecord>('transactions', tx.id);
    if (t?.state === 'failed' || t?.state === 'rejected') throw new Error(`bench transaction ${t.state}: ${t.reason}`);
    return t !== undefined && t.state !== 'created' && t.state !== 'checks';
  }, 60_000, 'signed', 2);
}

export const suite: BenchSuite = {
  title: 'vault API',
  async setup() {
    dir = mkdtempSync(join(tmpdir(), 'bench-api-'));
    store = await RecordStore.open(join(dir, 'api'));
    const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 10, vaultsPerOrg: 10 } });
    const operator = ed25519.utils.randomSecretKey();
    const secret = ed25519.utils.randomSecretKey();
    const { org, key } = await vaults.createOrg('Bench', bytesToHex(ed25519.getPublicKey(secret)), 'bench', operator);
    creds = { keyId: key.id, secretKey: secret };

    // The same route without authentication: a hook names the caller instead of a signature.
    open = Fastify({ logger: false });
    open.addHook('preHandler', async (req) => {
      req.caller = { org: org.id, keyId: key.id, entry: () => new Uint8Array() };
    });
    await open.register(apiKeyRoutes, { vaults, prefix: '/v1' });
    await open.ready();

    cluster = new Cluster();
    await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
    const nodeEnv = { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) };
    await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, nodeEnv)));
    anvil = await startAnvil();
    coordinator = connectCoordinator({ address: `127.0.0.1:${cluster.coordinatorPort}` });
    const chains = connectChains({ 'evm-local': anvil.url });
    const transactions = new TransactionService({ vaults, hasBackend: (c) => chains.has(c) });
    worker = new TransactionWorker({ vaults, transactions, coordinator, chains, log, trustLog: (o) => vaults.trustLog(o), pollMs: 50 });
    jobs = new VaultJobs(vaults, coordinator, log, 100);
    authed = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: log, vaults, transactions, coordinator });
    const address = await authed.listen({ host: '127.0.0.1', port: 0 });
    jobs.start();
    worker.start();
    sdk = new CustodyClient({ baseUrl: address, organization: org.id, keyId: key.id, secretKey: secret });
    const vault = await sdk.waitForVault((await sdk.createVault({ tier: 'hosted', name: 'bench' })).id, undefined, { timeoutMs: 120_000 });
    wallet = await sdk.createWallet(vault.id, { chain: 'evm-local' });
    await anvil.testClient.setBalance({ address: wallet.address as Hex, value: parseEther('100') });
  },
  async teardown() {
    jobs.stop();
    await worker.stop();
    await authed.close();
    await open.close();
    coordinator.close();
    await cluster.stop();
    await anvil.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  },
  cases: [
    {
      name: 'api.get-api-keys.open', runs: REQUESTS, fn: async () => void (await open.inject({ method: 'GET', url: '/v1/api-keys' })),
      extra: () => ({ note: 'same route and store, no authentication' }),
    },
    {
      name: 'api.get-api-keys.rfc9421', baseline: 'api.get-api-keys.open', runs: REQUESTS, warmup: 5,
      fn: async () => {
        // Made on the first (warm-up) call, so they are fresh when the timed runs use them.
        if (!presigned.length) presigned = Array.from({ length: REQUESTS + 10 }, () => signedHeaders(creds, 'GET', 'http://api.bench/v1/api-keys'));
        const res = await authed.inject({ method: 'GET', url: '/v1/api-keys', headers: { host: 'api.bench', ...presigned.pop()! } });
        if (res.statusCode !== 200) throw new Error(`authenticated request refused: ${res.body}`);
      },
      extra: () => ({ note: 'Ed25519 verify, Content-Digest, nonce claim per request' }),
    },
    { name: 'api.post-transaction-to-signed.evm', baseline: 'baseline.ecdsa.sign', runs: 20, warmup: 2, fn: submitToSigned },
  ],
};
