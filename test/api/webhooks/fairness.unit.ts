// Cross-tenant fairness of the delivery queue (docs/platform/webhooks.md "Delivery queue", issue #15
// item 5): tenant A's backlog of 20,000 due rows, to a slow endpoint or to a paused one, does not hold
// back tenant B's delivery. Asserted by pass count and by the order in which requests reached the
// receivers, never by elapsed time. Also: the old global queue is migrated at startup, once.
import t, { type Test } from 'tap';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { createPlatform } from '../../../api/platform.ts';
import { DeliveryEngine, type DeliveryRecord } from '../../../api/webhooks/delivery-engine.ts';
import { DUE, READY, QUEUES, LEGACY_QUEUE, FairSlots } from '../../../api/webhooks/delivery-queue.ts';
import type { Op, RecordRepository } from '../../../api/store/record-repository.ts';

const BACKLOG = 20_000;
/** The engine's defaults: 16 slots, 8 requests at once per endpoint, 100 rows per endpoint turn. */
const SLOTS = 16;
const PER_ENDPOINT = 8;
const TURN = 100;

type Setup = Awaited<ReturnType<typeof setupPlatform>>;

/** Queues `n` deliveries to every endpoint of `scope` subscribed to payment.confirmed, through `emit`. */
async function backlog(s: Setup, scope: { tenant: string; workspace: string }, n: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 250) {
    const batch = await Promise.all(Array.from({ length: Math.min(250, n - i) }, (_, j) => s.platform.deliveries.emit(scope, 'payment.confirmed',
      { type: 'payment', id: `pay_${tag}${i + j}` }, { type: 'system', id: 'test' }, { payment_id: `pay_${tag}${i + j}`, status: 'confirmed' })));
    for (const b of batch) ids.push(...b.deliveries.map((d) => d.id));
  }
  return ids;
}

async function count(store: RecordRepository, collection: string): Promise<number> {
  let n = 0;
  for await (const _ of store.entries(collection)) n++;
  return n;
}

/** Tenant B with one endpoint to its own receiver. */
async function tenantB(s: Setup, url: string) {
  const b = await s.platform.tenancy.createTenant('Beta');
  const scope = { tenant: b.tenant.id, workspace: b.sandbox.id };
  const ep = await s.platform.endpoints.create(scope, { type: 'operator', id: 'test' }, { url, events: ['payment.confirmed'] });
  const emit = async (n: number) => (await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: `pay_b${n}` }, { type: 'system', id: 'test' }, { payment_id: `pay_b${n}`, status: 'confirmed' })).deliveries[0]!.id;
  return { scope, endpoint: ep.endpoint, emit };
}

/** A receiver that holds every request until `release()`, then answers them, and later ones, with `status`. */
async function slowReceiver(t: Test, status: number, log: string[]) {
  let holding = true;
  const held: ServerResponse[] = [];
  let got = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got++;
      log.push('A');
      if (holding) return void held.push(res);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got: () => got,
    held: () => held.length,
    release: () => {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(status).end();
    },
  };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 6000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error(`never happened: ${what}`);
}

