// Webhook deliveries to a local loopback receiver: one case per concurrency level, each run emitting a
// batch of events to one endpoint and driving the engine until every delivery landed. Figures: deliveries
// per second, delivery lag (emit to receipt) at the median and p99, and the signature cost per delivery.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { BenchCase, BenchSuite } from '../harness.ts';
import { Ed25519Signer } from '../../common/ed25519.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { createPlatform, type Platform } from '../../api/platform.ts';
import { hmacSignature, ed25519Signature, newWebhookSecret } from '../../api/webhooks/webhook-signing.ts';

const BATCH = 200;
let dir = '';
let server: Server | undefined;
let url = '';
const emittedAt = new Map<string, number>();
const lags: number[] = [];
const stores: RecordStore[] = [];

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]! * 100) / 100 : NaN;
}

function deliveryCase(concurrency: number): BenchCase {
  let platform: Platform | undefined;
  let scope = { tenant: '', workspace: '' };
  let totalMs = 0;
  let delivered = 0;
  const myLags: number[] = [];
  return {
    name: `webhooks.deliver.batch${BATCH}.c${concurrency}`,
    runs: 5,
    warmup: 1,
    fn: async () => {
      if (!platform) {
        const store = await RecordStore.open(join(dir, `c${concurrency}`));
        stores.push(store);
        platform = await createPlatform(store, { concurrency, webhookAllowedDestinations: ['127.0.0.1'] });
        const t = await platform.tenancy.createTenant('Bench');
        scope = { tenant: t.tenant.id, workspace: t.sandbox.id };
        await platform.endpoints.create(scope, { type: 'operator', id: 'bench' }, { url, events: ['payment.confirmed'] });
      }
      lags.length = 0;
      const t0 = performance.now();
      for (let i = 0; i < BATCH; i++) {
        const { event } = await platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: `pay_${i}` }, { type: 'system', id: 'bench' }, { payment_id: `pay_${i}`, status: 'confirmed' });
        emittedAt.set(event.id, performance.now());
      }
      // A pass gives the endpoint one turn (at most 100 rows); pass until the batch is out.
      while ((await platform.deliveries.runDue()) > 0) { /* next turn */ }
      const ms = performance.now() - t0;
      totalMs += ms;
      delivered += BATCH;
      myLags.push(...lags);
    },
    extra: () => ({ deliveries_per_s: Math.round((delivered / totalMs) * 1000), lag_p50_ms: pct(myLags, 0.5), lag_p99_ms: pct(myLags, 0.99), concurrency }),
  };
}

const secret = newWebhookSecret();
const seed = new Uint8Array(32).fill(7);
const signer = new Ed25519Signer(seed);
const body = JSON.stringify({ id: 'evt_bench', type: 'payment.confirmed', version: 1, data: { payment_id: 'pay_1', status: 'confirmed', amount: '125.00' } });

export const suite: BenchSuite = {
  title: 'webhook deliveries to a loopback receiver',
  setup: async () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const at = emittedAt.get(String(req.headers['svc-webhook-event-id']));
        if (at !== undefined) lags.push(performance.now() - at);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  },
  teardown: async () => {
    for (const s of stores) await s.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => server!.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  },
  cases: [
    { name: 'webhooks.sign.hmac', runs: 2000, fn: () => hmacSignature(secret, body) },
    { name: 'webhooks.sign.ed25519', baseline: 'baseline.schnorr.sign', runs: 500, fn: () => ed25519Signature(signer, body) },
    deliveryCase(1),
    deliveryCase(16),
  ],
};
