// Cross-tenant fairness of webhook delivery (issue #15 item 5; docs/platform/webhooks.md "Delivery
// queue"): tenant A has a backlog of 20,000 due deliveries, tenant B emits one event at a time, and each
// timed run is B's delivery latency, emit to receipt at a real loopback HTTP receiver, with the engine
// running as the API runs it (`start()`, real clock, 16 slots, ten-second timeout). One case per kind of
// backlog: A's endpoint never answers (every request waits for the timeout), answers at once (the
// backlog drains while B is measured), or is paused. Figures beside the timing: what A got meanwhile.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { BenchCase, BenchSuite } from '../harness.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { createPlatform, type Platform } from '../../api/platform.ts';

const BACKLOG = 20_000;
type Mode = 'slow' | 'fast' | 'paused';

let dir = '';
const servers: Server[] = [];
const stores: RecordStore[] = [];
const engines: Platform[] = [];
/** B's events waiting for their receipt. */
const waiting = new Map<string, () => void>();
/** Requests held by the never-answering receiver, destroyed at teardown. */
const held: ServerResponse[] = [];
let aReceived = 0;
let bUrl = '';

async function listen(handler: (eventId: string, res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(String(req.headers['svc-webhook-event-id']), res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

function fairnessCase(mode: Mode): BenchCase {
  let platform: Platform | undefined;
  let scopeB = { tenant: '', workspace: '' };
  let aUrl = '';
  let aAtStart = 0;
  let msMeasured = 0;
  let n = 0;
  return {
    name: `webhooks.fairness.b_latency.a_${mode}_${BACKLOG}`,
    runs: 40,
    warmup: 2,
    fn: async () => {
      if (!platform) {
        // Untimed (the first warmup run): the backlog, then the engine. The previous case's engine stops.
        for (const res of held.splice(0)) res.destroy();
        for (const p of engines.splice(0)) await p.deliveries.stop();
        aUrl = await listen((_id, res) => {
          aReceived++;
          if (mode === 'slow') held.push(res);
          else res.writeHead(204).end();
        });
        const store = await RecordStore.open(join(dir, mode));
        stores.push(store);
        platform = await createPlatform(store, { webhookAllowedDestinations: ['127.0.0.1'] });
        const a = await platform.tenancy.createTenant('Tenant A');
        const scopeA = { tenant: a.tenant.id, workspace: a.sandbox.id };
        const actor = { type: 'operator' as const, id: 'bench' };
        const epA = await platform.endpoints.create(scopeA, actor, { url: aUrl, events: ['payment.confirmed'] });
        if (mode === 'paused') await platform.endpoints.patch(scopeA, actor, epA.endpoint.id, { enabled: false });
        for (let i = 0; i < BACKLOG; i += 250) {
          await Promise.all(Array.from({ length: Math.min(250, BACKLOG - i) }, (_, j) => platform!.deliveries.emit(scopeA, 'payment.confirmed', { type: 'payment', id: `pay_a${i + j}` },
            { type: 'system', id: 'bench' }, { payment_id: `pay_a${i + j}`, status: 'confirmed' })));
        }
        const b = await platform.tenancy.createTenant('Tenant B');
        scopeB = { tenant: b.tenant.id, workspace: b.sandbox.id };
        await platform.endpoints.create(scopeB, actor, { url: bUrl, events: ['payment.confirmed'] });
        aReceived = 0;
        engines.push(platform);
        platform.deliveries.start();
        // The slow endpoint's turn is stuck before B is measured: every request it may have is held.
        if (mode === 'slow') while (held.length < 8) await new Promise((r) => setTimeout(r, 5));
        aAtStart = aReceived;
      }
      const t0 = performance.now();
      const { event } = await platform.deliveries.emit(scopeB, 'payment.confirmed', { type: 'payment', id: `pay_b${n}` }, { type: 'system', id: 'bench' }, { payment_id: `pay_b${n}`, status: 'confirmed' });
      n++;
      await new Promise<void>((resolve) => waiting.set(event.id, resolve));
      msMeasured += performance.now() - t0;
    },
    extra: () => ({
      backlog: BACKLOG,
      a_mode: mode,
      a_received_meanwhile: aReceived - aAtStart,
      a_per_s_meanwhile: Math.round(((aReceived - aAtStart) / msMeasured) * 1000),
    }),
  };
}

export const suite: BenchSuite = {
  title: 'webhook fairness: B\'s delivery latency behind A\'s 20,000-row backlog',
  setup: async () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-webhook-fairness-'));
    bUrl = await listen((id, res) => {
      res.writeHead(204).end();
      waiting.get(id)?.();
      waiting.delete(id);
    });
  },
  teardown: async () => {
    for (const res of held.splice(0)) res.destroy();
    for (const s of servers) s.closeAllConnections();
    for (const p of engines.splice(0)) await p.deliveries.stop();
    for (const s of stores) await s.close();
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    rmSync(dir, { recursive: true, force: true });
  },
  cases: [fairnessCase('slow'), fairnessCase('fast'), fairnessCase('paused')],
};
