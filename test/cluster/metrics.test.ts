// The metrics ports of the real programs (docs/operations.md "Metrics and health"): node processes with
// NODE_METRICS_LISTEN and a coordinator with COORDINATOR_METRICS_LISTEN run a key generation and a
// signing the nodes refuse; each port then shows the sessions by kind and outcome, the refusals by
// code, the attached nodes, and answers its probes. The API process serves its own on API_METRICS_LISTEN.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Cluster, freePort, waitUntil } from './cluster-harness.ts';
import { startCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';
import { Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';

// Real processes on a small machine shared with the rest of the suite.
t.setTimeout(300_000);

/** The value of one sample in Prometheus text, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m && m[1] === name && want.every((w) => (m[2] ?? '').split(',').includes(w))) return Number(m[3]);
  }
  return undefined;
}

const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

t.test('key generation and a refused signing, as the coordinator and the nodes count them', async (t) => {
  const cluster = new Cluster();
  const dir = mkdtempSync(join(tmpdir(), 'coord-'));
  const port = await freePort();
  const rosterFile = await cluster.roster(['node-1', 'node-2', 'node-3']);
  const coordinator = await startCoordinator(loadCoordinatorConfig({
    COORDINATOR_LISTEN: `127.0.0.1:${port}`, COORDINATOR_DATA_DIR: dir, COORDINATOR_ROSTER_FILE: rosterFile, COORDINATOR_HEARTBEAT_MS: '1000', COORDINATOR_METRICS_LISTEN: '127.0.0.1:0',
  }), createLogger('coordinator', 'silent'));
  cluster.useCoordinatorPort(port);
  const client = connectCoordinator({ address: `127.0.0.1:${port}` });
  let stopped = false;
  t.teardown(async () => {
    client.close();
    await cluster.stop();
    if (!stopped) await coordinator.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const metricsPorts = await Promise.all([1, 2, 3].map(() => freePort()));
  const nodes = await Promise.all(['node-1', 'node-2', 'node-3'].map((n, i) => cluster.startNode(n, { NODE_METRICS_LISTEN: `127.0.0.1:${metricsPorts[i]}` })));
  const coordPort = coordinator.metricsPort!;
  t.ok(coordPort > 0, 'the coordinator serves metrics on a port of its own');
  await waitUntil(async () => sample(await scrape(coordPort), 'attached_nodes', { kind: 'service' }) === 3, 20_000, 'three nodes in attached_nodes');

  const created = await client.createVault({ vaultId: 'vault-m', owner: 'org_acme', tier: Tier.HOSTED, requestId: 'vlt_m:job_1' }, { deadline: Date.now() + 120_000 });
  t.equal(created.vault?.state, 'active');
  // A signing under an intent nobody signed: the signers refuse it.
  await t.rejects(client.sign({
    vaultId: 'vault-m', path: [86, 1, 0, 0, 0], scheme: Scheme.SCHNORR_TAPROOT, digests: [new Uint8Array(randomBytes(32))], requestId: 'txn_m:1',
    authorization: { intent: new Uint8Array(randomBytes(40)), intentSignature: new Uint8Array(randomBytes(64)), apiKeyId: 'key_1', template: new Uint8Array() },
  }, { deadline: Date.now() + 30_000 }));

  const coord = await scrape(coordPort);
  t.equal(sample(coord, 'sessions_finished_total', { kind: 'dkg', outcome: 'ok' }), 1, 'one key generation, ok');
  t.ok(sample(coord, 'sessions_finished_total', { kind: 'ot-setup', outcome: 'ok' })! >= 1, 'its OT setup, ok');
  // A refusal ends the signing once a second node, in another subset, gives it too: two sessions.
  t.equal(sample(coord, 'sessions_finished_total', { kind: 'sign-schnorr', outcome: 'party_failed' }), 2, 'the refused signing, in its two sessions');
  t.equal(sample(coord, 'session_duration_seconds_count', { kind: 'dkg', outcome: 'ok' }), 1);
  t.ok(sample(coord, 'process_cpu_seconds_total', {}) !== undefined, 'process metrics');
  t.equal((await fetch(`http://127.0.0.1:${coordPort}/readyz`)).status, 200, 'the coordinator is ready');

  const texts = await Promise.all(metricsPorts.map(async (p) => {
    // A refused or cancelled signer may report just after the coordinator settled.
    await waitUntil(async () => sample(await scrape(p), 'node_sessions_running', {}) === 0, 10_000, 'no session left running');
    return scrape(p);
  }));
  for (const text of texts) t.equal(sample(text, 'node_sessions_total', { kind: 'dkg', outcome: 'ok' }), 1, 'each node took part in the key generation');
  const refusals = texts.flatMap((text) => text.split('\n').filter((l) => l.startsWith('node_session_refusals_total{') && l.includes('kind="sign-schnorr"')));
  t.ok(refusals.length >= 1, `a signer counted its refusal by code: ${refusals.join('; ')}`);
  for (const [i, p] of metricsPorts.entries()) {
    t.equal((await fetch(`http://127.0.0.1:${p}/readyz`)).status, 200, `node ${i + 1} is ready while attached`);
    t.equal(sample(texts[i]!, 'node_coordinator_attached', { coordinator: `127.0.0.1:${port}` }), 1, 'attached, by coordinator address');
  }

  // The API process with API_METRICS_LISTEN: its requests and queues on that port, nothing on the public one.
  const apiMetricsPort = await freePort();
  await cluster.startApi({ API_METRICS_LISTEN: `127.0.0.1:${apiMetricsPort}` });
  const ready = await fetch(`http://127.0.0.1:${cluster.apiPort}/readyz`);
  t.match({ status: ready.status, body: await ready.json() }, { status: 200, body: { status: 'ready', coordinator: 'reachable', store: 'reachable', node_count: 3 } });
  t.equal((await fetch(`http://127.0.0.1:${cluster.apiPort}/metrics`)).status, 404, 'no /metrics on the public port');
  const api = await scrape(apiMetricsPort);
  t.equal(sample(api, 'http_requests_total', { method: 'GET', route: '/readyz', status: '200' }), 1);
  t.equal(sample(api, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
  t.equal(sample(api, 'job_queue_depth', { queue: 'vault_jobs' }), 0);
  t.equal(sample(api, 'webhook_deliveries_total', { outcome: 'delivered' }), 0);

  // A node off its coordinator is not ready.
  await coordinator.stop();
  stopped = true;
  await waitUntil(async () => (await fetch(`http://127.0.0.1:${metricsPorts[0]}/readyz`)).status === 503, 20_000, 'node readyz 503 without a coordinator');
  t.pass('node readiness follows its link');
  void nodes;
});
