// Public vectors and catalog rules: the Standard Webhooks HMAC and Ed25519 vectors and our own signature
// vectors through the signer and the receiver helpers, and the sensitive-event rule on every catalog
// example and emitted event.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { verifyWebhook, verifyWebhookHmac, verifyWebhookEd25519, EventDeduper } from '../../../api/sdk/webhook-receiver.ts';
import { hmacSignature, ed25519Signature } from '../../../api/webhooks/webhook-signing.ts';
import { Ed25519Signer } from '../../../common/ed25519.ts';
import { EVENT_TYPES, sensitiveDataAllowed } from '../../../api/webhooks/event-catalog.ts';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';

interface Vec { name: string; secret?: string; privateKey?: string; derivedPublicKey?: string; msgId: string; timestamp: number; payload: string; signedContent: string; expectedSignature: string }
const sw = JSON.parse(readFileSync('/work/shared/vectors/http/standard-webhooks.json', 'utf8')) as { vectors: Vec[] };

// Standard Webhooks signs `<id>.<timestamp>.<body>`; platform-api.md signs the raw body alone. The key
// derivation (`whsec_` + base64) and the encodings (`v1,` / `v1a,` + base64) are the same, so the public
// vectors pass through our signer and verifiers when given their signed content as the bytes.
t.test('Standard Webhooks vectors: our signer and the receiver helpers agree with them', async (t) => {
  const hm = sw.vectors.find((v) => v.secret)!;
  t.equal(hm.signedContent, `${hm.msgId}.${hm.timestamp}.${hm.payload}`);
  t.equal(hmacSignature(hm.secret!, hm.signedContent), hm.expectedSignature);
  t.ok(verifyWebhookHmac(`v1,bogus= ${hm.expectedSignature}`, hm.signedContent, ['whsec_' + Buffer.alloc(24).toString('base64'), hm.secret!]), 'any listed secret may match');
  t.notOk(verifyWebhookHmac(hm.expectedSignature, hm.signedContent + ' ', [hm.secret!]));
  t.notOk(verifyWebhookHmac(hm.expectedSignature, hm.payload, [hm.secret!]), 'our rule: over the body only, so the Standard Webhooks signature is not one of ours');
  const ed = sw.vectors.find((v) => v.privateKey)!;
  const seed = Buffer.from(ed.privateKey!, 'base64');
  t.equal('whpk_' + Buffer.from(ed25519.getPublicKey(seed)).toString('base64'), ed.derivedPublicKey);
  t.equal(ed25519Signature(new Ed25519Signer(seed), ed.signedContent), ed.expectedSignature);
  t.ok(verifyWebhookEd25519(ed.expectedSignature, ed.signedContent, ed.derivedPublicKey!));
  t.notOk(verifyWebhookEd25519(ed.expectedSignature, ed.signedContent.replace(`.${ed.timestamp}.`, `.${ed.timestamp + 1}.`), ed.derivedPublicKey!));
  const dd = new EventDeduper();
  t.ok(dd.firstTime('evt_1'));
  t.notOk(dd.firstTime('evt_1'));
  t.ok(dd.firstTime('evt_2'));
});

interface OwnCase { name: string; secrets: string[]; body: string; signature_header: string; ed25519_header: string }
const own = JSON.parse(readFileSync(new URL('../../vectors/webhook-signatures-v1.json', import.meta.url), 'utf8')) as { ed25519_seed_hex: string; ed25519_public_key: string; cases: OwnCase[] };

t.test('our vectors (test/vectors/webhook-signatures-v1.json): HMAC over the raw body only, byte for byte', async (t) => {
  const signer = new Ed25519Signer(Buffer.from(own.ed25519_seed_hex, 'hex'));
  t.equal(`whpk_${Buffer.from(ed25519.getPublicKey(Buffer.from(own.ed25519_seed_hex, 'hex'))).toString('base64')}`, own.ed25519_public_key);
  for (const c of own.cases) {
    t.equal(c.secrets.map((s) => hmacSignature(s, c.body)).join(' '), c.signature_header, `${c.name}: signer`);
    t.equal(ed25519Signature(signer, Buffer.from(c.body, 'utf8')), c.ed25519_header, `${c.name}: Ed25519 signer`);
    for (const s of c.secrets) t.ok(verifyWebhookHmac(c.signature_header, Buffer.from(c.body, 'utf8'), [s]), `${c.name}: each secret verifies alone`);
    t.ok(verifyWebhookEd25519(c.ed25519_header, c.body, own.ed25519_public_key), `${c.name}: Ed25519 verifies`);
    const reserialized = JSON.stringify(JSON.parse(c.body), null, 1);
    t.notOk(verifyWebhookHmac(c.signature_header, reserialized, c.secrets), `${c.name}: a re-serialized body does not verify`);
    const delivery = (JSON.parse(c.body) as { delivery: { sent_at: string } }).delivery;
    t.ok(verifyWebhook({ 'svc-webhook-signature': c.signature_header, 'svc-webhook-signature-ed25519': c.ed25519_header }, c.body, { secrets: c.secrets, publicKey: own.ed25519_public_key, nowMs: Date.parse(delivery.sent_at) }).ok);
  }
});

t.test('catalog: 47 unique events; sensitive examples and emitted sensitive events carry ids and states only', async (t) => {
  t.equal(EVENT_TYPES.length, 47);
  t.equal(new Set(EVENT_TYPES.map((e) => e.name)).size, 47);
  for (const name of ['payment.confirmed', 'compliance.case.opened', 'verification.holder.verified', 'verification.holder.rejected', 'verification.holder.expired', 'tokenization.operation.failed', 'webhook.endpoint.disabled', 'webhook.secret.rotated', 'webhook.test']) {
    t.ok(EVENT_TYPES.some((e) => e.name === name), name);
  }
  for (const e of EVENT_TYPES.filter((x) => x.sensitive)) t.ok(sensitiveDataAllowed(e.example_payload, e.name), `${e.name} example`);
  t.notOk(sensitiveDataAllowed({ account_holder_id: 'ahd_1', status: 'Document looked forged' }, 'verification.holder.rejected'), 'free text refused, even in a field of the allow-list');
  t.notOk(sensitiveDataAllowed({ account_holder_id: 'jane@example.com' }, 'verification.holder.verified'), 'personal data refused');
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t);
  const sensitive = EVENT_TYPES.filter((e) => e.sensitive).map((e) => e.name);
  await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: sensitive });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  for (const e of EVENT_TYPES.filter((x) => x.sensitive)) await s.platform.deliveries.emit(scope, e.name, { type: 'x', id: 'x_1' }, { type: 'system', id: 't' }, e.example_payload);
  await t.rejects(s.platform.deliveries.emit(scope, 'verification.holder.rejected', { type: 'x', id: 'x_1' }, { type: 'system', id: 't' }, { account_holder_id: 'ahd_1', reason: 'Blurry passport photo' }), /only identifiers/);
  await t.rejects(s.platform.deliveries.emit(scope, 'compliance.case.resolved', { type: 'x', id: 'x_1' }, { type: 'system', id: 't' }, { case_id: 'cas_1', case_type: 'manual_review', state: 'closed', closed_reason: 'approved' }), /allow-list/, 'an enum outside the allow-list is refused too');
  await s.platform.deliveries.runDue();
  t.equal(rx.got.length, sensitive.length);
  for (const r of rx.got) t.ok(sensitiveDataAllowed(JSON.parse(r.body).data, String(r.headers['svc-webhook-event'])), `emitted ${r.headers['svc-webhook-event']}`);
});
