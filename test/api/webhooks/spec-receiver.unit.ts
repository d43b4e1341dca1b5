// A receiver written from platform-api.md's rule alone, with node:crypto and no SDK code: "compute
// HMAC-SHA256 over the raw body and compare to SVC-Webhook-Signature in constant time" (the encoding,
// `v1,<base64>` with the `whsec_` secret's decoded bytes as key, is docs/platform/webhooks.md's). Real
// deliveries from the engine to a loopback HTTP server verify under it; each attempt has its own
// delivery id and the same event id; the SDK's `verifyWebhook` accepts them and refuses stale or
// re-pointed ones.
import t, { type Test } from 'tap';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setupPlatform, LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { verifyWebhook, EventDeduper } from '../../../api/sdk/webhook-receiver.ts';

/** The spec's rule: HMAC-SHA256 of the exact raw bytes, compared in constant time to a listed signature. */
function specVerify(rawBody: Buffer, signatureHeader: string | undefined, secret: string): boolean {
  const want = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(rawBody).digest();
  return (signatureHeader ?? '').split(' ').some((entry) => {
    if (!entry.startsWith('v1,')) return false;
    const given = Buffer.from(entry.slice(3), 'base64');
    return given.length === want.length && timingSafeEqual(given, want);
  });
}

interface Raw { headers: IncomingHttpHeaders; raw: Buffer }

async function rawReceiver(t: Test, answer: (n: number) => number) {
  const got: Raw[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, raw: Buffer.concat(chunks) });
      res.writeHead(answer(got.length)).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

t.test('a spec-written receiver verifies real deliveries; two attempts: new delivery id, same event id', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await rawReceiver(t, (n) => (n === 1 ? 503 : 200));
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { event, deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 'test' }, { payment_id: 'pay_1', status: 'confirmed', note: 'Café 🎉' });
  await s.platform.deliveries.runDue();
  now += 60_000;
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 2, 'one failed attempt and its retry');
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json().status, 'delivered');

  for (const [i, g] of rx.got.entries()) {
    t.ok(specVerify(g.raw, g.headers['svc-webhook-signature'] as string, ep.secret), `attempt ${i + 1}: HMAC over the raw body verifies`);
    t.notOk(specVerify(Buffer.concat([g.raw, Buffer.from(' ')]), g.headers['svc-webhook-signature'] as string, ep.secret), `attempt ${i + 1}: one more byte fails`);
    t.notOk(specVerify(g.raw, g.headers['svc-webhook-signature'] as string, `whsec_${Buffer.alloc(24, 7).toString('base64')}`), `attempt ${i + 1}: another secret fails`);
    const body = JSON.parse(g.raw.toString('utf8'));
    t.equal(g.headers['svc-webhook-event-id'], event.id);
    t.equal(body.id, event.id, 'the event id is inside the signed body');
    t.equal(body.delivery.id, g.headers['svc-webhook-delivery-id'], 'the delivery id is inside the signed body');
    t.match(body.delivery.id, /^wha_[0-9a-f]{26}$/);
    t.equal(body.delivery.sent_at, new Date(Date.parse('2026-03-01T00:00:00Z') + i * 60_000).toISOString(), 'sent_at is the time of this attempt');
    t.equal(Number(g.headers['svc-webhook-timestamp']), Math.floor(Date.parse(body.delivery.sent_at) / 1000), 'the informational timestamp header repeats sent_at');
    t.equal(body.created_at, event.created_at, 'created_at is the event time on every attempt');
  }
  const [a, b] = rx.got.map((g) => JSON.parse(g.raw.toString('utf8')));
  t.not(rx.got[0]!.headers['svc-webhook-delivery-id'], rx.got[1]!.headers['svc-webhook-delivery-id'], 'each attempt has its own delivery id');
  t.equal(rx.got[0]!.headers['svc-webhook-event-id'], rx.got[1]!.headers['svc-webhook-event-id'], 'and the same event id');
  t.equal(Date.parse(b.delivery.sent_at) - Date.parse(a.delivery.sent_at), 60_000, 'sent_at is the time of each attempt');
  t.equal(rx.got[0]!.headers['x-correlation-id'], rx.got[1]!.headers['x-correlation-id'], 'the correlation id is stable per delivery');

  // The SDK helper: signature, then freshness and the headers against the signed ids; dedupe on event id.
  const pk = s.platform.keys.webhookPublicKey;
  const second = rx.got[1]!;
  const at = Date.parse(b.delivery.sent_at);
  const ok = verifyWebhook(second.headers, second.raw, { secrets: [ep.secret], publicKey: pk, nowMs: at + 1000 });
  t.ok(ok.ok);
  t.same(ok.ok && ok.event.data, { payment_id: 'pay_1', status: 'confirmed', note: 'Café 🎉' });
  t.same(verifyWebhook(second.headers, second.raw, { secrets: [ep.secret], nowMs: at + 301_000 }), { ok: false, reason: 'stale' }, 'a captured delivery replayed later is stale');
  t.same(verifyWebhook({ ...second.headers, 'svc-webhook-event-id': 'evt_other' }, second.raw, { secrets: [ep.secret], nowMs: at }), { ok: false, reason: 'header_mismatch' }, 'an unsigned header cannot re-point the event id');
  t.same(verifyWebhook({ ...second.headers, 'svc-webhook-delivery-id': rx.got[0]!.headers['svc-webhook-delivery-id'] }, second.raw, { secrets: [ep.secret], nowMs: at }), { ok: false, reason: 'header_mismatch' });
  t.same(verifyWebhook(second.headers, second.raw, { secrets: ['whsec_' + Buffer.alloc(24).toString('base64')], nowMs: at }), { ok: false, reason: 'bad_signature' });
  t.same(verifyWebhook({ ...second.headers, 'svc-webhook-signature-ed25519': rx.got[0]!.headers['svc-webhook-signature-ed25519'] }, second.raw, { secrets: [ep.secret], publicKey: pk, nowMs: at }), { ok: false, reason: 'bad_ed25519_signature' });
  const dd = new EventDeduper();
  t.ok(dd.firstTime(a.id));
  t.notOk(dd.firstTime(b.id), 'the retry is a repeat of the same event');
});

