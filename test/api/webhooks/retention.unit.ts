// Delivery retention and replay budget (docs/platform/webhooks.md), on the engine's injected clock:
// rows last changed more than 30 days ago are pruned whatever their status (with their queue entry),
// event records too; the pruning timer runs on that clock; a replay starts a fresh budget of seven.
import t from 'tap';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { DEFAULT_SCHEDULE, RETENTION_MS, type DeliveryRecord } from '../../../api/webhooks/delivery-engine.ts';

const DAY = 24 * 3600_000;

t.test('rows older than 30 days are pruned, newer ones kept; queue entries and events go with them', async (t) => {
  const t0 = Date.parse('2026-03-01T00:00:00Z');
  let now = t0;
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const ok = await receiver(t, () => 200);
  const gone = await receiver(t, () => 410);
  const paused = await receiver(t, () => 200);
  await s.call('POST', '/v1/webhook-endpoints', { url: ok.url, events: ['payment.confirmed'] });
  await s.call('POST', '/v1/webhook-endpoints', { url: gone.url, events: ['payment.confirmed'] });
  const p = (await s.call('POST', '/v1/webhook-endpoints', { url: paused.url, events: ['payment.confirmed'] })).json();
  await s.call('PATCH', `/v1/webhook-endpoints/${p.id}`, { enabled: false });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const emit = (id: string) => s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id }, { type: 'system', id: 't' }, { payment_id: id, status: 'confirmed' });
  const old = await emit('pay_old');
  await s.platform.deliveries.runDue();
  const statuses = async () => Object.fromEntries(await Promise.all([...old.deliveries].map(async (d) => [d.endpoint_id, (await s.store.get<DeliveryRecord>('webhook_deliveries', d.id))?.status ?? 'gone'])));
  t.same(Object.values(await statuses()).sort(), ['delivered', 'dlq', 'pending']);
  now = t0 + 10 * DAY;
  const newer = await emit('pay_new');
  await s.platform.deliveries.runDue();

  now = t0 + RETENTION_MS - 1;
  t.equal(await s.platform.deliveries.prune(), 0, 'nothing is 30 days old yet');
  now = t0 + RETENTION_MS + 1;
  t.equal(await s.platform.deliveries.prune(), 3, 'the three rows of the old event, including the paused one');
  t.same(Object.values(await statuses()), ['gone', 'gone', 'gone']);
  t.equal(await s.store.get('webhook_events', old.event.id), undefined, 'the old event record is gone');
  t.ok(await s.store.get('webhook_events', newer.event.id), 'the newer event is kept');
  const left = (await s.call('GET', '/v1/webhook-deliveries')).json().data as { id: string }[];
  t.same(left.map((d) => d.id).sort(), newer.deliveries.map((d) => d.id).sort(), 'the rows of the newer event are kept');
  await s.call('PATCH', `/v1/webhook-endpoints/${p.id}`, { enabled: true });
  await s.platform.deliveries.runDue();
  t.same(paused.got.map((g) => JSON.parse(g.body).resource.id), ['pay_new'], 'the pruned row left no queue entry behind');

  // The pruning timer runs on the same clock (the paused row just changed, so 30 days from now).
  now += RETENTION_MS + 1;
  const stop = s.platform.deliveries.startPruning(20);
  t.teardown(stop);
  for (let i = 0; i < 200 && (await s.call('GET', '/v1/webhook-deliveries')).json().data.length > 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal((await s.call('GET', '/v1/webhook-deliveries')).json().data.length, 0, 'startPruning pruned the rest');
});

t.test('retention counts from the last change: a row replayed on day 20 is kept until day 50', async (t) => {
  const t0 = Date.parse('2026-03-01T00:00:00Z');
  let now = t0;
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  // A permanent 4xx other than 410 (which would also disable the endpoint): dead-lettered at once.
  let answer = 400;
  const rx = await receiver(t, () => answer);
  await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 't' }, { payment_id: 'pay_1', status: 'confirmed' });
  const id = deliveries[0]!.id;
  await s.platform.deliveries.runDue();
  now = t0 + 20 * DAY;
  answer = 200;
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${id}/replay`)).statusCode, 200);
  await s.platform.deliveries.runDue();
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${id}`)).json().status, 'delivered');
  now = t0 + 40 * DAY;
  await s.platform.deliveries.prune();
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${id}`)).statusCode, 200, 'kept on day 40');
  now = t0 + 51 * DAY;
  await s.platform.deliveries.prune();
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${id}`)).statusCode, 404, 'pruned after day 50');
});

t.test('replay gives a dead-lettered row a fresh budget of seven attempts on the full schedule', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  // The jitter at the top of each step, so the waits are the schedule's.
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS, webhookRandom: () => 0.9999999 });
  const bad = await receiver(t, () => 500);
  const watcher = await receiver(t, () => 200);
  await s.call('POST', '/v1/webhook-endpoints', { url: bad.url, events: ['payment.confirmed'] });
  await s.call('POST', '/v1/webhook-endpoints', { url: watcher.url, events: ['webhook.delivery.dead_lettered'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_2' }, { type: 'system', id: 't' }, { payment_id: 'pay_2', status: 'confirmed' });
  const id = deliveries[0]!.id;
  const drive = async () => {
    await s.platform.deliveries.runDue();
    for (const sec of DEFAULT_SCHEDULE.slice(1)) {
      now += sec * 1000;
      await s.platform.deliveries.runDue();
    }
  };
  await drive();
  t.match((await s.call('GET', `/v1/webhook-deliveries/${id}`)).json(), { status: 'dlq', attempt_count: 7 });
  const replayed = (await s.call('POST', `/v1/webhook-deliveries/${id}/replay`)).json();
  t.match(replayed, { status: 'pending', attempt_count: 0, last_status_code: 500, last_error: 'http_status' }, 'budget reset; the last outcome stays until the next attempt');
  await s.platform.deliveries.runDue();
  const after1 = (await s.call('GET', `/v1/webhook-deliveries/${id}`)).json();
  t.match(after1, { status: 'failed', attempt_count: 1 }, 'one failed attempt after a replay is a retry, not a dead letter');
  t.equal(Date.parse(after1.next_retry_at) - now, 60_000, 'the schedule starts over');
  for (const sec of DEFAULT_SCHEDULE.slice(1)) {
    now += sec * 1000;
    await s.platform.deliveries.runDue();
  }
  t.equal(bad.got.length, 14, 'seven attempts before, seven after the replay');
  t.match((await s.call('GET', `/v1/webhook-deliveries/${id}`)).json(), { status: 'dlq', attempt_count: 7 });
  await s.platform.deliveries.runDue();
  t.equal(watcher.got.length, 2, 'dead-lettered again, announced again');
  t.same(new Set(bad.got.map((g) => g.headers['svc-webhook-event-id'])).size, 1, 'one event id throughout');
});
