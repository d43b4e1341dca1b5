// Receiver helpers for customer servers (docs/platform/webhooks.md). The rule is platform-api.md's:
// SVC-Webhook-Signature is HMAC-SHA256 over the exact raw body with the endpoint secret, compared in
// constant time; nothing else is signed. `verifyWebhookHmac` is that rule (any `v1,` entry, any of
// several secrets: old and new during a rotation overlap); `verifyWebhookEd25519` checks the optional
// Ed25519 signature over the same bytes against the published key. `verifyWebhook` adds what the
// signed body carries for replay protection: the event id (dedupe on it, `EventDeduper`) and the
// attempt's `delivery.sent_at` (refused when more than five minutes from the receiver's clock).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';

function bytesOf(rawBody: string | Uint8Array): Buffer {
  return typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
}

function entries(header: string | undefined, version: string): Buffer[] {
  return (header ?? '').split(' ').filter((s) => s.startsWith(`${version},`)).map((s) => Buffer.from(s.slice(version.length + 1), 'base64'));
}

/**
 * Unix seconds from SVC-Webhook-Timestamp as a receiver holds it: the header string (`"1700000000"`,
 * as `req.headers` gives it) or a number. Undefined for anything else (empty, fractional, signed, NaN).
 */
export function webhookTimestampSeconds(value: string | number | undefined): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string' || !/^\s*[0-9]{1,15}\s*$/.test(value)) return undefined;
  return Number(value.trim());
}

export interface WebhookHmacOptions {
  /**
   * SVC-Webhook-Timestamp, as the header string or as a number: when given, it must be within
   * `toleranceSeconds` of `nowMs`. An early refusal of old deliveries only: the header is not signed,
   * so replay protection is the signed `delivery.sent_at` that verifyWebhook checks.
   */
  timestamp?: string | number;
  /** Default 300 s. */
  toleranceSeconds?: number;
  nowMs?: number;
}

/**
 * True when a `v1,<base64>` entry of SVC-Webhook-Signature is HMAC-SHA256 of exactly `rawBody` under
 * one of the secrets (`whsec_<base64>`: the key is the decoded bytes). Constant-time comparison. With
 * `timestamp`, also false when it is malformed or outside the tolerance.
 */
export function verifyWebhookHmac(signatureHeader: string | undefined, rawBody: string | Uint8Array, secrets: readonly string[], options: WebhookHmacOptions = {}): boolean {
  if (options.timestamp !== undefined) {
    const at = webhookTimestampSeconds(options.timestamp);
    if (at === undefined) return false;
    if (Math.abs((options.nowMs ?? Date.now()) / 1000 - at) > (options.toleranceSeconds ?? 300)) return false;
  }
  const body = bytesOf(rawBody);
  const given = entries(signatureHeader, 'v1');
  let ok = false;
  for (const secret of secrets) {
    const want = createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64')).update(body).digest();
    for (const g of given) if (g.length === want.length && timingSafeEqual(g, want)) ok = true;
  }
  return ok;
}

/** Verifies the `v1a,<base64>` entry of SVC-Webhook-Signature-Ed25519 over `rawBody` against the published key (`whpk_<base64>` or raw 32 bytes). */
export function verifyWebhookEd25519(signatureHeader: string | undefined, rawBody: string | Uint8Array, publicKey: string | Uint8Array): boolean {
  const pk = typeof publicKey === 'string' ? Buffer.from(publicKey.replace(/^whpk_/, ''), 'base64') : publicKey;
  const body = bytesOf(rawBody);
  for (const sig of entries(signatureHeader, 'v1a')) {
    try {
      if (ed25519.verify(sig, body, pk)) return true;
    } catch {
      // a malformed entry verifies nothing
    }
  }
  return false;
}

/** The body of every delivery: the event envelope plus the attempt (`delivery`), all of it signed. */
export interface WebhookEvent {
  id: string;
  type: string;
  version: number;
  created_at: string;
  resource: { type: string; id: string };
  actor: { type: string; id: string };
  data: Record<string, unknown>;
  delivery: { id: string; sent_at: string };
}

/** Node's `req.headers` (lower-case names) or a fetch `Headers`. */
export type WebhookHeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(h: WebhookHeaderSource, name: string): string | undefined {
  if (typeof (h as { get?: unknown }).get === 'function') return (h as { get(name: string): string | null }).get(name) ?? undefined;
  const v = (h as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(v) ? v.join(' ') : v;
}

export type WebhookVerification =
  | { ok: true; event: WebhookEvent }
  | { ok: false; reason: 'bad_signature' | 'bad_ed25519_signature' | 'malformed_body' | 'header_mismatch' | 'stale' };

export interface VerifyWebhookOptions {
  /** The endpoint's secrets: the current one, and the previous one during a rotation overlap. */
  secrets: readonly string[];
  /** The published Ed25519 key; when given, the Ed25519 signature must verify too. */
  publicKey?: string | Uint8Array;
  /** How far `delivery.sent_at` may be from `nowMs`; default 300 s. */
  toleranceSeconds?: number;
  nowMs?: number;
}

/**
 * Verifies one delivery: the HMAC over the raw body (and the Ed25519 signature when a key is given),
 * then, inside the signed body, that the attempt was sent within the tolerance and that the
 * SVC-Webhook-Event-Id and SVC-Webhook-Delivery-Id headers, when present, name the signed ids. Dedupe
 * the returned `event.id` (the signed one, not the header) before acting.
 */
export function verifyWebhook(headers: WebhookHeaderSource, rawBody: string | Uint8Array, opts: VerifyWebhookOptions): WebhookVerification {
  if (!verifyWebhookHmac(header(headers, 'svc-webhook-signature'), rawBody, opts.secrets)) return { ok: false, reason: 'bad_signature' };
  if (opts.publicKey !== undefined && !verifyWebhookEd25519(header(headers, 'svc-webhook-signature-ed25519'), rawBody, opts.publicKey)) return { ok: false, reason: 'bad_ed25519_signature' };
  let event: WebhookEvent;
  try {
    event = JSON.parse(bytesOf(rawBody).toString('utf8')) as WebhookEvent;
  } catch {
    return { ok: false, reason: 'malformed_body' };
  }
  if (typeof event !== 'object' || event === null || typeof event.id !== 'string' || typeof event.delivery?.id !== 'string' || typeof event.delivery.sent_at !== 'string') return { ok: false, reason: 'malformed_body' };
  const sentAt = Date.parse(event.delivery.sent_at);
  if (!Number.isFinite(sentAt) || Math.abs((opts.nowMs ?? Date.now()) - sentAt) > (opts.toleranceSeconds ?? 300) * 1000) return { ok: false, reason: 'stale' };
  const eventId = header(headers, 'svc-webhook-event-id');
  const deliveryId = header(headers, 'svc-webhook-delivery-id');
  if ((eventId !== undefined && eventId !== event.id) || (deliveryId !== undefined && deliveryId !== event.delivery.id)) return { ok: false, reason: 'header_mismatch' };
  return { ok: true, event };
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
