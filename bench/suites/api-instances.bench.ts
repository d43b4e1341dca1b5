// The API as a deployment runs it, as real processes over HTTP: one instance on the embedded LevelDB
// against three instances on one PostgreSQL database (a local server started here), sharing the
// coordinator, three node processes and anvil. Two measures, each case beside its pair in one run:
//
// - authenticated requests per second: REQUESTS signed GET /v1/api-keys (RFC 9421 verify, nonce claim)
//   sent CONCURRENCY at a time, to the one instance or spread over the three;
// - POST /v1/transactions until `signed`, one EVM transfer at a time from one wallet (threshold ECDSA on
//   the cluster), each submitted to the next instance in turn and polled through the API every 5 ms.
//
// Every process shares the machine's cores with the cluster and the database: the request rate of three
// instances is bounded by the cores, not by the instances (docs/api-storage.md "Three instances").
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parseEther, type Hex } from 'viem';
import { signedHeaders, type ApiCredentials } from '../../api/sdk/request-signer.ts';
import { CustodyClient, type Wallet } from '../../api/sdk/client.ts';
import { Cluster } from '../../test/cluster/cluster-harness.ts';
import { startAnvil, type Anvil } from '../../test/chains/anvil.ts';
import { newDatabase, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { admin, startApiInstance } from '../../test/e2e/stack.ts';
import type { BenchSuite } from '../harness.ts';

const REQUESTS = 400;
const CONCURRENCY = 24;

let cluster: Cluster;
let anvil: Anvil;
let postgres: PostgresServer;

/** A deployment: its instances' base URLs, the customer's credentials and a funded wallet. */
interface Deployment {
  bases: string[];
  creds: ApiCredentials;
  clients: CustodyClient[];
  wallet: Wallet;
  seq: number;
  /** Wall time of each timed burst of requests, for the rate. */
  bursts: number[];
}
let single: Deployment;
let triple: Deployment;

async function deployment(store: Record<string, string>, names: string[], operatorFile: string): Promise<Deployment> {
  const secretKey = ed25519.utils.randomSecretKey();
  // The customer, made by the operator command before the instances hold the store.
  const customer = admin(cluster, ['org', 'create', '--name', 'Bench', '--public-key', bytesToHex(ed25519.getPublicKey(secretKey))], { ...store, API_OPERATOR_KEY_FILE: operatorFile });
  const bases: string[] = [];
  // The bursts send thousands of requests a minute with one key from one address: budgets no run reaches,
  // still counted (in the database on PostgreSQL), so their cost is measured (docs/operations.md "Rate limits").
  const unrefused = { API_RATE_LIMIT_PER_ADDRESS: '10000000', API_RATE_LIMIT_PER_KEY: '10000000' };
  for (const name of names) bases.push((await startApiInstance(cluster, name, { ...store, ...unrefused, API_CHAIN_BACKENDS: `evm-local=${anvil.url}`, API_LOG_LEVEL: 'warn' })).base);
  const clients = bases.map((baseUrl) => new CustodyClient({ baseUrl, organization: customer.organization!, keyId: customer.api_key_id!, secretKey }));
  const vault = await clients[0]!.waitForVault((await clients[0]!.createVault({ tier: 'hosted', name: 'bench' })).id, undefined, { timeoutMs: 120_000 });
  const wallet = await clients[0]!.createWallet(vault.id, { chain: 'evm-local' });
  await anvil.testClient.setBalance({ address: wallet.address as Hex, value: parseEther('100') });
  return { bases, creds: { keyId: customer.api_key_id!, secretKey }, clients, wallet, seq: 0, bursts: [] };
}

/** REQUESTS authenticated GETs, CONCURRENCY at a time, round robin over the instances; signed before the clock starts. */
async function burst(d: Deployment): Promise<void> {
  const requests = Array.from({ length: REQUESTS }, (_, i) => {
    const url = `${d.bases[i % d.bases.length]}/v1/api-keys`;
    return { url, headers: signedHeaders(d.creds, 'GET', url) };
  });
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < requests.length) {
      const r = requests[next++]!;
      const res = await fetch(r.url, { headers: r.headers });
      if (res.status !== 200) throw new Error(`authenticated request refused: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
  }));
  d.bursts.push(performance.now() - t0);
}

function rate(d: Deployment): Record<string, number> {
  const sorted = [...d.bursts].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
  return { req_per_s: Math.round(REQUESTS / (median / 1000)), concurrency: CONCURRENCY, instances: d.bases.length };
}

async function toSigned(d: Deployment): Promise<void> {
  const client = d.clients[d.seq % d.clients.length]!;
  const tx = await client.sendEvm({ wallet: d.wallet, to: '0x00000000000000000000000000000000000a11ce', amount: 1n, idempotencyKey: `bench-${d.seq++}` });
  const t = await client.waitForTransaction(tx.id, ['signed', 'broadcast', 'confirmed'], { intervalMs: 5, timeoutMs: 60_000 });
  if (t.state === 'failed' || t.state === 'rejected') throw new Error(`bench transaction ${t.state}: ${t.reason ?? ''}`);
}

export const suite: BenchSuite = {
  title: 'API instances',
  async setup() {
    cluster = new Cluster();
    const operator = ed25519.utils.randomSecretKey();
    const operatorFile = join(cluster.dir, 'operator.key');
    writeFileSync(operatorFile, bytesToHex(operator), { mode: 0o600 });
    await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
    await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) })));
    anvil = await startAnvil();
    postgres = await startPostgres();
    single = await deployment({ API_DATA_DIR: join(cluster.dir, 'api-leveldb') }, ['api-leveldb'], operatorFile);
    triple = await deployment({ API_DATABASE_URL: await newDatabase(postgres, 'bench') }, ['api-pg-1', 'api-pg-2', 'api-pg-3'], operatorFile);
  },
  // Also after a setup that failed halfway (bench/harness.ts): stops only what was started.
  async teardown() {
    await cluster?.stop();
    await anvil?.stop();
    await postgres?.stop();
  },
  cases: [
    { name: 'api.instances.get.leveldb-1', runs: 5, warmup: 1, fn: () => burst(single), extra: () => rate(single) },
    {
      name: 'api.instances.get.postgres-3', baseline: 'api.instances.get.leveldb-1', runs: 5, warmup: 1, fn: () => burst(triple),
      extra: () => ({ ...rate(triple), note: 'ratio of burst times: below 1 is more requests per second' }),
    },
    { name: 'api.instances.to-signed.leveldb-1', baseline: 'baseline.ecdsa.sign', runs: 15, warmup: 2, fn: () => toSigned(single) },
    {
      name: 'api.instances.to-signed.postgres-3', baseline: 'api.instances.to-signed.leveldb-1', runs: 15, warmup: 2, fn: () => toSigned(triple),
      extra: () => ({ note: 'each transfer submitted to the next instance; ratio to one LevelDB instance' }),
    },
  ],
};
