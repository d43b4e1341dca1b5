// How deliveries retry and stop (docs/platform/webhooks.md "Delivery engine"), against real loopback
// receivers with an injected clock and jitter: full jitter on the schedule, Retry-After honoured within
// bounds on 429 and 503, a 410 Gone disabling the endpoint with webhook.endpoint.disabled; and the
// Standard Webhooks headers beside the spec's, verified by the `standardwebhooks` package.
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { verifyWebhookHmac } from '../../../api/sdk/webhook-receiver.ts';
import { retryAfterMs } from '../../../api/webhooks/delivery-engine.ts';
import { totp } from '../../../api/tenancy/totp.ts';

/** A loopback receiver that answers each request with `answer(n)`: a status and extra headers. */
async function answering(t: Test, answer: (n: number) => { status: number; headers?: Record<string, string> }) {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const a = answer(++n);
      res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers }).end('x');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, count: () => n };
}

t.test('Retry-After values: seconds and HTTP dates read, anything else ignored', async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  t.equal(retryAfterMs('120', now), 120_000);
  t.equal(retryAfterMs(' 0 ', now), 0);
  t.equal(retryAfterMs('Sun, 01 Mar 2026 00:10:00 GMT', now), 600_000);
  t.equal(retryAfterMs('Sat, 28 Feb 2026 00:00:00 GMT', now), 0, 'a date in the past: now');
  t.equal(retryAfterMs('-5', now), null);
  t.equal(retryAfterMs('soon', now), null);
  t.equal(retryAfterMs('1.5', now), null);
});

t.test('full jitter: the wait before a retry is uniformly random up to the schedule step', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const draws = [0.5, 0, 0.999999];
  let i = 0;
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS, webhookRandom: () => draws[i++ % draws.length]! });
  const rx = await receiver(t, () => 500);
  await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 'test' }, { payment_id: 'pay_1', status: 'confirmed' });
  const row = async () => (await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json();
  await s.platform.deliveries.runDue();
  t.equal(Date.parse((await row()).next_retry_at) - now, Math.floor(0.5 * 60_001), 'draw 0.5 of the 60 s step');
  now += 30_000;
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 2, 'the retry went when due');
  t.equal(Date.parse((await row()).next_retry_at) - now, 0, 'draw 0 of the 5 min step: at once');
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 3);
  const third = await row();
  t.equal(Date.parse(third.next_retry_at) - now, Math.floor(0.999999 * 1_800_001), 'draw ~1 of the 30 min step: never beyond it');
  t.match(third, { status: 'failed', attempt_count: 3 });
});

t.test('Retry-After on 429 and 503 sets the wait (at least the jittered one, at most 24 h); on 500 it is ignored', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS, webhookRandom: () => 0.5 });
  const answers = [
    { status: 429, headers: { 'retry-after': '120' } },
    { status: 503, headers: { 'retry-after': 'Sun, 01 Mar 2026 00:10:00 GMT' } },
    { status: 429, headers: { 'retry-after': '9999999' } },
    { status: 500, headers: { 'retry-after': '120' } },
    { status: 429, headers: { 'retry-after': 'later' } },
  ];
  const rx = await answering(t, (n) => answers[n - 1] ?? { status: 204 });
  await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const ids: string[] = [];
  for (let k = 0; k < answers.length; k++) {
    ids.push((await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: `pay_${k}` }, { type: 'system', id: 'test' }, { payment_id: `pay_${k}`, status: 'confirmed' })).deliveries[0]!.id);
    await s.platform.deliveries.runDue();
    t.equal(rx.count(), k + 1);
  }
  const waits = [];
  for (const id of ids) {
    const d = (await s.call('GET', `/v1/webhook-deliveries/${id}`)).json();
    t.equal(d.status, 'failed');
    waits.push(Date.parse(d.next_retry_at) - now);
  }
  t.same(waits, [120_000, 600_000, 86_400_000, 30_000, 30_000], '429 seconds, 503 date, capped at 24 h; ignored on 500 and when unreadable (the jittered 30 s)');
  now += 30_000;
  await s.platform.deliveries.runDue();
  t.equal(rx.count(), answers.length + 2, 'only the two rows without a honoured Retry-After went again');
});

