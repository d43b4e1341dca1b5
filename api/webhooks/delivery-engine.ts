// The webhook delivery engine (docs/platform/webhooks.md). `emit` writes the event and one delivery per
// subscribed endpoint, with a queue entry each, in one atomic batch (the durable outbox). The worker
// takes due queue entries, POSTs the signed envelope and records the outcome, moving the queue entry in
// the same batch. The event id lives in the delivery row, so a restart re-sends the same event id and
// never invents another; a delivery interrupted by a crash is sent again (at least once, dedupe by
// SVC-Webhook-Event-Id).
import type { Op, RecordStore } from '../store/record-store.ts';
import { ApiError } from '../errors.ts';
import { newId } from '../store/ids.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import { pageOf } from '../store/pagination.ts';
import type { EndpointRecord, WebhookEndpoints } from './webhook-endpoints.ts';
import type { Scope } from '../tenancy/scope.ts';
import { eventType, sensitiveDataAllowed } from './event-catalog.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'dlq';

export interface Envelope {
  id: string;
  type: string;
  version: number;
  created_at: string;
  resource: { type: string; id: string };
  actor: Actor | { type: 'system'; id: string };
  data: Record<string, unknown>;
}

export interface DeliveryRecord {
  id: string;
  tenant: string;
  workspace: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempt_count: number;
  last_status_code: number | null;
  last_response_body: string | null;
  last_error: string | null;
  next_retry_at: string | null;
  delivered_at: string | null;
  correlation_id: string;
  payload: Envelope;
  created_at: string;
  updated_at: string;
  queue_key: string | null;
}

/** Seconds before attempt 1..7: immediate, 60 s, 5 min, 30 min, 3 h, 12 h, 24 h. */
export const DEFAULT_SCHEDULE = [0, 60, 300, 1800, 10_800, 43_200, 86_400];
/** 4xx answers that say the request will never succeed; they dead-letter at once. Others retry. */
export const PERMANENT_4XX = new Set([400, 405, 410, 413, 415, 422]);
export const RETENTION_MS = 30 * 24 * 3600_000;

export interface DeliveryEngineOptions {
  store: RecordStore;
  endpoints: WebhookEndpoints;
  cursors: CursorCodec;
  clock?: () => number;
  schedule?: number[];
  concurrency?: number;
}

const DELIVERY_ID = /^whd_[0-9a-f]{26}$/;

export class DeliveryEngine {
  private readonly clock: () => number;
  private readonly schedule: number[];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly inFlight = new Set<string>();

  constructor(private readonly o: DeliveryEngineOptions) {
    this.clock = o.clock ?? Date.now;
    this.schedule = o.schedule ?? DEFAULT_SCHEDULE;
  }

  private queueKey(atMs: number, id: string): string {
    return `${String(atMs).padStart(16, '0')}_${id}`;
  }

  private ops(d: DeliveryRecord, previousQueueKey: string | null): Op[] {
    const ops: Op[] = [{ type: 'put', collection: 'webhook_deliveries', id: d.id, value: d, index: [`${d.workspace}\x00${d.id}`] }];
    if (previousQueueKey && previousQueueKey !== d.queue_key) ops.push({ type: 'del', collection: 'delivery_queue', id: previousQueueKey });
    if (d.queue_key && d.queue_key !== previousQueueKey) ops.push({ type: 'put', collection: 'delivery_queue', id: d.queue_key, value: { delivery_id: d.id } });
    return ops;
  }