t.test('tenant A has 20,000 due rows, tenant B one', { timeout: 600_000 }, async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const log: string[] = [];
  const a = await slowReceiver(t, 503, log);
  const rxB = await receiver(t, () => {
    log.push('B');
    return 204;
  });
  const epA = (await s.call('POST', '/v1/webhook-endpoints', { url: a.url, events: ['payment.confirmed'] })).json();
  const scopeA = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const aIds = new Set(await backlog(s, scopeA, BACKLOG, 'a'));
  t.equal(aIds.size, BACKLOG);
  const b = await tenantB(s, rxB.url);
  await b.emit(1);
  t.equal(await count(s.store, DUE), BACKLOG + 1, 'every row is queued, A\'s 20,000 before B\'s one');
  t.equal(await count(s.store, READY), 2, 'the ready index holds one entry per endpoint with work');

  await t.test('A\'s endpoint is slow: B is delivered in the first pass, and again while A\'s turn is stuck', async (t) => {
    const pass1 = s.platform.deliveries.runDue();
    await until(() => rxB.got.length === 1, 'B delivered');
    t.ok(log.indexOf('B') <= PER_ENDPOINT, 'B\'s request is among the first ones of the pass');
    await until(() => a.held() === PER_ENDPOINT, 'A\'s requests held');
    // A's turn is stuck on its slow endpoint (8 requests held, the rest of its 100 waiting). A second
    // pass does not wait for it: B's next event goes out, and A gets nothing more.
    await b.emit(2);
    t.equal(await s.platform.deliveries.runDue(), 1, 'the second pass makes one attempt');
    t.equal(rxB.got.length, 2, 'B\'s second event is delivered while A\'s turn is still stuck');
    t.equal(a.got(), PER_ENDPOINT, `A: ${PER_ENDPOINT} requests, all still held`);
    a.release();
    await pass1;
    t.equal(a.got(), TURN, `A's turn in a pass is ${TURN} rows, not its whole backlog`);
    const viewerB = await s.platform.tenancy.createKey(b.scope.workspace, 'viewer');
    t.match((await s.call('GET', `/v1/webhook-deliveries?endpoint_id=${b.endpoint.id}`, undefined, viewerB.token)).json().data, [{ status: 'delivered' }, { status: 'delivered' }]);

    // Pass 3: a new event of B; A still has 19,900 due rows and gets one more turn; B goes out early in it.
    await b.emit(3);
    const pass3 = log.length;
    await s.platform.deliveries.runDue();
    t.equal(rxB.got.length, 3, 'B\'s third event is delivered in the third pass');
    t.equal(a.got(), 2 * TURN, 'A got one more turn');
    t.ok(log.lastIndexOf('B') - pass3 < SLOTS, 'B\'s request is among the first of the pass');
  });

  await t.test('A\'s endpoint is paused: its rows are not read, B is delivered in the first pass; resumed, A is served in turns', async (t) => {
    t.equal((await s.call('PATCH', `/v1/webhook-endpoints/${epA.id}`, { enabled: false })).statusCode, 200);
    // More rows queued while paused: 19,800 due, 200 waiting for their retry, 200 new.
    for (const id of await backlog(s, scopeA, 2 * TURN, 'c')) aIds.add(id);
    t.equal(await count(s.store, DUE), BACKLOG + 2 * TURN, 'A\'s 20,200 rows are queued, nothing of B\'s');
    await b.emit(4);
    const ready: string[] = [];
    for await (const { value } of s.store.entries<{ endpoint_id: string }>(READY)) ready.push(value.endpoint_id);
    t.same(ready, [b.endpoint.id], 'the paused endpoint is not in the ready index');

    // Count what the pass reads.
    const read = { due: 0, aDue: 0, ready: 0, aRows: 0 };
    const entries = s.store.entries.bind(s.store);
    const get = s.store.get.bind(s.store);
    s.store.entries = async function* <T>(collection: string, opts?: { after?: string; lt?: string; limit?: number }) {
      for await (const e of entries<T>(collection, opts)) {
        if (collection === DUE) read.due++;
        if (collection === DUE && aIds.has((e.value as { delivery_id: string }).delivery_id)) read.aDue++;
        if (collection === READY) read.ready++;
        yield e;
      }
    } as RecordRepository['entries'];
    s.store.get = (async (collection: string, id: string) => {
      if (collection === 'webhook_deliveries' && aIds.has(id)) read.aRows++;
      return get(collection, id);
    }) as RecordRepository['get'];
    const before = a.got();
    t.equal(await s.platform.deliveries.runDue(), 1, 'the pass makes one attempt: B\'s');
    s.store.entries = entries as RecordRepository['entries'];
    s.store.get = get as RecordRepository['get'];
    t.equal(rxB.got.length, 4, 'B delivered in the first pass after the pause');
    t.equal(a.got(), before, 'nothing to A');
    t.match(read, { aDue: 0, ready: 1, aRows: 0 }, 'the pass read one ready entry (B\'s), and not one of A\'s 20,000 queue entries or rows');
    t.ok(read.due <= PER_ENDPOINT, `queue entries read: ${read.due}, all B's`);

    // Resumed: A is back in the ready index at its oldest row, and is served a turn per pass.
    t.equal((await s.call('PATCH', `/v1/webhook-endpoints/${epA.id}`, { enabled: true })).statusCode, 200);
    t.equal(await count(s.store, READY), 1);
    await b.emit(5);
    const pass = log.length;
    t.equal(await s.platform.deliveries.runDue(), TURN + 1);
    t.equal(a.got(), before + TURN, `A gets ${TURN} rows in its turn`);
    t.equal(rxB.got.length, 5, 'B still delivered in the same pass');
    t.ok(log.lastIndexOf('B') - pass < SLOTS, 'B did not wait behind A\'s turn');
    await s.platform.deliveries.runDue();
    t.equal(a.got(), before + 2 * TURN);
    t.equal(new Set(rxB.got.map((r) => r.headers['svc-webhook-event-id'])).size, 5, 'B: five events, each once');
  });
});

