// Webhook delivery, the outbox relay and Idempotency-Key with several API instances on one PostgreSQL
// database (docs/api-storage.md "Several instances"): each instance has its own store connection and its
// own services, as separate API processes would. Events are emitted through every instance while every
// instance's delivery engine runs, and the instance that delivered most stops a third of the way: each
// delivery reaches its receiver exactly once, no endpoint ever has more requests in flight than one
// engine allows it, and the queues end empty (no row left without its ready entry). Two relays on one
// outbox emit each event once.
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresRecordStore } from '../../../api/store/postgres/postgres-record-store.ts';
import { createPlatform } from '../../../api/platform.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { createCustomer } from '../../../api/customers/create-customer.ts';
import { EventRelay } from '../../../api/customers/event-relay.ts';
import { IdempotentRequests } from '../../../api/idempotency.ts';
import { DUE, QUEUES, READY } from '../../../api/webhooks/delivery-queue.ts';
import type { DeliveryRecord, Envelope } from '../../../api/webhooks/delivery-engine.ts';
import type { RecordRepository } from '../../../api/store/record-repository.ts';
import { createLogger } from '../../../common/logger.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { newPublicKey } from '../../customers/setup-customers.ts';
import { newDatabase, startPostgres } from '../../support/postgres.ts';
import { LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { ed25519 } from '@noble/curves/ed25519.js';

const server = await startPostgres();
t.teardown(() => server.stop());
const actor = { type: 'operator' as const, id: 'test' };
const PER_ENDPOINT = 4;

async function count(store: RecordRepository, collection: string): Promise<number> {
  let n = 0;
  for await (const _ of store.entries(collection)) n++;
  return n;
}

/** `n` stores on one fresh database, as `n` API instances hold them; closed at teardown. */
async function instances(t: Test, tag: string, n: number): Promise<PostgresRecordStore[]> {
  const url = await newDatabase(server, tag);
  const stores: PostgresRecordStore[] = [];
  for (let i = 0; i < n; i++) stores.push(await PostgresRecordStore.open({ connectionString: url }));
  t.teardown(async () => {
    for (const s of stores) await s.close();
  });
  return stores;
}

t.test('three instances deliver one stream: each delivery once, per-endpoint limits hold across them, queues end empty', async (t) => {
  const stores = await instances(t, 'wh', 3);
  const attempts = [0, 0, 0];
  const platforms = await Promise.all(stores.map((store, i) => createPlatform(store, {
    objectDir: mkdtempSync(join(tmpdir(), 'objects-')), webhookAllowedDestinations: LOOPBACK_RECEIVERS, concurrency: 2 * PER_ENDPOINT,
    onDeliveryOutcome: () => { attempts[i]!++; },
  })));

  // One receiver for every endpoint; it answers after a pause, so requests overlap.
  const seen = new Map<string, number>();
  const inFlight = new Map<string, number>();
  let maxInFlight = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const now = (inFlight.get(path) ?? 0) + 1;
      inFlight.set(path, now);
      maxInFlight = Math.max(maxInFlight, now);
      const event = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id;
      seen.set(`${path} ${event}`, (seen.get(`${path} ${event}`) ?? 0) + 1);
      setTimeout(() => {
        inFlight.set(path, inFlight.get(path)! - 1);
        res.writeHead(200).end('ok');
      }, 5);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    receiver.closeAllConnections();
    receiver.close(() => r());
  }));
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  // Two tenants, three endpoints, made through instance A; every instance emits into them.
  const [a] = platforms;
  const scopes: { tenant: string; workspace: string }[] = [];
  for (const name of ['Acme', 'Beta']) {
    const { tenant, sandbox } = await a!.tenancy.createTenant(name);
    scopes.push({ tenant: tenant.id, workspace: sandbox.id });
  }
  await a!.endpoints.create(scopes[0]!, actor, { url: `${base}/a1`, events: ['payment.confirmed'] });
  await a!.endpoints.create(scopes[0]!, actor, { url: `${base}/a2`, events: ['payment.confirmed'] });
  await a!.endpoints.create(scopes[1]!, actor, { url: `${base}/b1`, events: ['payment.confirmed'] });

  for (const p of platforms) p.deliveries.start(20);
  t.teardown(async () => {
    for (const p of platforms) await p.deliveries.stop();
  });
  const EVENTS = 120;
  const emitted: string[] = [];
  const emit = (from: number, to: number) => Promise.all(Array.from({ length: to - from }, async (_, j) => {
    const i = from + j;
    const { event } = await platforms[i % 3]!.deliveries.emit(scopes[i % 2]!, 'payment.confirmed', { type: 'payment', id: `pay_${i}` }, { type: 'system', id: 'test' }, { payment_id: `pay_${i}`, status: 'confirmed' });
    emitted.push(event.id);
  }));
  // A third of the stream, then the instance that has delivered most stops (its turns end, and the
  // others take its endpoints), then the rest: whichever instance won the first turns, the rest of the
  // stream is delivered by others.
  await emit(0, EVENTS / 3);
  await waitUntil(() => attempts.some((n) => n > 0), 20_000, 'a first delivery');
  const busiest = attempts.indexOf(Math.max(...attempts));
  await platforms[busiest]!.deliveries.stop();
  await emit(EVENTS / 3, EVENTS);
  const expected = emitted.length / 2 * 3; // tenant A's events go to two endpoints, B's to one
  t.equal(expected, 180);
  await waitUntil(() => [...seen.values()].reduce((x, y) => x + y, 0) >= expected && [...inFlight.values()].every((n) => n === 0), 60_000, 'every delivery received');
  await waitUntil(async () => (await count(stores[0]!, DUE)) === 0 && (await count(stores[0]!, QUEUES)) === 0, 10_000, 'queues emptied');

  t.equal(seen.size, expected, 'every (endpoint, event) received');
  t.same([...seen.values()].filter((n) => n !== 1), [], 'none twice');
  const rows: DeliveryRecord[] = [];
  for await (const d of stores[1]!.all<DeliveryRecord>('webhook_deliveries')) rows.push(d);
  t.equal(rows.length, expected);
  t.ok(rows.every((d) => d.status === 'delivered' && d.attempt_count === 1 && d.queue_key === null), 'every row delivered at its first attempt');
  t.equal(await count(stores[2]!, READY), 0, 'no ready entry left');
  t.ok(maxInFlight <= PER_ENDPOINT, `at most ${PER_ENDPOINT} requests in flight to one endpoint over all instances (saw ${maxInFlight})`);
  t.equal(attempts.reduce((x, y) => x + y, 0), expected, 'one attempt per delivery over all instances');
  t.ok(attempts.filter((n) => n > 0).length >= 2, `the work was shared (${attempts.join(', ')})`);
});

