// Public vectors and catalog rules: Standard Webhooks HMAC and Ed25519 signatures through the receiver
// helpers, and the sensitive-event rule on every catalog example and emitted event.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { verifyWebhookHmac, verifyWebhookEd25519, EventDeduper } from '../../../api/sdk/webhook-receiver.ts';
import { hmacSignature, ed25519Signature } from '../../../api/webhooks/webhook-signing.ts';
import { Ed25519Signer } from '../../../common/ed25519.ts';
import { EVENT_TYPES, sensitiveDataAllowed } from '../../../api/webhooks/event-catalog.ts';
import { setupPlatform, receiver } from '../setup-platform.ts';

interface Vec { name: string; secret?: string; privateKey?: string; derivedPublicKey?: string; msgId: string; timestamp: number; payload: string; expectedSignature: string }
const sw = JSON.parse(readFileSync('/work/shared/vectors/http/standard-webhooks.json', 'utf8')) as { vectors: Vec[] };

t.test('Standard Webhooks vectors: our signer and the receiver helpers agree with them', async (t) => {
  const hm = sw.vectors.find((v) => v.secret)!;
  t.equal(hmacSignature(hm.secret!, hm.msgId, hm.timestamp, hm.payload), hm.expectedSignature);
  const h = { eventId: hm.msgId, timestamp: hm.timestamp, signature: `v1,bogus= ${hm.expectedSignature}` };
  t.ok(verifyWebhookHmac(h, hm.payload, ['whsec_' + Buffer.alloc(24).toString('base64'), hm.secret!], hm.timestamp), 'any listed secret may match');
  t.notOk(verifyWebhookHmac(h, hm.payload, [hm.secret!], hm.timestamp + 301), 'stale timestamp refused');
  t.notOk(verifyWebhookHmac(h, hm.payload + ' ', [hm.secret!], hm.timestamp));
  const ed = sw.vectors.find((v) => v.privateKey)!;
  const seed = Buffer.from(ed.privateKey!, 'base64');
  t.equal('whpk_' + Buffer.from(ed25519.getPublicKey(seed)).toString('base64'), ed.derivedPublicKey);
  t.equal(ed25519Signature(new Ed25519Signer(seed), ed.msgId, ed.timestamp, ed.payload), ed.expectedSignature);
  t.ok(verifyWebhookEd25519({ eventId: ed.msgId, timestamp: ed.timestamp, signature: '', signatureEd25519: ed.expectedSignature }, ed.payload, ed.derivedPublicKey!));
  t.notOk(verifyWebhookEd25519({ eventId: ed.msgId, timestamp: ed.timestamp + 1, signature: '', signatureEd25519: ed.expectedSignature }, ed.payload, ed.derivedPublicKey!));
  const dd = new EventDeduper();
  t.ok(dd.firstTime('evt_1'));
  t.notOk(dd.firstTime('evt_1'));
  t.ok(dd.firstTime('evt_2'));
});

t.test('catalog: 47 unique events; sensitive examples and emitted sensitive events carry ids and states only', async (t) => {
  t.equal(EVENT_TYPES.length, 47);
  t.equal(new Set(EVENT_TYPES.map((e) => e.name)).size, 47);
  for (const name of ['payment.confirmed', 'compliance.case.opened', 'verification.holder.verified', 'verification.holder.rejected', 'verification.holder.expired', 'tokenization.operation.failed', 'webhook.endpoint.disabled', 'webhook.secret.rotated', 'webhook.test']) {
    t.ok(EVENT_TYPES.some((e) => e.name === name), name);
  }
  for (const e of EVENT_TYPES.filter((x) => x.sensitive)) t.ok(sensitiveDataAllowed(e.example_payload), `${e.name} example`);
  t.notOk(sensitiveDataAllowed({ account_holder_id: 'ahd_1', reason: 'Document looked forged' }), 'free text refused');
  t.notOk(sensitiveDataAllowed({ account_holder_id: 'jane@example.com' }), 'personal data refused');
  const s = await setupPlatform(t);
  const rx = await receiver(t);
  const sensitive = EVENT_TYPES.filter((e) => e.sensitive).map((e) => e.name);
  await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: sensitive });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  for (const e of EVENT_TYPES.filter((x) => x.sensitive)) await s.platform.deliveries.emit(scope, e.name, { type: 'x', id: 'x_1' }, { type: 'system', id: 't' }, e.example_payload);
  await t.rejects(s.platform.deliveries.emit(scope, 'verification.holder.rejected', { type: 'x', id: 'x_1' }, { type: 'system', id: 't' }, { account_holder_id: 'ahd_1', reason: 'Blurry passport photo' }), /only identifiers/);
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, sensitive.length);
  for (const r of rx.got) t.ok(sensitiveDataAllowed(JSON.parse(r.body).data), `emitted ${r.headers['svc-webhook-event']}`);
});
