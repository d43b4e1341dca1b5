// End to end with the real coordinator and signer nodes, the API in this process: vaults whose key
// generation fails (no nodes attached, then a committee the nodes refuse) end `failed`; a failed vault is
// deleted, or retried into a fresh key generation that completes once the nodes are there; a vault with
// a key is neither; the customer's endpoint receives vault.failed; and the key that real DKG produced
// re-derives every wallet address from the xpub the API returns, with standard BIP-32 code only.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { HDKey } from '@scure/bip32';
import { Cluster, waitUntil } from '../cluster/cluster-harness.ts';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { VaultJobs } from '../../api/vaults/vault-jobs.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { signedHeaders, type ApiCredentials } from '../../api/sdk/request-signer.ts';
import type { JobRecord } from '../../api/vaults/records.ts';
import { addressFromXpub, TESTNET, type WalletView } from '../api/vault/xpub-addresses.ts';
import { createPlatform } from '../../api/platform.ts';
import { CustomerLinks } from '../../api/customers/customer-links.ts';
import { createCustomer } from '../../api/customers/create-customer.ts';
import { EventRelay } from '../../api/customers/event-relay.ts';
import { verifyWebhook } from '../../api/sdk/webhook-receiver.ts';
import { receiver, type Received } from '../support/loopback-receiver.ts';
import { elsewhereIn, received } from '../api/webhooks/catalog-receipt.ts';

// Real processes on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000);

interface VaultView { id: string; state: string; problem: string | null; public_key: string | null; xpub: string | null }