t.test('the test operation and a replay are signed the same way, each with a fresh delivery id', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS, schedule: [0] });
  const rx = await rawReceiver(t, (n) => (n === 2 ? 500 : 200));
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  t.equal((await s.call('POST', `/v1/webhook-endpoints/${ep.id}/test`)).json().delivered, true);
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { event, deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_1' }, { type: 'system', id: 'test' }, { payment_id: 'pay_1', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json().status, 'dlq', 'one attempt allowed, 500: dead-lettered');
  now += 3600_000;
  t.equal((await s.call('POST', `/v1/webhook-deliveries/${deliveries[0]!.id}/replay`)).statusCode, 200);
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, 3);
  for (const g of rx.got) t.ok(specVerify(g.raw, g.headers['svc-webhook-signature'] as string, ep.secret));
  t.equal(new Set(rx.got.map((g) => g.headers['svc-webhook-delivery-id'])).size, 3, 'three attempts, three delivery ids');
  t.equal(rx.got[1]!.headers['svc-webhook-event-id'], event.id);
  t.equal(rx.got[2]!.headers['svc-webhook-event-id'], event.id, 'the replay reuses the event id');
  const replayed = JSON.parse(rx.got[2]!.raw.toString('utf8'));
  t.equal(Date.parse(replayed.delivery.sent_at), now, 'a replay is signed with the time it is sent, so it passes a freshness check');
  t.ok(verifyWebhook(rx.got[2]!.headers, rx.got[2]!.raw, { secrets: [ep.secret], nowMs: now }).ok);
});
