// Webhook endpoints of a workspace (docs/platform/webhooks.md): create, list, read, patch, rotate, test
// and delete. The signing secret is kept for signing and returned only by create and rotate.
import { performance } from 'node:perf_hooks';
import type { RecordStore, Op } from '../store/record-store.ts';
import { ApiError } from '../errors.ts';
import { newId } from '../store/ids.ts';
import { EVENT_NAMES } from './event-catalog.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import { pageOf } from '../store/pagination.ts';
import { ed25519Signature, hmacSignature, newWebhookSecret, secretFingerprint } from './webhook-signing.ts';
import type { AuditLog, Actor } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { Ed25519Signer } from '../../common/ed25519.ts';

export interface EndpointRecord {
  id: string;
  tenant: string;
  workspace: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  hmac_secret_fingerprint?: string;
  previous_hmac_secret_fingerprint?: string | null;
  previous_hmac_secret_expires_at?: string | null;
}

export interface TestResult { delivered: boolean; status_code: number | null; duration_ms: number; error: string | null }

export interface WebhookEndpointsOptions {
  store: RecordStore;
  cursors: CursorCodec;
  audit: AuditLog;
  signingSeed: Uint8Array;
  clock?: () => number;
  /** Delivery timeout in ms (spec: ten seconds). */
  timeoutMs?: number;
}

export const MAX_URL = 2048;

export function validateUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ApiError(422, 'validation_failed', 'url must be an absolute URL');
  }
  if (url.length > MAX_URL) throw new ApiError(422, 'validation_failed', `url must be at most ${MAX_URL} characters`);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ApiError(422, 'validation_failed', 'url must be http or https');
  if (u.username || u.password) throw new ApiError(422, 'validation_failed', 'url must not carry credentials');
}

export function validateEvents(events: string[]): void {
  if (events.length < 1 || events.length > 50) throw new ApiError(422, 'validation_failed', 'events must list 1 to 50 event names');
  const unknown = events.filter((e) => !EVENT_NAMES.has(e));
  if (unknown.length) throw new ApiError(422, 'unknown_event', `not a registered event: ${unknown.slice(0, 5).join(', ')}`);
  if (new Set(events).size !== events.length) throw new ApiError(422, 'validation_failed', 'events must not repeat');
}

export class WebhookEndpoints {
  private readonly clock: () => number;
  private readonly signer: Ed25519Signer;
  constructor(private readonly o: WebhookEndpointsOptions) {
    this.clock = o.clock ?? Date.now;
    this.signer = new Ed25519Signer(o.signingSeed);
  }

  /** Both secrets while the overlap lasts, else the current one. */
  signingSecrets(e: EndpointRecord, nowMs = this.clock()): string[] {
    return e.previous_secret && e.previous_secret_expires_at && Date.parse(e.previous_secret_expires_at) > nowMs ? [e.secret, e.previous_secret] : [e.secret];
  }

  view(e: EndpointRecord, withFingerprints: boolean): EndpointView {
    const v: EndpointView = { id: e.id, url: e.url, events: e.events, description: e.description, enabled: e.enabled, created_at: e.created_at, updated_at: e.updated_at };
    if (withFingerprints) {
      const secrets = this.signingSecrets(e);
      v.hmac_secret_fingerprint = secretFingerprint(e.secret);
      v.previous_hmac_secret_fingerprint = secrets[1] ? secretFingerprint(secrets[1]) : null;
      v.previous_hmac_secret_expires_at = secrets[1] ? e.previous_secret_expires_at : null;
    }
    return v;
  }

  private ix(e: EndpointRecord): string[] {
    return [`${e.workspace}\x00${e.id}`];
  }

  async get(scope: Scope, id: string): Promise<EndpointRecord> {
    const e = /^whe_[0-9a-f]{26}$/.test(id) ? await this.o.store.get<EndpointRecord>('webhook_endpoints', id) : undefined;
    if (!e || e.workspace !== scope.workspace) throw new ApiError(404, 'not_found', `no webhook endpoint ${id}`);
    return e;
  }

  private async write(e: EndpointRecord, extra: Op[]): Promise<void> {
    await this.o.store.batch([{ type: 'put', collection: 'webhook_endpoints', id: e.id, value: e, index: this.ix(e) }, ...extra]);
  }

  async create(scope: Scope, actor: Actor, body: { url: string; events: string[]; description?: string }): Promise<{ endpoint: EndpointRecord; secret: string }> {
    validateUrl(body.url);
    validateEvents(body.events);
    const now = new Date(this.clock()).toISOString();
    const secret = newWebhookSecret();
    const e: EndpointRecord = {
      id: newId('whe', this.clock()), tenant: scope.tenant, workspace: scope.workspace, url: body.url, events: body.events, description: body.description ?? null,
      enabled: true, secret, previous_secret: null, previous_secret_expires_at: null, created_at: now, updated_at: now,
    };
    await this.write(e, [this.o.audit.op(scope, actor, 'webhook_endpoint.create', e.id, null, this.view(e, false))]);
    return { endpoint: e, secret };
  }