  /** Records an event and queues one delivery per endpoint of the workspace subscribed to it. */
  async emit(scope: Scope, type: string, resource: { type: string; id: string }, actor: Envelope['actor'], data: Record<string, unknown>, extra: Op[] = []): Promise<{ event: Envelope; deliveries: DeliveryRecord[] }> {
    const et = eventType(type);
    if (!et) throw new ApiError(422, 'unknown_event', `not a registered event: ${type}`);
    if (et.sensitive && !sensitiveDataAllowed(data)) throw new Error(`sensitive event ${type} may carry only identifiers and enumerated states`);
    const nowMs = this.clock();
    const now = new Date(nowMs).toISOString();
    const event: Envelope = { id: newId('evt', nowMs), type, version: et.version, created_at: now, resource, actor, data };
    const endpoints = await this.o.store.byIndex<EndpointRecord>('webhook_endpoints', `${scope.workspace}\x00`, 100_000);
    const deliveries: DeliveryRecord[] = [];
    const ops: Op[] = [{ type: 'put', collection: 'webhook_events', id: event.id, value: { ...event, tenant: scope.tenant, workspace: scope.workspace } }, ...extra];
    for (const e of endpoints.filter((x) => x.events.includes(type))) {
      const id = newId('whd', nowMs);
      const d: DeliveryRecord = {
        id, tenant: scope.tenant, workspace: scope.workspace, endpoint_id: e.id, event_id: event.id, event_type: type, status: 'pending', attempt_count: 0,
        last_status_code: null, last_response_body: null, last_error: null, next_retry_at: now, delivered_at: null, correlation_id: newId('cor', nowMs), payload: event,
        created_at: now, updated_at: now, queue_key: this.queueKey(nowMs, id),
      };
      deliveries.push(d);
      ops.push(...this.ops(d, null));
    }
    await this.o.store.batch(ops);
    this.kick();
    return { event, deliveries };
  }

