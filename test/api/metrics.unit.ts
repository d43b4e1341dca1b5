// The API's metrics (docs/operations.md "Metrics and health"): served on a port of their own and never
// on the public one; requests counted by route pattern and status, never by URL; queue depth and lag
// read from the store; webhook delivery outcomes; and readiness that fails when the store or the
// coordinator does.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { createPlatform } from '../../api/platform.ts';
import { createMetricsRegistry } from '../../common/metrics/metrics-registry.ts';
import { serveMetrics } from '../../common/metrics/metrics-server.ts';
import { webhookDeliveryMetrics } from '../../api/metrics/webhook-metrics.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { startCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { receiver, LOOPBACK_RECEIVERS } from './setup-platform.ts';
import { jobQueueFor } from '../../api/jobs/queue-for-store.ts';
import { VAULT_KEY_JOB } from '../../api/vaults/vault-service.ts';
import { TRANSACTION_PROGRESS } from '../../api/transactions/transaction-service.ts';

const logger = createLogger('api-test', 'silent');

/** A platform API over a real LevelDB, listening on loopback, with its metrics on a port of their own. */
async function setup(t: Test, opts: { coordinator?: ReturnType<typeof connectCoordinator>; clock?: () => number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'api-metrics-'));
  const store = await RecordStore.open(dir);
  const registry = createMetricsRegistry();
  const platform = await createPlatform(store, {
    objectDir: join(dir, 'objects'), webhookAllowedDestinations: LOOPBACK_RECEIVERS, onDeliveryOutcome: webhookDeliveryMetrics(registry), ...(opts.clock ? { clock: opts.clock } : {}),
  });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger, platform, coordinator: opts.coordinator, metrics: registry });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const metrics = await serveMetrics(registry, { listen: '127.0.0.1:0' });
  t.teardown(async () => {
    await metrics.close();
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const publicUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
    t.equal(res.status, 200, 'the metrics port answers /metrics');
    return res.text();
  };
  const { sandbox } = await platform.tenancy.createTenant('Acme');
  const { token } = await platform.tenancy.createKey(sandbox.id, 'owner');
  const get = (path: string, auth = true) => fetch(publicUrl + path, { headers: auth ? { authorization: `Bearer ${token}` } : {} });
  return { dir, store, platform, app, publicUrl, scrape, get, token, sandbox };
}

