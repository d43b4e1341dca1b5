// Liveness, readiness without a coordinator, and the one error shape for unknown routes.
import t from 'tap';
import { Writable } from 'node:stream';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { freePort } from '../cluster/cluster-harness.ts';

const config = loadApiConfig({ API_DATA_DIR: '/tmp/unused' });
const logger = createLogger('api-test', 'silent');

t.test('healthz answers ok; readyz is 503 without a coordinator', async (t) => {
  const app = await buildApp({ config, logger });
  t.teardown(() => app.close());
  const h = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(h.statusCode, 200);
  t.same(h.json(), { status: 'ok' });
  const r = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 'unavailable', coordinator: 'not_configured', node_count: 0 });
});

t.test('readyz is 503 when the coordinator does not answer', async (t) => {
  const port = await freePort();
  const coordinator = connectCoordinator({ address: `127.0.0.1:${port}` });
  const app = await buildApp({ config, logger, coordinator });
  t.teardown(async () => {
    await app.close();
    coordinator.close();
  });
  const r = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(r.statusCode, 503);
  t.equal(r.json().coordinator, 'unreachable');
});

t.test('unknown routes answer 404 in the one error shape', async (t) => {
  const app = await buildApp({ config, logger });
  t.teardown(() => app.close());
  const r = await app.inject({ method: 'GET', url: '/nope?x=1' });
  t.equal(r.statusCode, 404);
  t.same(r.json(), { error: 'no route GET /nope', code: 'not_found' });
});

t.test('api config refuses a plaintext coordinator off loopback', async (t) => {
  t.throws(() => loadApiConfig({ API_COORDINATOR: '10.0.0.5:7400' }), /loopback only/);
  t.throws(() => loadApiConfig({ API_PORT: '70000' }), /API_PORT/);
});

t.test('the OpenAPI document lists the routes with their schemas, and /docs serves a page', async (t) => {
  const { RecordStore } = await import('../../api/store/record-store.ts');
  const { VaultService } = await import('../../api/vaults/vault-service.ts');
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'openapi-')));
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 1, vaultsPerOrg: 1 } });
  const { TransactionService } = await import('../../api/transactions/transaction-service.ts');
  const app = await buildApp({ config, logger, vaults, transactions: new TransactionService({ vaults, hasBackend: () => true }) });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  t.equal(doc.openapi, '3.1.0');
  t.ok(doc.paths['/v1/vaults']?.post, 'POST /v1/vaults is documented');
  t.ok(doc.paths['/v1/vaults/{vaultId}/wallets']?.post?.requestBody, 'with its body schema');
  t.ok(doc.paths['/v1/api-keys']?.get?.responses?.['200'], 'and response schemas');
  for (const [path, method] of [['/v1/vaults', 'post'], ['/v1/committees', 'get'], ['/v1/api-keys', 'get']] as const) {
    const op = doc.paths[path]?.[method];
    t.same(op?.tags, ['vault API'], `${method} ${path} is tagged`);
    t.same(op?.security, [{ httpSignature: [] }], `${method} ${path} names its request signature`);
  }
  t.match(doc.paths['/v1/committees'].get.summary, /committee/, 'new routes carry a summary');
  // The customer-node routes and the lists: each with a summary, the vault API tag and its signature scheme.
  const added = [['/v1/nodes', 'post'], ['/v1/nodes', 'get'], ['/v1/nodes/{nodeId}/revoke', 'post'], ['/v1/tee/measurements', 'put'], ['/v1/tee/measurements', 'get'],
    ['/v1/node-config', 'get'], ['/v1/vaults', 'get'], ['/v1/vaults/{vaultId}/wallets', 'get'], ['/v1/transactions', 'get']] as const;
  for (const [path, method] of added) {
    const op = doc.paths[path]?.[method];
    t.ok(typeof op?.summary === 'string' && op.summary.length > 10, `${method} ${path} has a summary`);
    t.same(op?.tags, ['vault API'], `${method} ${path} is tagged`);
    t.same(op?.security, [{ httpSignature: [] }], `${method} ${path} names its request signature`);
  }
  const page = await app.inject({ method: 'GET', url: '/docs/' });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /text\/html/);
});

t.test('request lines are logged without the query string (upload signatures, claim tokens)', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _e, done) => { lines.push(chunk.toString()); done(); } });
  const app = await buildApp({ config, logger: createLogger('api-test', 'info', sink) });
  t.teardown(() => app.close());
  await app.inject({ method: 'GET', url: '/healthz?sig=s3cr3t-signature&claim_token=t0ken' });
  const logged = lines.join('');
  t.match(logged, /"path":"\/healthz"/, 'the request is logged with its path and status');
  t.match(logged, /"status":200/);
  t.notMatch(logged, /s3cr3t|t0ken/, 'no query value reaches the log');
});