t.test('failed vaults are retried or deleted; a real key re-derives from its xpub', async (t) => {
  const cluster = new Cluster();
  await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
  // Read while no node holds its store: the roster's service node ids.
  const serviceIds = await Promise.all(['node-1', 'node-2', 'node-3'].map(async (n) => (await cluster.identity(n)).node_id));
  const dir = mkdtempSync(join(tmpdir(), 'api-lifecycle-'));
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 10 } });
  const coordinator = connectCoordinator({ address: `127.0.0.1:${cluster.coordinatorPort}` });
  const log = createLogger('api', 'silent');
  // The platform API too, so the customer's endpoint receives vault.failed (a row of the catalog-events test).
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), webhookAllowedDestinations: ['127.0.0.1'] });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: log, vaults, coordinator, platform });
  // One attempt per generation, so a vault without nodes fails at once rather than after half an hour.
  const jobs = new VaultJobs(vaults, coordinator, log, 200, 1);
  t.teardown(async () => {
    await jobs.stop();
    await app.close();
    coordinator.close();
    await store.close();
    await cluster.stop();
  });
  const secret = ed25519.utils.randomSecretKey();
  // A customer rooted by the operator key the nodes trust, as the operator command makes it.
  const links = new CustomerLinks(store);
  const customer = await createCustomer({ store, vaults, tenancy: platform.tenancy, links, environment: 'sandbox' }, { name: 'Acme', publicKey: bytesToHex(ed25519.getPublicKey(secret)), operatorSecretKey: cluster.operator });
  const creds: ApiCredentials = { keyId: customer.apiKeyId, secretKey: secret };
  const rx = await receiver(t);
  const owner = (await platform.tenancy.createKey(customer.sandbox.id, 'owner', {})).token;
  const endpoint = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/json' }, payload: JSON.stringify({ url: rx.url, events: ['vault.failed'] }) });
  t.equal(endpoint.statusCode, 201, endpoint.body);
  const relay = new EventRelay({ store, links, deliveries: platform.deliveries, log, audit: platform.audit });
  const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(creds, method, `http://api.test${path}`, payload) } });
  };
  const get = async (id: string) => (await call('GET', `/v1/vaults/${id}`)).json() as VaultView;
  const settled = async (id: string, state: string, ms = 120_000) => {
    await waitUntil(async () => (await get(id)).state === state, ms, `vault ${id} ${state}`, 200);
    return get(id);
  };
  const events = async (id: string) => {
    const out: string[] = [];
    for await (const e of store.all<{ type: string; resource_id: string }>('outbox')) if (e.resource_id === id) out.push(e.type);
    return out;
  };
  jobs.start();

  // No node is attached: the generation fails, and with one attempt the vault fails.
  const a = (await call('POST', '/v1/vaults', { tier: 'hosted', name: 'a' })).json() as VaultView;
  const b = (await call('POST', '/v1/vaults', { tier: 'hosted', name: 'b' })).json() as VaultView;
  const failedA = await settled(a.id, 'failed', 30_000);
  t.match(failedA.problem, /^not_enough_nodes: /, 'the problem names the code and reason');
  t.equal((await settled(b.id, 'failed', 30_000)).public_key, null);

  const del = await call('DELETE', `/v1/vaults/${b.id}`);
  t.equal(del.statusCode, 204, 'a failed vault is deleted');
  t.equal((await call('GET', `/v1/vaults/${b.id}`)).statusCode, 404);
  t.same(await events(b.id), ['vault.created', 'vault.failed', 'vault.deleted']);

  // The nodes come; the failed vault is retried into a fresh generation that completes.
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n)));
  const retried = await call('POST', `/v1/vaults/${a.id}/retry`);
  t.equal(retried.statusCode, 202);
  t.match(retried.json(), { state: 'creating', problem: null });
  t.equal((await call('POST', `/v1/vaults/${a.id}/retry`)).statusCode, 202, 'a second retry is answered as the first');
  const active = await settled(a.id, 'active');
  t.match(active.public_key, /^0[23][0-9a-f]{64}$/, 'the retried vault has its key');
  t.same((await events(a.id)).filter((e) => e !== 'vault.created'), ['vault.failed', 'vault.retried', 'vault.activated'], 'one retry, one generation');
  const left: JobRecord[] = [];
  for await (const j of store.all<JobRecord>('jobs')) if (j.vault_id === a.id) left.push(j);
  t.same(left, [], 'no key job is left');

  for (const [method, path] of [['POST', `/v1/vaults/${a.id}/retry`], ['DELETE', `/v1/vaults/${a.id}`]] as const) {
    const res = await call(method, path);
    t.equal(res.statusCode, 409, `${method} ${path} of an active vault: 409`);
    t.equal(res.json().code, 'conflict');
  }
  t.equal((await get(a.id)).state, 'active', 'the vault with a key stays');

  // The xpub of the key DKG made: every wallet address re-derives from it with standard BIP-32 code.
  const xpub = active.xpub!;
  t.equal(bytesToHex(HDKey.fromExtendedKey(xpub, TESTNET).publicKey!), active.public_key, 'the xpub\'s key is the vault\'s');
  for (const body of [{ chain: 'evm-local' }, { chain: 'evm-local', account_index: 5 }, { chain: 'bitcoin-regtest' }, { chain: 'bitcoin-regtest', address_type: 'p2tr' }, { chain: 'bitcoin-testnet', address_type: 'p2tr', account_index: 9 }]) {
    const w = (await call('POST', `/v1/vaults/${a.id}/wallets`, body)).json() as WalletView;
    t.equal(addressFromXpub(xpub, w), w.address, `${w.chain} ${w.address_type} ${w.derivation_path} re-derives from the xpub`);
  }

  // A committee the nodes refuse (a hosted key is 2-of-3; this names two nodes): failed at once, and the
  // coordinator does not run a refused generation again, so a retry fails with the reason; delete it.
  const committee = serviceIds.slice(0, 2);
  const c = (await call('POST', '/v1/vaults', { tier: 'hosted', name: 'c', committee })).json() as VaultView;
  t.match((await settled(c.id, 'failed', 60_000)).problem, /bad_committee/, 'the nodes refused the committee');
  t.equal((await call('POST', `/v1/vaults/${c.id}/retry`)).statusCode, 202, 'a refused vault can be asked again');
  const again = await settled(c.id, 'failed', 60_000);
  t.match(again.problem, /^vault_exists: the nodes refused this vault's key generation before/, 'and fails with why it cannot run again');
  t.equal((await call('DELETE', `/v1/vaults/${c.id}`)).statusCode, 204, 'then it is deleted');
  t.same((await events(c.id)), ['vault.created', 'vault.failed', 'vault.retried', 'vault.failed', 'vault.deleted']);

  // Relayed once the outbox has been read above (the relay consumes it): the first failure, at the endpoint.
  await relay.runOnce();
  await platform.deliveries.runDue();
  const verified = (g: Received) => verifyWebhook(g.headers, g.body, { secrets: [endpoint.json().secret as string], publicKey: platform.keys.webhookPublicKey });
  const rows: Record<string, Record<string, unknown>> = { 'vault.failed': { vault_id: a.id, state: 'failed', code: 'not_enough_nodes' } };
  for (const [name, want] of Object.entries(rows)) await received(t, name, rx, want, verified);
  t.same(Object.keys(rows), elsewhereIn('test/e2e/vault-lifecycle.test.ts'), 'exactly the rows the catalog test counts on');
});