  async list(scope: Scope, cursor: string | undefined, limit: number): Promise<PageResult<EndpointView>> {
    const after = this.o.cursors.decode(cursor, 'webhook_endpoints', scope.workspace, {});
    const items = await this.o.store.byIndexAfter<EndpointRecord>('webhook_endpoints', `${scope.workspace}\x00`, after, limit + 1);
    const page = pageOf(this.o.cursors, items, limit, 'webhook_endpoints', scope.workspace, {});
    return { ...page, data: page.data.map((e) => this.view(e, false)) };
  }

  async patch(scope: Scope, actor: Actor, id: string, body: { url?: string; events?: string[]; description?: string | null; enabled?: boolean }): Promise<EndpointRecord> {
    const before = await this.get(scope, id);
    if (Object.keys(body).length === 0) return before;
    if (body.url !== undefined) validateUrl(body.url);
    if (body.events !== undefined) validateEvents(body.events);
    const after: EndpointRecord = {
      ...before,
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.events !== undefined ? { events: body.events } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      updated_at: new Date(this.clock()).toISOString(),
    };
    await this.write(after, [this.o.audit.op(scope, actor, 'webhook_endpoint.update', id, this.view(before, false), this.view(after, false))]);
    return after;
  }

  async rotate(scope: Scope, actor: Actor, id: string, overlapSec: number): Promise<{ endpoint: EndpointRecord; secret: string }> {
    const before = await this.get(scope, id);
    const secret = newWebhookSecret();
    const nowMs = this.clock();
    const after: EndpointRecord = {
      ...before, secret, previous_secret: before.secret, previous_secret_expires_at: new Date(nowMs + overlapSec * 1000).toISOString(), updated_at: new Date(nowMs).toISOString(),
    };
    await this.write(after, [this.o.audit.op(scope, actor, 'webhook_endpoint.rotate_secret', id, this.view(before, true), this.view(after, true))]);
    return { endpoint: after, secret };
  }

  async remove(scope: Scope, actor: Actor, id: string): Promise<void> {
    const e = await this.get(scope, id);
    await this.o.store.batch([
      { type: 'del', collection: 'webhook_endpoints', id, index: this.ix(e) },
      this.o.audit.op(scope, actor, 'webhook_endpoint.delete', id, this.view(e, false), null),
    ]);
  }

  /** Headers and body of one signed POST; used by the test operation and the delivery engine. */
  signedRequest(e: EndpointRecord, envelope: { id: string; type: string }, deliveryId: string, correlationId: string): { body: string; headers: Record<string, string> } {
    const body = JSON.stringify(envelope);
    const ts = Math.floor(this.clock() / 1000);
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'svc-webhook-delivery-id': deliveryId,
        'svc-webhook-event': envelope.type,
        'svc-webhook-event-id': envelope.id,
        'svc-webhook-timestamp': String(ts),
        'svc-webhook-signature': this.signingSecrets(e).map((s) => hmacSignature(s, envelope.id, ts, body)).join(' '),
        'svc-webhook-signature-ed25519': ed25519Signature(this.signer, envelope.id, ts, body),
        'x-correlation-id': correlationId,
      },
    };
  }

  /** POSTs once with the delivery timeout; a 2xx delivers. */
  async post(url: string, req: { body: string; headers: Record<string, string> }): Promise<TestResult & { response_body: string | null }> {
    const t0 = performance.now();
    try {
      const res = await fetch(url, { method: 'POST', body: req.body, headers: req.headers, redirect: 'manual', signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000) });
      const text = (await res.text()).slice(0, 1024);
      const ok = res.status >= 200 && res.status < 300;
      return { delivered: ok, status_code: res.status, duration_ms: Math.round(performance.now() - t0), error: ok ? null : `endpoint answered ${res.status}`, response_body: text };
    } catch (err) {
      const e = err as Error;
      const msg = e.name === 'TimeoutError' ? 'timed out' : `connection failed: ${(e.cause as Error | undefined)?.message ?? e.message}`;
      return { delivered: false, status_code: null, duration_ms: Math.round(performance.now() - t0), error: msg, response_body: null };
    }
  }

  async test(scope: Scope, actor: Actor, id: string, idempotencyKey: string | undefined): Promise<TestResult> {
    const e = await this.get(scope, id);
    const idemId = idempotencyKey ? `${scope.workspace}\x00test\x00${id}\x00${idempotencyKey}` : undefined;
    if (idemId) {
      const prior = await this.o.store.get<TestResult>('idempotency', idemId);
      if (prior) return prior;
    }
    const eventId = newId('evt', this.clock());
    const envelope = {
      id: eventId, type: 'webhook.test', version: 1, created_at: new Date(this.clock()).toISOString(),
      resource: { type: 'webhook_endpoint', id: e.id }, actor, data: { endpoint_id: e.id, message: 'test event' },
    };
    const r = await this.post(e.url, this.signedRequest(e, envelope, newId('whd', this.clock()), newId('cor', this.clock())));
    const result: TestResult = { delivered: r.delivered, status_code: r.status_code, duration_ms: r.duration_ms, error: r.error };
    if (idemId) await this.o.store.put('idempotency', idemId, result);
    return result;
  }
}