t.test('the old global queue is moved into the endpoint queues at startup, once; a deleted paused endpoint is dead-lettered', async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rxA = await receiver(t, () => 200);
  const rxB = await receiver(t, () => 200);
  await s.call('POST', '/v1/webhook-endpoints', { url: rxA.url, events: ['payment.confirmed'] });
  const scopeA = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const ids = await backlog(s, scopeA, 250, 'a');
  const b = await tenantB(s, rxB.url);
  ids.push(await b.emit(1));
  // Rewrite the store as the previous version left it: rows keyed into one global queue by due time.
  const ops: Op[] = [];
  for (const id of ids) {
    const d = (await s.store.get<DeliveryRecord>('webhook_deliveries', id))!;
    const legacy = `${String(Date.parse(d.next_retry_at!)).padStart(16, '0')}_${d.id}`;
    ops.push({ type: 'del', collection: DUE, id: d.queue_key! });
    ops.push({ type: 'put', collection: 'webhook_deliveries', id, value: { ...d, queue_key: legacy }, index: [`${d.workspace}\x00${d.id}`] });
    ops.push({ type: 'put', collection: LEGACY_QUEUE, id: legacy, value: { delivery_id: d.id } });
  }
  for await (const { id } of s.store.entries(READY)) ops.push({ type: 'del', collection: READY, id });
  for await (const { id } of s.store.entries(QUEUES)) ops.push({ type: 'del', collection: QUEUES, id });
  ops.push({ type: 'put', collection: LEGACY_QUEUE, id: `${String(now).padStart(16, '0')}_whd_${'0'.repeat(26)}`, value: { delivery_id: `whd_${'0'.repeat(26)}` } });
  await s.store.batch(ops);
  const before = (await s.store.get<DeliveryRecord>('webhook_deliveries', ids[0]!))!;

  const restarted = await createPlatform(s.store, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  t.equal(await count(s.store, LEGACY_QUEUE), 0, 'the old queue is empty, its orphan entry dropped');
  t.equal(await count(s.store, DUE), ids.length, 'every row is in its endpoint\'s queue');
  t.equal(await count(s.store, READY), 2);
  const after = (await s.store.get<DeliveryRecord>('webhook_deliveries', ids[0]!))!;
  t.match(after.queue_key, /^whe_[0-9a-f]{26}\/\d{16}\/whd_/);
  t.equal(after.updated_at, before.updated_at, 'migration does not touch updated_at (retention)');
  await restarted.deliveries.migrate();
  await createPlatform(s.store, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  t.equal(await count(s.store, DUE), ids.length, 'running it again changes nothing');

  t.equal(await restarted.deliveries.runDue(), TURN + 1, 'first pass: B\'s row and a turn of A');
  t.equal(rxB.got.length, 1);
  while (await restarted.deliveries.runDue()) { /* drain */ }
  t.equal(rxA.got.length, 250, 'every old row delivered once');
  t.equal(new Set(rxA.got.map((r) => r.headers['svc-webhook-delivery-id'])).size, 250);
  t.equal(await count(s.store, DUE) + await count(s.store, READY) + await count(s.store, QUEUES), 0, 'nothing left queued');

  // A paused endpoint that is then deleted: its rows are dead-lettered, not left queued forever.
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rxA.url, events: ['payment.created'] })).json();
  await s.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: false });
  const { deliveries } = await s.platform.deliveries.emit(scopeA, 'payment.created', { type: 'payment', id: 'pay_x' }, { type: 'system', id: 'test' }, { payment_id: 'pay_x', status: 'pending' });
  t.equal(await count(s.store, READY), 0);
  t.equal((await s.call('DELETE', `/v1/webhook-endpoints/${ep.id}`)).statusCode, 204);
  await s.platform.deliveries.runDue();
  t.match((await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json(), { status: 'dlq', last_error: 'endpoint_deleted' });
});

