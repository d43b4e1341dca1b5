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
  t.same(r.json(), { error: 'no route GET /nope', code: 'not_found', request_id: r.headers['x-request-id'] });
});

t.test('api config refuses a plaintext coordinator off loopback', async (t) => {
  t.throws(() => loadApiConfig({ API_COORDINATOR: '10.0.0.5:7400' }), /loopback only/);
  t.throws(() => loadApiConfig({ API_PORT: '70000' }), /API_PORT/);
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