t.test('410 Gone dead-letters the row and disables the endpoint, once, with webhook.endpoint.disabled', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const gone = await receiver(t, () => 410);
  const watcher = await receiver(t, () => 200);
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: gone.url, events: ['payment.confirmed'] })).json();
  await s.call('POST', '/v1/webhook-endpoints', { url: watcher.url, events: ['webhook.endpoint.disabled', 'webhook.delivery.dead_lettered'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const emit = (k: number) => s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: `pay_${k}` }, { type: 'system', id: 'test' }, { payment_id: `pay_${k}`, status: 'confirmed' });
  const first = (await emit(1)).deliveries[0]!;
  const second = (await emit(2)).deliveries[0]!;
  await s.platform.deliveries.runDue();
  await s.platform.deliveries.runDue();
  const attempts = gone.got.length;
  t.ok(attempts >= 1 && attempts <= 2, 'the gone endpoint was tried (both rows may have been in flight together)');
  const read = (await s.call('GET', `/v1/webhook-endpoints/${ep.id}`)).json();
  t.equal(read.enabled, false, 'the endpoint is disabled');
  t.match((await s.call('GET', `/v1/webhook-deliveries/${first.id}`)).json(), { status: 'dlq', last_status_code: 410 });
  const disabled = watcher.got.filter((r) => r.headers['svc-webhook-event'] === 'webhook.endpoint.disabled').map((r) => JSON.parse(r.body));
  t.equal(disabled.length, 1, 'one disabled event, however many rows answered 410');
  t.same(disabled[0].data, { endpoint_id: ep.id, enabled: false, reason: 'gone' });
  t.same(disabled[0].actor, { type: 'system', id: 'delivery-engine' });
  t.equal(watcher.got.filter((r) => r.headers['svc-webhook-event'] === 'webhook.delivery.dead_lettered').length, attempts, 'each 410 row dead-lettered');
  if (attempts === 1) t.match((await s.call('GET', `/v1/webhook-deliveries/${second.id}`)).json(), { status: 'pending' }, 'the other row waits, paused');
  const audit = await s.platform.audit.list(s.sandbox.id);
  t.ok(audit.some((a) => a.action === 'webhook_endpoint.update' && a.actor.type === 'system'), 'the disabling is audited as the system\'s');

  now += 3600_000;
  await emit(3);
  await s.platform.deliveries.runDue();
  t.equal(gone.got.length, attempts, 'nothing more is sent to a disabled endpoint');
});

t.test('Standard Webhooks headers: the standardwebhooks package verifies a delivery; the spec\'s headers and body are unchanged', async (t) => {
  // The package checks webhook-timestamp against the real clock, so this test runs on it.
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t, () => 200);
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { event } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 'test' }, { payment_id: 'pay_1', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 1);
  const r = rx.got[0]!;
  const headers = r.headers as Record<string, string>;
  t.equal(headers['webhook-id'], event.id, 'webhook-id is the event id');
  t.equal(headers['webhook-timestamp'], headers['svc-webhook-timestamp']);
  const verified = new Webhook(ep.secret).verify(r.body, headers) as { id: string; data: unknown };
  t.equal(verified.id, event.id, 'standardwebhooks verifies the delivery');
  t.same(verified.data, { payment_id: 'pay_1', status: 'confirmed' });
  t.ok(verifyWebhookHmac(String(headers['svc-webhook-signature']), r.body, [ep.secret]), 'the spec\'s signature over the raw body still verifies');
  t.same(Object.keys(JSON.parse(r.body)).sort(), ['actor', 'created_at', 'data', 'delivery', 'id', 'resource', 'type', 'version'], 'the body is the envelope as before');
  t.throws(() => new Webhook(ep.secret).verify(r.body.replace('pay_1', 'pay_2'), headers), 'an altered body fails');
  t.throws(() => new Webhook(ep.secret).verify(r.body, { ...headers, 'webhook-id': 'evt_other' }), 'another id fails: the id is signed');

  // During a rotation overlap both secrets verify through the package.
  const action = `rotate_secret:${ep.id}`;
  const v = await s.call('POST', '/v1/mfa/verifications', { code: totp(Buffer.from(s.owner.totpSecret!, 'hex'), Date.now() / 1000), action });
  const rotated = (await s.call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 3600 }, undefined, { 'svc-mfa-token': v.json().mfa_token })).json();
  await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_2' }, { type: 'system', id: 'test' }, { payment_id: 'pay_2', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  const r2 = rx.got[1]!;
  t.equal(String(r2.headers['webhook-signature']).split(' ').length, 2, 'one signature per valid secret');
  t.ok(new Webhook(rotated.secret).verify(r2.body, r2.headers as Record<string, string>), 'the new secret verifies');
  t.ok(new Webhook(ep.secret).verify(r2.body, r2.headers as Record<string, string>), 'the old one too, for the overlap');
});