t.test('request slots go round-robin over tenants, then over a tenant\'s endpoints', async (t) => {
  const slots = new FairSlots(1);
  await slots.acquire('t1', 'e1');
  const order: string[] = [];
  const holder: string[] = ['t1'];
  const wait = (tenant: string, endpoint: string) => slots.acquire(tenant, endpoint).then(() => {
    order.push(`${tenant}/${endpoint}`);
    holder.push(tenant);
  });
  const all = [wait('t1', 'e1'), wait('t1', 'e1'), wait('t1', 'e2'), wait('t1', 'e3'), wait('t2', 'e9')];
  for (let i = 0; i < all.length; i++) {
    slots.release(holder.shift()!);
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(all);
  t.same(order, ['t1/e1', 't2/e9', 't1/e2', 't1/e3', 't1/e1'], 't2 is served second although it asked last; t1\'s endpoints take turns');
});

t.test('no tenant holds more than its share of the slots: a slow tenant leaves room for another', async (t) => {
  const slots = new FairSlots(4);
  // t1's endpoints hang: it asks for six slots and gets two (half of four).
  let t1 = 0;
  for (let i = 0; i < 6; i++) void slots.acquire('t1', `e${i}`).then(() => t1++);
  await new Promise((r) => setImmediate(r));
  t.equal(t1, 2, 'the slow tenant holds two of four');
  t.equal(slots.holding('t1'), 2);
  // Another tenant is served at once, without waiting for t1's requests to end.
  await slots.acquire('t2', 'e9');
  await slots.acquire('t2', 'e9');
  t.equal(slots.holding('t2'), 2, 'the other tenant gets the rest');
  // One of t1's requests ends: its next waiting one takes the slot, not more.
  slots.release('t1');
  await new Promise((r) => setImmediate(r));
  t.equal(t1, 3);
  t.equal(slots.holding('t1'), 2, 'still at its cap');
  const custom = new FairSlots(8, 1);
  await custom.acquire('a', 'x');
  let second = false;
  void custom.acquire('a', 'y').then(() => (second = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(second, 'a cap of one: the second waits though six slots are free');
  custom.release('a');
  await new Promise((r) => setImmediate(r));
  t.ok(second);
});

t.test('endpoints whose turn another instance holds never fill the window: the next ready endpoint is served', async (t) => {
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rxA = await receiver(t, () => 200);
  const rxB = await receiver(t, () => 200);
  await s.call('POST', '/v1/webhook-endpoints', { url: rxA.url, events: ['payment.confirmed'] });
  const scopeA = { tenant: s.tenant.id, workspace: s.sandbox.id };
  await backlog(s, scopeA, 1, 'a');
  const b = await tenantB(s, rxB.url);
  await b.emit(1); // B's endpoint became ready after A's
  // One endpoint in a turn at a time, and A's turn held by another instance for the whole test.
  const engine = new DeliveryEngine({ store: s.store, endpoints: s.platform.endpoints, cursors: s.platform.cursors, maxEndpointsServing: 1 });
  const [a] = (await s.platform.endpoints.list(scopeA, undefined, 10)).data;
  let release!: () => void;
  const held = s.store.exclusive(`webhook-turn:${a!.id}`, () => new Promise<void>((r) => { release = r; }));
  t.equal(await engine.runDue(), 0, 'the first pass finds A held elsewhere and stops at its window of one');
  t.equal(await engine.runDue(), 1, 'the next pass reads past A and serves B');
  t.equal(rxB.got.length, 1);
  t.equal(rxA.got.length, 0, 'nothing sent to the endpoint another instance serves');
  release();
  await held;
  t.equal(await engine.runDue(), 1, 'A is served once its turn is free');
  t.equal(rxA.got.length, 1);
});
