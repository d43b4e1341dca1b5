// The delivery engine against real loopback receivers with an injected clock and schedule: retries with
// one event id, dead-lettering and its event, permanent 4xx, paused endpoints, replay rules, restarts.
import t from 'tap';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS, type Received } from '../setup-platform.ts';
import { verifyWebhookHmac, verifyWebhookEd25519 } from '../../../api/sdk/webhook-receiver.ts';
import { DEFAULT_SCHEDULE } from '../../../api/webhooks/delivery-engine.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { createPlatform } from '../../../api/platform.ts';

const sig = (r: Received) => String(r.headers['svc-webhook-signature']);
const sigEd = (r: Received) => String(r.headers['svc-webhook-signature-ed25519']);

async function drive(platform: Awaited<ReturnType<typeof setupPlatform>>['platform'], advance: (ms: number) => void, steps: number[]) {
  await platform.deliveries.runDue();
  for (const s of steps) {
    advance(s * 1000);
    await platform.deliveries.runDue();
  }
}

t.test('fails four times then 2xx: five receipts with one event id and valid signatures', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  // The jitter drawn at the top of each step (delivery-policy.unit.ts tests the jitter itself).
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS, webhookRandom: () => 0.9999999 });
  const rx = await receiver(t, (n) => (n <= 4 ? 503 : 204));
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { event, deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 'test' }, { payment_id: 'pay_1', status: 'confirmed' });
  t.equal(deliveries.length, 1);
  await s.platform.deliveries.runDue();
  const d1 = (await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json();
  t.match(d1, { status: 'failed', attempt_count: 1, last_status_code: 503 });
  t.equal(Date.parse(d1.next_retry_at) - now, 60_000, 'second attempt 60 s later');
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 1, 'nothing before the retry is due');
  await drive(s.platform, (ms) => { now += ms; }, DEFAULT_SCHEDULE.slice(1, 5));
  t.equal(rx.got.length, 5);
  const pk = s.platform.keys.webhookPublicKey;
  for (const r of rx.got) {
    t.equal(r.headers['svc-webhook-event-id'], event.id);
    t.equal(JSON.parse(r.body).id, event.id);
    t.ok(verifyWebhookHmac(sig(r), r.body, [ep.secret]));
    t.ok(verifyWebhookEd25519(sigEd(r), r.body, pk));
    t.equal(JSON.parse(r.body).delivery.id, r.headers['svc-webhook-delivery-id'], 'the attempt id is signed, in the body');
  }
  t.equal(new Set(rx.got.map((r) => r.headers['svc-webhook-delivery-id'])).size, 5, 'a new delivery id on every attempt');
  const done = (await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json();
  t.match(done, { status: 'delivered', attempt_count: 5, last_status_code: 204, next_retry_at: null });
  t.ok(done.delivered_at);
  t.same(done.payload.data, { payment_id: 'pay_1', status: 'confirmed' });
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${done.id}/replay`)).json().code, 'invalid_state');
});

t.test('never answers 2xx: dlq after seven attempts, the dead-letter event is emitted; replay rules', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const bad = await receiver(t, () => 500);
  const watcher = await receiver(t, () => 200);
  await s.call('POST', '/v1/webhook-endpoints', { url: bad.url, events: ['payment.confirmed'] });
  await s.call('POST', '/v1/webhook-endpoints', { url: watcher.url, events: ['webhook.delivery.dead_lettered'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_2' }, { type: 'system', id: 'test' }, { payment_id: 'pay_2', status: 'confirmed' });
  await drive(s.platform, (ms) => { now += ms; }, DEFAULT_SCHEDULE.slice(1));
  t.equal(bad.got.length, 7, 'seven attempts');
  const id = deliveries[0]!.id;
  const dead = (await s.call('GET', `/v1/webhook-deliveries/${id}`)).json();
  t.match(dead, { status: 'dlq', attempt_count: 7, next_retry_at: null });
  await s.platform.deliveries.runDue();
  t.equal(watcher.got.length, 1, 'the dead-letter event was delivered');
  t.same(JSON.parse(watcher.got[0]!.body).data, { delivery_id: id, endpoint_id: dead.endpoint_id, event_id: dead.event_id, attempt_count: 7 });
  const dlqList = (await s.call('GET', '/v1/webhook-deliveries?status=dlq')).json();
  t.same(dlqList.data.map((d: { id: string }) => d.id), [id]);

  const malformed = await s.call('POST', '/v1/webhook-deliveries/bulk-replay', { delivery_ids: [id, 'nope'] });
  t.equal(malformed.statusCode, 422);
  t.equal(malformed.json().code, 'validation_failed');
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${id}`)).json().status, 'dlq', 'one malformed id rejects the whole request');
  const delivered = (await s.call('GET', '/v1/webhook-deliveries?status=delivered')).json().data[0].id as string;
  const other = await s.platform.tenancy.createTenant('Other');
  const otherKey = await s.platform.tenancy.createKey(other.sandbox.id, 'owner');
  const missing = 'whd_' + '0'.repeat(26);
  const bulk = await s.call('POST', '/v1/webhook-deliveries/bulk-replay', { delivery_ids: [id, id, delivered, missing] });
  t.equal(bulk.statusCode, 200);
  t.match(bulk.json(), { replayed_count: 1, skipped_count: 3 });
  t.equal(bulk.json().data[0].status, 'pending');
  t.equal(bulk.json().data[0].next_retry_at, new Date(now).toISOString());
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${id}/replay`)).json().code, 'invalid_state', 'pending cannot be replayed');
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${id}/replay`, undefined, otherKey.token)).statusCode, 404, 'another tenant cannot replay it');
  t.equal((await s.call('POST', '/v1/webhook-deliveries/bulk-replay', { delivery_ids: [delivered] }, otherKey.token)).json().skipped_count, 1);
  await s.platform.deliveries.runDue();
  t.equal(bad.got.length, 8);
  t.equal(JSON.parse(bad.got[7]!.body).id, dead.event_id, 'replay reuses the original event id');
  t.equal((await s.call('GET', '/v1/webhook-deliveries?status=delivered', undefined, s.viewer.token)).statusCode, 200);
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${id}/replay`, undefined, s.viewer.token)).json().code, 'role_denied');
});

t.test('a permanent 4xx dead-letters at once; a disabled endpoint pauses; old deliveries are pruned', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const gone = await receiver(t, () => 410);
  const paused = await receiver(t, () => 200);
  await s.call('POST', '/v1/webhook-endpoints', { url: gone.url, events: ['payment.confirmed'] });
  const p = (await s.call('POST', '/v1/webhook-endpoints', { url: paused.url, events: ['payment.confirmed'] })).json();
  await s.call('PATCH', `/v1/webhook-endpoints/${p.id}`, { enabled: false });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_3' }, { type: 'system', id: 'test' }, { payment_id: 'pay_3', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  t.equal(gone.got.length, 1);
  t.equal(paused.got.length, 0, 'disabled endpoint receives nothing');
  const rows = (await s.call('GET', '/v1/webhook-deliveries?event_type=x'.replace('?event_type=x', ''))).json().data as { status: string; endpoint_id: string }[];
  t.equal(rows.find((r) => r.endpoint_id !== p.id && r.status === 'dlq') !== undefined, true, '410 went straight to dlq');
  t.equal(rows.find((r) => r.endpoint_id === p.id)!.status, 'pending');
  await s.call('PATCH', `/v1/webhook-endpoints/${p.id}`, { enabled: true });
  await s.platform.deliveries.runDue();
  t.equal(paused.got.length, 1, 're-enabled endpoint gets the paused delivery');
  now += 31 * 24 * 3600_000;
  t.ok((await s.platform.deliveries.prune()) >= 2);
  t.equal((await s.call('GET', '/v1/webhook-deliveries')).json().data.length, 0, 'deliveries older than 30 days are gone');
});

t.test('restart in the middle of a run: nothing lost, one event id per endpoint and event', async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookTimeoutMs: 2000, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  let hang = true;
  const rx = await receiver(t, () => (hang ? 'hang' : 200));
  await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: `pay_${i}` }, { type: 'system', id: 'test' }, { payment_id: `pay_${i}`, status: 'confirmed' })).event.id);
  // A run starts and is cut off while requests are in flight: the store closes under it, as a killed
  // process would leave it.
  const run = s.platform.deliveries.runDue().catch(() => 0);
  while (rx.got.length < 5) await new Promise((r) => setTimeout(r, 10));
  await s.app.close();
  await s.store.close();
  await run;
  hang = false;
  const store = await RecordStore.open(s.dir);
  t.teardown(() => store.close());
  const again = await createPlatform(store, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  await again.deliveries.runDue();
  const delivered = rx.got.slice(5);
  t.equal(delivered.length, 5, 'every event delivered after the restart');
  t.same(new Set(delivered.map((r) => r.headers['svc-webhook-event-id'])), new Set(ids), 'same event ids as before the restart');
  t.same(new Set(rx.got.map((r) => r.headers['svc-webhook-event-id'])).size, 5, 'no event reached the endpoint under a second id');
});

t.test('the real ten-second timeout fails a silent endpoint', async (t) => {
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t, () => 'hang');
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const r = await s.call('POST', `/v1/webhook-endpoints/${ep.id}/test`);
  t.match(r.json(), { delivered: false, status_code: null, error: 'timeout' });
  t.ok(r.json().duration_ms >= 9900 && r.json().duration_ms < 15000);
});
