// Writes test/vectors/webhook-signatures-v1.json: the webhook signatures of platform-api.md for fixed
// inputs. SVC-Webhook-Signature is HMAC-SHA256 over the exact raw body (nothing else) keyed by the
// decoded `whsec_` secret, written `v1,<base64>`, one entry per valid secret; the Ed25519 signature is
// over the same bytes, `v1a,<base64>`. Computed here with node:crypto and @noble/curves directly, not
// through api/webhooks/webhook-signing.ts, which the test then checks against them. Run once when the
// format changes on purpose (`node --import tsx test/vectors/make-webhook-vectors.ts`).
import { writeFileSync } from 'node:fs';
import { createHash, createHmac } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';

const secretOf = (s: string) => `whsec_${createHash('sha256').update(s).digest().subarray(0, 24).toString('base64')}`;
const hmac = (secret: string, body: string) => `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(Buffer.from(body, 'utf8')).digest('base64')}`;
const seed = createHash('sha256').update('webhook vectors platform key').digest();
const envelope = (id: string, data: Record<string, unknown>, delivery: string) => JSON.stringify({
  id, type: 'payment.confirmed', version: 1, created_at: '2026-03-01T00:00:00.000Z', resource: { type: 'payment', id: 'pay_1' },
  actor: { type: 'system', id: 'vectors' }, data, delivery: { id: delivery, sent_at: '2026-03-01T00:01:00.000Z' },
});
const current = secretOf('webhook vectors current secret');
const previous = secretOf('webhook vectors previous secret');
const cases = [
  { name: 'one secret', secrets: [current], body: envelope('evt_0000000000010000001111aaaa', { payment_id: 'pay_1', status: 'confirmed' }, 'wha_0000000000010000002222bbbb') },
  { name: 'non-ASCII body: the bytes as sent, UTF-8', secrets: [current], body: envelope('evt_0000000000010000003333cccc', { note: 'Café 🎉 \u2028 line', amount: '1.50' }, 'wha_0000000000010000004444dddd') },
  { name: 'rotation overlap: current then previous secret', secrets: [current, previous], body: envelope('evt_0000000000010000005555eeee', { payment_id: 'pay_2', status: 'confirmed' }, 'wha_0000000000010000006666ffff') },
];
writeFileSync(new URL('./webhook-signatures-v1.json', import.meta.url), JSON.stringify({
  description: 'Webhook signatures (docs/platform/webhooks.md): SVC-Webhook-Signature = space-separated "v1," + base64(HMAC-SHA256(base64decode(secret without "whsec_"), raw body bytes)), one per secret; SVC-Webhook-Signature-Ed25519 = "v1a," + base64(Ed25519(platform key, raw body bytes))',
  ed25519_seed_hex: seed.toString('hex'),
  ed25519_public_key: `whpk_${Buffer.from(ed25519.getPublicKey(seed)).toString('base64')}`,
  cases: cases.map((c) => ({
    ...c,
    signature_header: c.secrets.map((s) => hmac(s, c.body)).join(' '),
    ed25519_header: `v1a,${Buffer.from(ed25519.sign(Buffer.from(c.body, 'utf8'), seed)).toString('base64')}`,
  })),
}, null, 2) + '\n');
