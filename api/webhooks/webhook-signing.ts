// Webhook signatures (docs/platform/webhooks.md). Secrets are `whsec_` + base64 of 24 random bytes; the
// HMAC key is the decoded bytes (as Standard Webhooks). SVC-Webhook-Signature is a space-separated list
// of `v1,<base64 HMAC-SHA256>` (one per valid secret; two during a rotation overlap) computed over
// `<event id>.<timestamp>.<exact raw body>`; SVC-Webhook-Signature-Ed25519 is `v1a,<base64 Ed25519>`
// over the same bytes, under the platform key published at GET /v1/public/webhook-signing-key.
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

export function signedContent(eventId: string, timestamp: number, rawBody: string): Buffer {
  return Buffer.from(`${eventId}.${timestamp}.${rawBody}`, 'utf8');
}

export function hmacSignature(secret: string, eventId: string, timestamp: number, rawBody: string): string {
  return `v1,${createHmac('sha256', secretKeyBytes(secret)).update(signedContent(eventId, timestamp, rawBody)).digest('base64')}`;
}

export function ed25519Signature(signer: Ed25519Signer, eventId: string, timestamp: number, rawBody: string): string {
  return `v1a,${Buffer.from(signer.sign(signedContent(eventId, timestamp, rawBody))).toString('base64')}`;
}
