// The real API process killed (SIGKILL) in the middle of a webhook delivery run and restarted on the same
// data directory: no event is lost, and no endpoint gets one event under two event ids. The tenant and
// its key come from the operator command; the receivers are real HTTP servers on loopback.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Cluster, freePort, waitUntil, type Proc } from '../../cluster/cluster-harness.ts';
import { verifyWebhookHmac } from '../../../api/sdk/webhook-receiver.ts';

const root = resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);

interface Got { headers: IncomingHttpHeaders; body: string; answered: boolean }

/** Loopback receivers that hold every request while `hold` is on; `release` answers the held ones 200. */
function receivers(t: Test) {
  let hold = true;
  const held: { g: Got; res: ServerResponse }[] = [];
  const make = async () => {
    const got: Got[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const g: Got = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered: false };
        got.push(g);
        if (hold) return void held.push({ g, res });
        g.answered = true;
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
  };
  return {
    make,
    held: () => held.length,
    release: () => {
      for (const { g, res } of held.splice(0)) {
        g.answered = true;
        res.writeHead(200).end('ok');
      }
    },
    /** Stops holding; requests still held are dropped, as a dead process leaves them. */
    open: () => {
      hold = false;
      for (const { res } of held.splice(0)) res.destroy();
    },
  };
}

async function admin(dataDir: string, ...args: string[]): Promise<Record<string, string>> {
  const { stdout } = await run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', API_DATA_DIR: dataDir } });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, string>;
}

t.test('SIGKILL during a delivery run, restart on the same data: nothing lost, one event id per event and endpoint', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  const dataDir = join(cluster.dir, 'api');
  const tenant = await admin(dataDir, 'tenant', 'create', '--name', 'Acme');
  const key = await admin(dataDir, 'key', 'create', '--workspace', tenant.sandbox_workspace!, '--role', 'owner');
  t.match(key.bearer_token, /^svc_test_/);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const start = async (): Promise<Proc> => {
    const p = cluster.spawn('api', 'api/server.ts', { API_HOST: '127.0.0.1', API_PORT: String(port), API_DATA_DIR: dataDir, API_LOG_LEVEL: 'warn', API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1' });
    await waitUntil(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true, 30_000, 'api healthz');
    return p;
  };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/v1${path}`, { method, headers: { authorization: `Bearer ${key.bearer_token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> & { data?: unknown[] } };
  };

  const rxs = receivers(t);
  const rx = [await rxs.make(), await rxs.make(), await rxs.make()];
  const api1 = await start();
  const secrets: string[] = [];
  for (const r of rx) {
    const c = await call('POST', '/webhook-endpoints', { url: r.url, events: ['webhook.endpoint.disabled'] });
    t.equal(c.status, 201);
    secrets.push(String(c.json.secret));
  }
  // Each disabled endpoint emits one webhook.endpoint.disabled event, named by its resource id: 24 deliveries.
  const EVENTS = 8;
  const TOTAL = EVENTS * rx.length;
  const sources: string[] = [];
  for (let i = 0; i < EVENTS; i++) sources.push(String((await call('POST', '/webhook-endpoints', { url: `http://127.0.0.1:9/unused-${i}`, events: ['payment.confirmed'] })).json.id));
  for (const id of sources) t.equal((await call('PATCH', `/webhook-endpoints/${id}`, { enabled: false })).status, 200);

  // The first requests are answered, so some deliveries are done; then the tenant's 8 slots (half of the
  // engine's 16: no tenant holds more) each hold one request in flight, and the rest wait in the queue:
  // that is when the process dies.
  await waitUntil(() => rxs.held() > 0, 20_000, 'first requests');
  rxs.release();
  const done = rx.reduce((n, r) => n + r.got.filter((g) => g.answered).length, 0);
  await waitUntil(() => rxs.held() === Math.min(8, TOTAL - done), 20_000, 'the run in flight');
  const inFlight = rxs.held();
  t.ok(done > 0 && inFlight > 0, `at the kill: ${done} delivered, ${inFlight} in flight, ${TOTAL - done - inFlight} queued`);
  const exit = await api1.kill('SIGKILL');
  t.equal(exit.signal, 'SIGKILL', 'the process was killed, not stopped');
  rxs.open();

  await start();
  const delivered = (r: (typeof rx)[number]) => new Set(r.got.filter((g) => g.answered).map((g) => (JSON.parse(g.body) as { resource: { id: string } }).resource.id));
  await waitUntil(() => rx.every((r) => delivered(r).size === EVENTS), 30_000, 'every event delivered after the restart');
  await waitUntil(async () => (await call('GET', '/webhook-deliveries?status=delivered&limit=100')).json.data!.length === TOTAL, 10_000, 'every delivery row delivered');

  const eventIdsBySource = new Map<string, Set<string>>();
  rx.forEach((r, i) => {
    const bySource = new Map<string, Set<string>>();
    for (const g of r.got) {
      const env = JSON.parse(g.body) as { id: string; type: string; resource: { id: string } };
      t.equal(g.headers['svc-webhook-event-id'], env.id);
      t.ok(verifyWebhookHmac(String(g.headers['svc-webhook-signature']), g.body, [secrets[i]!]), 'signed by the endpoint secret');
      bySource.set(env.resource.id, (bySource.get(env.resource.id) ?? new Set()).add(env.id));
      eventIdsBySource.set(env.resource.id, (eventIdsBySource.get(env.resource.id) ?? new Set()).add(env.id));
    }
    t.same([...bySource.keys()].sort(), [...sources].sort(), `receiver ${i + 1}: every event arrived`);
    t.ok([...bySource.values()].every((ids) => ids.size === 1), `receiver ${i + 1}: each event under exactly one event id`);
  });
  t.ok([...eventIdsBySource.values()].every((ids) => ids.size === 1), 'one event id per event across all endpoints');
  t.ok(rx.reduce((n, r) => n + r.got.length, 0) >= TOTAL + inFlight, 'the requests cut off by the kill were sent again');
  t.equal((await call('GET', '/webhook-deliveries?status=pending&limit=100')).json.data!.length, 0, 'nothing left pending');
});
