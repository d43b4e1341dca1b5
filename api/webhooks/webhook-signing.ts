// Webhook signatures (docs/platform/webhooks.md), as platform-api.md states them: SVC-Webhook-Signature
// is HMAC-SHA256 over the exact raw body, keyed by the endpoint secret, and nothing else. Secrets are
// `whsec_` + base64 of 24 random bytes; the HMAC key is the decoded bytes, and each signature is written
// `v1,<base64>` (both as in Standard Webhooks, whose public vectors these functions pass). The header is a
// space-separated list, one signature per valid secret (two during a rotation overlap).
// SVC-Webhook-Signature-Ed25519 is `v1a,<base64 Ed25519>` over the same raw body, under the platform key
// published at GET /v1/public/webhook-signing-key. Freshness and replay protection are inside the signed
// body (the event id and `delivery.sent_at`), not in unsigned headers.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Ed25519Signer } from '../../common/ed25519.ts';

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function secretKeyBytes(secret: string): Buffer {
  return Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
}

export function secretFingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secretKeyBytes(secret)).digest('hex').slice(0, 32)}`;
}

function bytesOf(content: string | Uint8Array): Buffer {
  return typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content);
}

/** `v1,<base64 HMAC-SHA256>` of exactly these bytes (the raw body of a delivery) under the secret. */
export function hmacSignature(secret: string, content: string | Uint8Array): string {
  return `v1,${createHmac('sha256', secretKeyBytes(secret)).update(bytesOf(content)).digest('base64')}`;
}

/**
 * Standard Webhooks' signature (https://www.standardwebhooks.com): `v1,<base64 HMAC-SHA256>` of
 * `<webhook-id>.<webhook-timestamp>.<body>` under the secret. Sent beside the spec's headers, in
 * `webhook-signature`, so receivers can use the off-the-shelf libraries; the spec's signature is unchanged.
 */
export function standardWebhookSignature(secret: string, id: string, timestampS: number, body: string): string {
  return hmacSignature(secret, Buffer.concat([Buffer.from(`${id}.${timestampS}.`, 'utf8'), Buffer.from(body, 'utf8')]));
}

/** `v1a,<base64 Ed25519>` of exactly these bytes under the platform's webhook key. */
export function ed25519Signature(signer: Ed25519Signer, content: string | Uint8Array): string {
  return `v1a,${Buffer.from(signer.sign(bytesOf(content))).toString('base64')}`;
}