t.test('two relays on one outbox: each event emitted once, in one workspace', async (t) => {
  const stores = await instances(t, 'relay', 2);
  const log = createLogger('relay', 'silent');
  const built = await Promise.all(stores.map(async (store) => {
    const platform = await createPlatform(store, { objectDir: mkdtempSync(join(tmpdir(), 'objects-')) });
    const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 50 } });
    const links = new CustomerLinks(store);
    return { store, platform, vaults, links, relay: new EventRelay({ store, links, deliveries: platform.deliveries, log, batch: 7 }) };
  }));
  const [x, y] = built;
  const c = await createCustomer({ store: x!.store, vaults: x!.vaults, tenancy: x!.platform.tenancy, links: x!.links, environment: 'sandbox' },
    { name: 'Acme', publicKey: newPublicKey(), operatorSecretKey: ed25519.utils.randomSecretKey() });
  await x!.platform.endpoints.create({ tenant: c.tenant.id, workspace: c.sandbox.id }, actor, { url: 'https://hooks.example.com/a', events: ['vault.created'] });
  for (const b of built) b.relay.start(5);
  t.teardown(async () => {
    for (const b of built) await b.relay.stop();
  });
  // Vault creations through both instances while both relays run.
  const VAULTS = 40;
  await Promise.all(Array.from({ length: VAULTS }, (_, i) => built[i % 2]!.vaults.createVault(c.organization.id, { tier: 'hosted', name: `v${i}` })));
  await waitUntil(async () => (await count(y!.store, 'outbox')) === 0, 20_000, 'outbox drained');
  const events: (Envelope & { workspace: string })[] = [];
  for await (const e of x!.store.all<Envelope & { workspace: string }>('webhook_events')) events.push(e);
  const created = events.filter((e) => e.type === 'vault.created');
  t.equal(created.length, VAULTS, 'one vault.created per vault');
  t.equal(new Set(created.map((e) => e.resource.id)).size, VAULTS, 'none twice');
  t.ok(events.every((e) => e.workspace === c.sandbox.id));
  t.equal(await count(x!.store, 'webhook_deliveries'), VAULTS, 'one delivery per event');
});

t.test('the same Idempotency-Key on two instances at once runs once; the other replays its answer', async (t) => {
  const stores = await instances(t, 'idem', 2);
  let runs = 0;
  const requests = stores.map((s) => new IdempotentRequests(s));
  const work = async () => {
    runs++;
    await new Promise((r) => setTimeout(r, 50));
    return { n: runs };
  };
  const answers = await Promise.all(requests.map((r) => r.run('wks_1', 'create', 'key-1', { a: 1 }, work)));
  t.equal(runs, 1, 'the work ran once');
  t.same(answers, [{ n: 1 }, { n: 1 }], 'both got its answer');
  await t.rejects(requests[1]!.run('wks_1', 'create', 'key-1', { a: 2 }, work), { code: 'idempotency_key_reused' });
});
