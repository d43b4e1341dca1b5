// How long a command of the command-line client takes, as a ratio to Node.js starting with nothing to
// run (`node -e ''`), measured in one run, through the `custody` launcher (the package's bin and `npm run
// cli`, deploy/cli/custody.mjs) from the bundle it keeps current: `--help`; a platform list call
// (`webhook-endpoints list`, a workspace bearer key) and a vault API call (`vault list`, signed with the
// organization's Ed25519 key), both answered by the real API (both APIs, as server.ts builds them, on a
// LevelDB store in a temporary directory) listening on a loopback port in this process; a platform call
// answered at once by a stub server, which times the client alone; and `keygen`, which loads the key code
// and writes a file. The suite first runs the launcher once and checks that the bundle is then current,
// so what is timed is the bundle, never a build or the TypeScript sources.
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../api/platform.ts';
import { CustomerLinks } from '../../api/customers/customer-links.ts';
import { createCustomer } from '../../api/customers/create-customer.ts';
import type { BenchSuite } from '../harness.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const launcher = join(root, 'deploy', 'cli', 'custody.mjs');
let work = '';
let stub: Server | undefined;
let stubUrl = '';
let api: FastifyInstance | undefined;
let store: RecordStore | undefined;
/** The settings of both kinds of call against the API in this process. */
let apiEnv: Record<string, string> = {};

function run(args: string[]): void {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: work } });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
}

/** A child run without blocking this process, which serves the API (or the stub) meanwhile. */
function runAsync(args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: work, ...env } });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited ${code}: ${err.slice(0, 300)}`))));
  });
}

/** Both APIs on a loopback port, with a customer: its vault API key (secret in a file) and a workspace owner key. */
async function startApi(): Promise<void> {
  const dir = join(work, 'api');
  store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 5 } });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
  const secret = ed25519.utils.randomSecretKey();
  const made = await createCustomer({ store, vaults, tenancy: platform.tenancy, links: new CustomerLinks(store), environment: 'sandbox' }, { name: 'Bench', publicKey: bytesToHex(ed25519.getPublicKey(secret)), operatorSecretKey: ed25519.utils.randomSecretKey() });
  const owner = (await platform.tenancy.createKey(made.sandbox.id, 'owner', {})).token;
  // Budgets no run reaches: every request is still counted (docs/operations.md "Rate limits").
  api = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir, API_RATE_LIMIT_PER_ADDRESS: '10000000', API_RATE_LIMIT_PER_KEY: '10000000' }),
    logger: createLogger('api', 'silent'), vaults, transactions: new TransactionService({ vaults, hasBackend: () => false }), platform,
  });
  const url = await api.listen({ host: '127.0.0.1', port: 0 });
  const keyFile = join(work, 'api-key.hex');
  writeFileSync(keyFile, bytesToHex(secret) + '\n', { mode: 0o600 });
  apiEnv = { CUSTODY_URL: url, CUSTODY_API_KEY: owner, CUSTODY_ORGANIZATION: made.organization.id, CUSTODY_KEY_ID: made.apiKeyId, CUSTODY_SECRET_KEY_FILE: keyFile };
}

export const suite: BenchSuite = {
  title: 'command-line client start',
  async setup() {
    work = mkdtempSync(join(tmpdir(), 'cli-bench-'));
    run([launcher, '--help']);
    // The bundle the launcher runs is current now: a timed run neither builds it nor falls back to tsx.
    const { currentBundle } = (await import(join(root, 'deploy', 'cli', 'cli-bundle.mjs'))) as { currentBundle: () => string | undefined };
    if (currentBundle() === undefined) throw new Error('the launcher ran, yet its bundle is not current: the timed runs would not run the bundle');
    stub = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_bench' }).end('{"theme":{},"resolved":{}}'));
    await new Promise<void>((r) => stub!.listen(0, '127.0.0.1', r));
    stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
    await startApi();
  },
  async teardown() {
    await api?.close();
    await store?.close();
    await new Promise<void>((r) => (stub ? stub.close(() => r()) : r()));
    rmSync(work, { recursive: true, force: true });
  },
  cases: [
    { name: 'node.start', runs: 15, warmup: 2, fn: () => run(['-e', '']) },
    { name: 'cli.start.help', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, '--help']) },
    { name: 'cli.call.platform-list', baseline: 'node.start', runs: 15, warmup: 2, fn: () => runAsync([launcher, 'webhook-endpoints', 'list'], apiEnv) },
    { name: 'cli.call.vault-list', baseline: 'node.start', runs: 15, warmup: 2, fn: () => runAsync([launcher, 'vault', 'list'], apiEnv) },
    { name: 'cli.start.platform', baseline: 'node.start', runs: 15, warmup: 2, fn: () => runAsync([launcher, 'branding', 'get'], { CUSTODY_URL: stubUrl, CUSTODY_API_KEY: 'svc_test_bench' }) },
    { name: 'cli.start.keygen', baseline: 'node.start', runs: 15, warmup: 2, fn: () => run([launcher, 'keygen', '--out', join(work, `k-${Math.random().toString(36).slice(2)}.hex`)]) },
  ],
};
