// Receiver helpers for customer servers (docs/platform/webhooks.md): verify the HMAC signature in
// constant time against one or more secrets (old and new during a rotation overlap), verify the Ed25519
// signature against the published key, and drop repeats by event id.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';

export interface WebhookHeaders {
  eventId: string;
  timestamp: number;
  signature: string;
  signatureEd25519?: string;
}

function signed(h: Pick<WebhookHeaders, 'eventId' | 'timestamp'>, rawBody: string | Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${h.eventId}.${h.timestamp}.`, 'utf8'), typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody)]);
}

/** True when any v1 signature in the header matches any of the secrets and the timestamp is fresh. */
export function verifyWebhookHmac(h: WebhookHeaders, rawBody: string | Uint8Array, secrets: string[], nowSeconds = Math.floor(Date.now() / 1000), toleranceSeconds = 300): boolean {
  if (!Number.isInteger(h.timestamp) || Math.abs(nowSeconds - h.timestamp) > toleranceSeconds) return false;
  const content = signed(h, rawBody);
  const given = h.signature.split(' ').filter((s) => s.startsWith('v1,')).map((s) => Buffer.from(s.slice(3), 'base64'));
  let ok = false;
  for (const secret of secrets) {
    const want = createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64')).update(content).digest();
    for (const g of given) if (g.length === want.length && timingSafeEqual(g, want)) ok = true;
  }
  return ok;
}

/** Verifies `v1a,<base64>` against the published Ed25519 key (`whpk_<base64>` or raw 32 bytes). */
export function verifyWebhookEd25519(h: WebhookHeaders, rawBody: string | Uint8Array, publicKey: string | Uint8Array): boolean {
  const sig = h.signatureEd25519?.split(' ').find((s) => s.startsWith('v1a,'));
  if (!sig) return false;
  const pk = typeof publicKey === 'string' ? Buffer.from(publicKey.replace(/^whpk_/, ''), 'base64') : publicKey;
  try {
    return ed25519.verify(Buffer.from(sig.slice(4), 'base64'), signed(h, rawBody), pk);
  } catch {
    return false;
  }
}

/** Remembers event ids for a while; `firstTime` is false for a repeat delivery of the same event. */
export class EventDeduper {
  private readonly seen = new Map<string, number>();
  constructor(private readonly ttlMs = 7 * 24 * 3600_000, private readonly max = 100_000) {}

  firstTime(eventId: string, nowMs = Date.now()): boolean {
    if (this.seen.size >= this.max) for (const [k, t] of this.seen) if (t < nowMs) this.seen.delete(k);
    const until = this.seen.get(eventId);
    if (until !== undefined && until >= nowMs) return false;
    this.seen.set(eventId, nowMs + this.ttlMs);
    return true;
  }
}
