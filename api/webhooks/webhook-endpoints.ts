// Webhook endpoints of a workspace (docs/platform/webhooks.md): create, list, read, patch, rotate, test
// and delete. The signing secret is kept for signing and returned only by create and rotate.
import type { RecordRepository, Op } from '../store/record-repository.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { newId } from '../store/ids.ts';
import { EVENT_NAMES } from './event-catalog.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import { pageOf } from '../store/pagination.ts';
import { ed25519Signature, hmacSignature, newWebhookSecret, secretFingerprint, standardWebhookSignature } from './webhook-signing.ts';
import type { AuditLog, Actor } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { Ed25519Signer } from '../../common/ed25519.ts';
import { DestinationPolicy } from './destination-policy.ts';
import { OutboundHttp, type HostLookup, type OutboundErrorCategory, type OutboundResult } from './outbound-http.ts';
import { DeliveryQueue, type QueueChange } from './delivery-queue.ts';
import { WEBHOOK_ENDPOINTS } from './collections.ts';
import { IDEMPOTENCY, IDEMPOTENCY_WINDOW_MS, markReplayed, withinWindow } from '../idempotency.ts';

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

/** `error` is a category (outbound-http.ts), never the underlying error text. */
export interface TestResult { delivered: boolean; status_code: number | null; duration_ms: number; error: OutboundErrorCategory | null }

export interface WebhookEndpointsOptions {
  store: RecordRepository;
  cursors: CursorCodec;
  audit: AuditLog;
  signingSeed: Uint8Array;
  clock?: () => number;
  /** Delivery timeout in ms (spec: ten seconds). */
  timeoutMs?: number;
  /** Where webhooks may go (API_WEBHOOK_ALLOWED_DESTINATIONS); default: https to public addresses only. */
  destinations?: DestinationPolicy;
  /** Name resolution for the connect-time check; tests inject one. */
  lookup?: HostLookup;
  /** The endpoints' delivery queues (shared with the delivery engine); one is made when absent. */
  queue?: DeliveryQueue;
  /** How long a test call's stored result answers its Idempotency-Key (api/idempotency.ts; default 24 h). */
  idempotencyWindowMs?: number;
}

export const MAX_URL = 2048;

export function validateUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new CustodyError('validation_failed', 'url must be an absolute URL');
  }
  if (url.length > MAX_URL) throw new CustodyError('validation_failed', `url must be at most ${MAX_URL} characters`);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new CustodyError('validation_failed', 'url must be http or https');
  if (u.username || u.password) throw new CustodyError('validation_failed', 'url must not carry credentials');
}

export function validateEvents(events: string[]): void {
  if (events.length < 1 || events.length > 50) throw new CustodyError('validation_failed', 'events must list 1 to 50 event names');
  const unknown = events.filter((e) => !EVENT_NAMES.has(e));
  if (unknown.length) throw new CustodyError('unknown_event', `not a registered event: ${unknown.slice(0, 5).join(', ')}`);
  if (new Set(events).size !== events.length) throw new CustodyError('validation_failed', 'events must not repeat');
}