/** The value of one sample, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',');
    if (want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

t.test('requests are counted by route pattern and status on the metrics port; the public port has no /metrics', async (t) => {
  const s = await setup(t);
  const before = await s.scrape();
  t.equal(sample(before, 'http_requests_total', { route: '/healthz' }), undefined, 'nothing counted before any request');
  t.ok(sample(before, 'process_cpu_seconds_total', {}) !== undefined, 'process metrics are there');

  t.equal((await s.get('/healthz', false)).status, 200);
  t.equal((await s.get('/healthz', false)).status, 200);
  const missing = 'whd_' + '7'.repeat(26);
  t.equal((await s.get(`/v1/webhook-deliveries/${missing}`)).status, 404, 'a delivery that does not exist');
  t.equal((await s.get('/v1/webhook-deliveries')).status, 200);
  t.equal((await s.get('/no/such/route/abc123?token=s3cr3t', false)).status, 404);
  const exposed = await s.get('/metrics', false);
  t.equal(exposed.status, 404, 'the public port does not serve /metrics');
  t.notMatch(await exposed.text(), /http_requests_total/);

  const text = await s.scrape();
  t.equal(sample(text, 'http_requests_total', { method: 'GET', route: '/healthz', status: '200' }), 2, 'two 200s on /healthz');
  t.equal(sample(text, 'http_requests_total', { method: 'GET', route: '/v1/webhook-deliveries/:id', status: '404' }), 1, 'the 404 is under the route pattern');
  t.equal(sample(text, 'http_requests_total', { method: 'GET', route: '/v1/webhook-deliveries', status: '200' }), 1);
  t.equal(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 2, 'unknown paths (and /metrics) under one fixed label');
  t.equal(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/healthz', status: '200' }), 2, 'each request timed');
  t.notMatch(text, new RegExp(`${missing}|abc123|s3cr3t|${s.token}`), 'no id, path, query or token in any label');
});

t.test('queue depth and lag come from the store; webhook outcomes are counted', async (t) => {
  let offset = 0;
  const s = await setup(t, { clock: () => Date.now() + offset });
  // On the durable job queue: a key generation due five seconds ago, and two transaction jobs, one due
  // in a minute and one running (leased) now.
  await s.store.batch([
    { type: 'enqueue', kind: VAULT_KEY_JOB, key: 'vlt_1', payload: { job_id: 'job_1' }, opts: { runAt: Date.now() - 5_000 } },
    { type: 'enqueue', kind: TRANSACTION_PROGRESS, key: 'txn_1', payload: { phase: 'follow' }, opts: { runAt: Date.now() + 60_000 } },
    { type: 'enqueue', kind: TRANSACTION_PROGRESS, key: 'txn_2', payload: { phase: 'sign' } },
  ]);
  t.equal((await jobQueueFor(s.store).claim('elsewhere', [TRANSACTION_PROGRESS], 1, 60_000))[0]?.key, 'txn_2');
  let text = await s.scrape();
  t.equal(sample(text, 'job_queue_depth', { queue: 'vault_jobs' }), 1);
  t.ok(sample(text, 'job_queue_lag_seconds', { queue: 'vault_jobs' })! >= 5, 'the overdue job shows as lag');
  t.equal(sample(text, 'job_queue_leased', { queue: 'vault_jobs' }), 0);
  t.equal(sample(text, 'job_queue_depth', { queue: 'transaction_jobs' }), 2);
  t.equal(sample(text, 'job_queue_leased', { queue: 'transaction_jobs' }), 1, 'the leased one runs somewhere');
  t.equal(sample(text, 'job_queue_lag_seconds', { queue: 'transaction_jobs' }), 0, 'a job not yet due, or running, is no lag');
  t.equal(sample(text, 'job_queue_depth', { queue: 'webhook_deliveries' }), 0);
  t.equal(sample(text, 'webhook_deliveries_total', { outcome: 'delivered' }), 0, 'outcomes start at zero');

  // One event to an endpoint that fails once, then takes it.
  const rx = await receiver(t, (n) => (n === 1 ? 503 : 200));
  const created = await fetch(`${s.publicUrl}/v1/webhook-endpoints`, {
    method: 'POST', headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ url: rx.url, events: ['payment.confirmed'] }),
  });
  t.equal(created.status, 201);
  await s.platform.deliveries.emit({ tenant: s.sandbox.tenant, workspace: s.sandbox.id }, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 'test' }, { payment_id: 'pay_1', status: 'confirmed' });
  text = await s.scrape();
  t.equal(sample(text, 'job_queue_depth', { queue: 'webhook_deliveries' }), 1, 'the delivery is queued');
  await s.platform.deliveries.runDue();
  offset += 61_000;
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 2);
  text = await s.scrape();
  t.equal(sample(text, 'webhook_deliveries_total', { outcome: 'failed' }), 1);
  t.equal(sample(text, 'webhook_deliveries_total', { outcome: 'delivered' }), 1);
  t.equal(sample(text, 'webhook_deliveries_total', { outcome: 'dlq' }), 0);
  t.equal(sample(text, 'job_queue_depth', { queue: 'webhook_deliveries' }), 0, 'nothing left queued');
  t.notMatch(text, /127\.0\.0\.1:\d+\/hook/, 'no endpoint URL in any label');
});

t.test('readiness: ready with a store and a coordinator; 503 when the store is closed or the coordinator is gone', async (t) => {
  const cdir = mkdtempSync(join(tmpdir(), 'api-metrics-coord-'));
  const coord = await startCoordinator(loadCoordinatorConfig({ COORDINATOR_LISTEN: '127.0.0.1:0', COORDINATOR_DATA_DIR: cdir }), logger);
  const client = connectCoordinator({ address: `127.0.0.1:${coord.port}` });
  let coordStopped = false;
  t.teardown(async () => {
    client.close();
    if (!coordStopped) await coord.stop();
    rmSync(cdir, { recursive: true, force: true });
  });
  const s = await setup(t, { coordinator: client });
  const readyz = async () => {
    const r = await s.app.inject({ method: 'GET', url: '/readyz' });
    return { status: r.statusCode, body: r.json() as { status: string; coordinator: string; store: string; node_count: number } };
  };
  t.same(await readyz(), { status: 200, body: { status: 'ready', coordinator: 'reachable', coordinators: [{ name: 'default', state: 'reachable', node_count: 0 }], store: 'reachable', nodes: [], node_count: 0, vaults_unable_to_sign: { count: 0, reasons: {}, vaults: [] } } });

  await coord.stop();
  coordStopped = true;
  t.match(await readyz(), { status: 503, body: { status: 'unavailable', coordinator: 'unreachable', store: 'reachable' } }, 'coordinator gone');

  await s.store.close();
  t.match(await readyz(), { status: 503, body: { status: 'unavailable', store: 'unreachable' } }, 'store closed');
  t.equal((await s.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'liveness does not depend on either');
});

t.test('readiness fails on a closed store even with a coordinator that answers', async (t) => {
  const cdir = mkdtempSync(join(tmpdir(), 'api-metrics-coord-'));
  const coord = await startCoordinator(loadCoordinatorConfig({ COORDINATOR_LISTEN: '127.0.0.1:0', COORDINATOR_DATA_DIR: cdir }), logger);
  const client = connectCoordinator({ address: `127.0.0.1:${coord.port}` });
  t.teardown(async () => {
    client.close();
    await coord.stop();
    rmSync(cdir, { recursive: true, force: true });
  });
  const s = await setup(t, { coordinator: client });
  await s.store.close();
  const r = await s.app.inject({ method: 'GET', url: '/readyz' });
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 'unavailable', coordinator: 'reachable', store: 'unreachable' });
  // The queue gauges drop out rather than failing the scrape.
  const text = await s.scrape();
  t.equal(sample(text, 'job_queue_depth', { queue: 'vault_jobs' }), undefined);
  t.ok(sample(text, 'process_cpu_seconds_total', {}) !== undefined, 'the rest of the scrape is there');
});

t.test('the metrics port may not be the public port', async (t) => {
  t.throws(() => loadApiConfig({ API_PORT: '8080', API_METRICS_LISTEN: '127.0.0.1:8080' }), /API_METRICS_LISTEN/);
  t.equal(loadApiConfig({ API_METRICS_LISTEN: '127.0.0.1:9464' }).metricsListen, '127.0.0.1:9464');
  t.equal(loadApiConfig({}).metricsListen, undefined, 'off unless configured');
});