  /** Runs every due delivery once (concurrently up to the limit); returns how many were attempted. */
  async runDue(): Promise<number> {
    const nowMs = this.clock();
    const due: string[] = [];
    for await (const q of this.o.store.range<{ delivery_id: string }>('delivery_queue', { lt: this.queueKey(nowMs, '\xff') })) {
      if (!this.inFlight.has(q.delivery_id)) due.push(q.delivery_id);
      if (due.length >= 10_000) break;
    }
    const limit = this.o.concurrency ?? 16;
    let next = 0;
    let attempted = 0;
    const worker = async () => {
      while (next < due.length && !this.stoppedNow()) {
        const id = due[next++]!;
        if (await this.attempt(id)) attempted++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, due.length) }, worker));
    return attempted;
  }

  private stoppedNow(): boolean {
    return this.stopped && this.timer === undefined && this.running !== undefined;
  }

  private async attempt(id: string): Promise<boolean> {
    this.inFlight.add(id);
    try {
      const d = await this.o.store.get<DeliveryRecord>('webhook_deliveries', id);
      if (!d || !d.queue_key || (d.status !== 'pending' && d.status !== 'failed')) return false;
      const endpoint = await this.o.store.get<EndpointRecord>('webhook_endpoints', d.endpoint_id);
      if (!endpoint) {
        await this.o.store.batch(this.ops({ ...d, status: 'dlq', last_error: 'endpoint deleted', next_retry_at: null, queue_key: null, updated_at: new Date(this.clock()).toISOString() }, d.queue_key));
        return false;
      }
      if (!endpoint.enabled) return false; // paused: stays queued until the endpoint is enabled again
      const r = await this.o.endpoints.post(endpoint.url, this.o.endpoints.signedRequest(endpoint, d.payload, d.id, d.correlation_id));
      const nowMs = this.clock();
      const now = new Date(nowMs).toISOString();
      const attempts = d.attempt_count + 1;
      const base = { ...d, attempt_count: attempts, last_status_code: r.status_code, last_response_body: r.response_body, last_error: r.error, updated_at: now };
      if (r.delivered) {
        await this.o.store.batch(this.ops({ ...base, status: 'delivered', delivered_at: now, next_retry_at: null, queue_key: null }, d.queue_key));
        return true;
      }
      const permanent = r.status_code !== null && PERMANENT_4XX.has(r.status_code);
      if (permanent || attempts >= this.schedule.length) {
        const dead: DeliveryRecord = { ...base, status: 'dlq', next_retry_at: null, queue_key: null };
        const ops = this.ops(dead, d.queue_key);
        if (d.event_type !== 'webhook.delivery.dead_lettered') {
          await this.emit({ tenant: d.tenant, workspace: d.workspace }, 'webhook.delivery.dead_lettered', { type: 'webhook_delivery', id: d.id }, { type: 'system', id: 'delivery-engine' },
            { delivery_id: d.id, endpoint_id: d.endpoint_id, event_id: d.event_id, attempt_count: attempts }, ops);
        } else {
          await this.o.store.batch(ops);
        }
        return true;
      }
      const at = nowMs + this.schedule[attempts]! * 1000;
      await this.o.store.batch(this.ops({ ...base, status: 'failed', next_retry_at: new Date(at).toISOString(), queue_key: this.queueKey(at, d.id) }, d.queue_key));
      return true;
    } finally {
      this.inFlight.delete(id);
    }
  }

  async get(scope: Scope, id: string): Promise<DeliveryRecord> {
    const d = DELIVERY_ID.test(id) ? await this.o.store.get<DeliveryRecord>('webhook_deliveries', id) : undefined;
    if (!d || d.workspace !== scope.workspace) throw new ApiError(404, 'not_found', `no webhook delivery ${id}`);
    return d;
  }

  async list(scope: Scope, filters: { status?: DeliveryStatus | undefined; endpoint_id?: string | undefined }, cursor: string | undefined, limit: number): Promise<PageResult<DeliveryRecord>> {
    const after = this.o.cursors.decode(cursor, 'webhook_deliveries', scope.workspace, filters);
    const out: DeliveryRecord[] = [];
    let from = after;
    for (;;) {
      const batch = await this.o.store.byIndexAfter<DeliveryRecord>('webhook_deliveries', `${scope.workspace}\x00`, from, 200);
      for (const d of batch) {
        if ((!filters.status || d.status === filters.status) && (!filters.endpoint_id || d.endpoint_id === filters.endpoint_id)) out.push(d);
        if (out.length > limit) break;
      }
      if (out.length > limit || batch.length < 200) break;
      from = batch[batch.length - 1]!.id;
    }
    return pageOf(this.o.cursors, out, limit, 'webhook_deliveries', scope.workspace, filters);
  }

  private requeue(d: DeliveryRecord): Op[] {
    const nowMs = this.clock();
    return this.ops({ ...d, status: 'pending', next_retry_at: new Date(nowMs).toISOString(), queue_key: this.queueKey(nowMs, d.id), updated_at: new Date(nowMs).toISOString() }, d.queue_key);
  }

  async replay(scope: Scope, id: string): Promise<DeliveryRecord> {
    const d = await this.get(scope, id);
    if (d.status !== 'failed' && d.status !== 'dlq') throw new ApiError(409, 'invalid_state', `delivery ${id} is ${d.status}; only failed or dlq deliveries can be replayed`);
    const ops = this.requeue(d);
    await this.o.store.batch(ops);
    this.kick();
    return (ops[0] as { value: DeliveryRecord }).value;
  }

  async bulkReplay(scope: Scope, ids: string[]): Promise<{ data: DeliveryRecord[]; replayed_count: number; skipped_count: number }> {
    const bad = ids.find((i) => !DELIVERY_ID.test(i));
    if (bad !== undefined) throw new ApiError(422, 'validation_failed', `malformed delivery id: ${bad.slice(0, 40)}`);
    const seen = new Set<string>();
    const ops: Op[] = [];
    const data: DeliveryRecord[] = [];
    for (const id of ids) {
      if (seen.has(id)) continue;
      seen.add(id);
      const d = await this.o.store.get<DeliveryRecord>('webhook_deliveries', id);
      if (!d || d.workspace !== scope.workspace || (d.status !== 'failed' && d.status !== 'dlq')) continue;
      const r = this.requeue(d);
      ops.push(...r);
      data.push((r[0] as { value: DeliveryRecord }).value);
    }
    await this.o.store.batch(ops);
    this.kick();
    return { data, replayed_count: data.length, skipped_count: ids.length - data.length };
  }

  /** Deletes deliveries older than the 30-day retention. */
  async prune(): Promise<number> {
    const cutoff = this.clock() - RETENTION_MS;
    const ops: Op[] = [];
    for await (const d of this.o.store.all<DeliveryRecord>('webhook_deliveries')) {
      if (Date.parse(d.created_at) < cutoff && (d.status === 'delivered' || d.status === 'dlq')) ops.push({ type: 'del', collection: 'webhook_deliveries', id: d.id, index: [`${d.workspace}\x00${d.id}`] });
    }
    if (ops.length) await this.o.store.batch(ops);
    return ops.length;
  }

  /** Polls for due deliveries every `intervalMs` until stopped. */
  start(intervalMs = 500): void {
    this.stopped = false;
    const loop = () => {
      this.timer = undefined;
      if (this.stopped) return;
      this.running = this.runDue().then(() => undefined, () => undefined).finally(() => {
        this.running = undefined;
        if (!this.stopped) this.timer = setTimeout(loop, intervalMs);
      });
    };
    this.timer = setTimeout(loop, 0);
  }

  private kick(): void {
    if (this.stopped || this.running || !this.timer) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.start(), 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