export class WebhookEndpoints {
  private readonly clock: () => number;
  private readonly signer: Ed25519Signer;
  readonly http: OutboundHttp;
  /** Writing (pausing, resuming) and deleting an endpoint set its queue's ready entry in the same batch. */
  readonly queue: DeliveryQueue;
  constructor(private readonly o: WebhookEndpointsOptions) {
    this.clock = o.clock ?? Date.now;
    this.queue = o.queue ?? new DeliveryQueue(o.store);
    this.signer = new Ed25519Signer(o.signingSeed);
    this.http = new OutboundHttp({ policy: o.destinations ?? DestinationPolicy.STRICT, ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}), ...(o.lookup ? { lookup: o.lookup } : {}) });
  }

  /** The URL rules plus the destination policy's early refusals (422 validation_failed naming url). */
  private validateDestination(url: string): void {
    validateUrl(url);
    const refusal = this.http.policy.checkUrl(url);
    if (refusal) throw new CustodyError('validation_failed', refusal);
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
    const e = /^whe_[0-9a-f]{26}$/.test(id) ? await WEBHOOK_ENDPOINTS.in(this.o.store).get(id) : undefined;
    if (!e || e.workspace !== scope.workspace) throw new CustodyError('not_found', `no webhook endpoint ${id}`);
    return e;
  }

  /**
   * Writes the record through its queue's `commit`, with the queue's ready entry following `enabled`
   * in the same batch: disabled takes the queue out of the ready index (its rows are not read while
   * paused), enabled puts it back at its oldest row (delivery-queue.ts).
   */
  private async write(e: EndpointRecord, extra: Op[]): Promise<void> {
    await this.queue.commit([WEBHOOK_ENDPOINTS.putOp(e.id, e, { index: this.ix(e) }), ...extra], [{ endpoint: e.id, active: e.enabled }]);
  }

  async create(scope: Scope, actor: Actor, body: { url: string; events: string[]; description?: string }): Promise<{ endpoint: EndpointRecord; secret: string }> {
    this.validateDestination(body.url);
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
    const items = await WEBHOOK_ENDPOINTS.in(this.o.store).byIndexAfter(`${scope.workspace}\x00`, after, limit + 1);
    const page = pageOf(this.o.cursors, items, limit, 'webhook_endpoints', scope.workspace, {});
    return { ...page, data: page.data.map((e) => this.view(e, false)) };
  }

  async patch(scope: Scope, actor: Actor, id: string, body: { url?: string; events?: string[]; description?: string | null; enabled?: boolean }): Promise<EndpointRecord> {
    const before = await this.get(scope, id);
    if (Object.keys(body).length === 0) return before;
    if (body.url !== undefined) this.validateDestination(body.url);
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

  /**
   * The writes that disable an endpoint whose receiver answered 410 Gone (the system's act, audited);
   * its deliveries pause until it is enabled again. The caller commits them with the events they cause.
   */
  goneWrites(before: EndpointRecord): { ops: Op[]; change: QueueChange } {
    const after: EndpointRecord = { ...before, enabled: false, updated_at: new Date(this.clock()).toISOString() };
    const scope = { tenant: before.tenant, workspace: before.workspace };
    return {
      ops: [
        WEBHOOK_ENDPOINTS.putOp(after.id, after, { index: this.ix(after) }),
        this.o.audit.op(scope, { type: 'system', id: 'delivery-engine' }, 'webhook_endpoint.update', after.id, this.view(before, false), this.view(after, false)),
      ],
      change: { endpoint: after.id, active: false },
    };
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
    // Its queued rows stay ready: the engine dead-letters them (endpoint_deleted), paused or not.
    await this.queue.commit([
      WEBHOOK_ENDPOINTS.delOp(id, this.ix(e)),
      this.o.audit.op(scope, actor, 'webhook_endpoint.delete', id, this.view(e, false), null),
    ], [{ endpoint: id, active: true }]);
  }

  /**
   * Headers and body of one delivery attempt; used by the test operation and the delivery engine. Every
   * call is a new attempt with a new delivery id (`wha_...`); the event id is the envelope's and never
   * changes. The body is the envelope plus `delivery: {id, sent_at}`, so the attempt's id and time are
   * inside the signed bytes; SVC-Webhook-Signature is HMAC-SHA256 over exactly that body
   * (webhook-signing.ts). SVC-Webhook-Timestamp repeats `sent_at` in Unix seconds, for information only.
   * Beside them, the Standard Webhooks headers: `webhook-id` (the event id, the same on every attempt),
   * `webhook-timestamp` (the same Unix seconds) and `webhook-signature` (over id, timestamp and body).
   */
  signedRequest(e: EndpointRecord, envelope: { id: string; type: string }, correlationId: string): { body: string; headers: Record<string, string>; deliveryId: string } {
    const nowMs = this.clock();
    const deliveryId = newId('wha', nowMs);
    const body = JSON.stringify({ ...envelope, delivery: { id: deliveryId, sent_at: new Date(nowMs).toISOString() } });
    const timestampS = Math.floor(nowMs / 1000);
    const secrets = this.signingSecrets(e, nowMs);
    return {
      body,
      deliveryId,
      headers: {
        'content-type': 'application/json',
        'svc-webhook-delivery-id': deliveryId,
        'svc-webhook-event': envelope.type,
        'svc-webhook-event-id': envelope.id,
        'svc-webhook-timestamp': String(timestampS),
        'svc-webhook-signature': secrets.map((s) => hmacSignature(s, body)).join(' '),
        'svc-webhook-signature-ed25519': ed25519Signature(this.signer, body),
        'x-correlation-id': correlationId,
        'webhook-id': envelope.id,
        'webhook-timestamp': String(timestampS),
        'webhook-signature': secrets.map((s) => standardWebhookSignature(s, envelope.id, timestampS, body)).join(' '),
      },
    };
  }

  /**
   * POSTs once through the policy-checked client (outbound-http.ts) with the delivery timeout; a 2xx
   * delivers. Used by the test operation and the delivery engine.
   */
  post(url: string, req: { body: string; headers: Record<string, string> }): Promise<OutboundResult> {
    return this.http.post(url, req);
  }

  async test(scope: Scope, actor: Actor, id: string, idempotencyKey: string | undefined): Promise<TestResult> {
    const e = await this.get(scope, id);
    const idemId = idempotencyKey ? `${scope.workspace}\x00test\x00${id}\x00${idempotencyKey}` : undefined;
    if (idemId) {
      // The stored result answers for the idempotency window (api/idempotency.ts), then the key is new.
      const prior = (await IDEMPOTENCY.in(this.o.store).get(idemId)) as (TestResult & { created_at?: string }) | undefined;
      if (prior && withinWindow(prior.created_at, this.clock(), this.o.idempotencyWindowMs ?? IDEMPOTENCY_WINDOW_MS)) {
        markReplayed();
        return { delivered: prior.delivered, status_code: prior.status_code, duration_ms: prior.duration_ms, error: prior.error };
      }
    }
    const eventId = newId('evt', this.clock());
    const envelope = {
      id: eventId, type: 'webhook.test', version: 1, created_at: new Date(this.clock()).toISOString(),
      resource: { type: 'webhook_endpoint', id: e.id }, actor, data: { endpoint_id: e.id, message: 'test event' },
    };
    const r = await this.post(e.url, this.signedRequest(e, envelope, newId('cor', this.clock())));
    const result: TestResult = { delivered: r.delivered, status_code: r.status_code, duration_ms: r.duration_ms, error: r.error };
    if (idemId) await IDEMPOTENCY.in(this.o.store).put(idemId, { ...result, created_at: new Date(this.clock()).toISOString() });
    return result;
  }
}
