// The webhook delivery engine (docs/platform/webhooks.md). `emit` writes the event and one delivery per
// subscribed endpoint, with a queue entry each, in one atomic batch (the durable outbox). The worker
// takes due queue entries, POSTs the signed envelope and records the outcome, moving the queue entry in
// the same batch. The event id lives in the delivery row, so a restart re-sends the same event id and
// never invents another; a delivery interrupted by a crash is sent again (at least once, dedupe by
// SVC-Webhook-Event-Id). Queues are per endpoint and served in turns (delivery-queue.ts): one endpoint's
// backlog, or a paused endpoint's, never stands in front of another endpoint's deliveries.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { TryResult } from '../store/local-locks.ts';
import { FairSlots, dueKey, parseLegacyKey, queueEntryDel, type DeliveryQueue, type QueueChange } from './delivery-queue.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { newId } from '../store/ids.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import { pageOf } from '../store/pagination.ts';
import type { WebhookEndpoints } from './webhook-endpoints.ts';
import type { Scope } from '../tenancy/scope.ts';
import { eventType, sensitiveDataAllowed } from './event-catalog.ts';
import { LEGACY_DELIVERY_QUEUE, WEBHOOK_DELIVERIES, WEBHOOK_ENDPOINTS, WEBHOOK_EVENTS } from './collections.ts';

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

/** A Retry-After value (delay-seconds or an HTTP date) as milliseconds from `nowMs`; null when unreadable. */
export function retryAfterMs(value: string, nowMs: number): number | null {
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) && /[a-z]/i.test(v) ? Math.max(0, at - nowMs) : null;
}

export interface DeliveryEngineOptions {
  store: RecordRepository;
  endpoints: WebhookEndpoints;
  cursors: CursorCodec;
  clock?: () => number;
  schedule?: number[];
  /** Requests in flight at once, over all endpoints (default 16). */
  concurrency?: number;
  /** Requests in flight at once for one tenant, over all its endpoints (default half of `concurrency`). */
  perTenantConcurrency?: number;
  /** Requests in flight at once to one endpoint (default half of `concurrency`). */
  perEndpointConcurrency?: number;
  /** Rows one endpoint's turn takes at most; then it goes to the back of the line (default 100). */
  perEndpointBatch?: number;
  /** Endpoints in their turn at once, at most (default 1000); a pass starts turns up to that. */
  maxEndpointsServing?: number;
  /** Told the status each attempt leaves its row in (the delivery metrics, api/metrics/webhook-metrics.ts). */
  onOutcome?: (outcome: DeliveryOutcome) => void;
  /** Uniform in [0, 1): the retry jitter (Math.random by default; tests fix it). */
  random?: () => number;
}

/** What an attempt did: delivered, failed (retried later), or dead-lettered (`dlq`: given up, or its endpoint is gone). */
export type DeliveryOutcome = Exclude<DeliveryStatus, 'pending'>;

/** A delivery row's records and the change to its endpoint's queue, written together by `commit`. */
interface Write { ops: Op[]; changes: QueueChange[] }

const DELIVERY_ID = /^whd_[0-9a-f]{26}$/;

/** The lock an endpoint's turn holds (delivery-queue.ts "turns"). */
const turnLock = (endpointId: string): string => `webhook-turn:${endpointId}`;

export class DeliveryEngine {
  private readonly clock: () => number;
  private readonly schedule: number[];
  private readonly random: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly inFlight = new Set<string>();
  private readonly queue: DeliveryQueue;
  private readonly slots: FairSlots;
  /** Endpoints in their turn here, with the turn's promise (the attempts made; not ran: another instance holds the turn). */
  private readonly serving = new Map<string, Promise<TryResult<number>>>();
  /** Endpoints whose turn another instance held when this one last tried. */
  private readonly elsewhere = new Set<string>();
  private migration: Promise<void> | undefined;
  private halting = false;
  private again = false;
  private intervalMs = 500;

  constructor(private readonly o: DeliveryEngineOptions) {
    this.clock = o.clock ?? Date.now;
    this.schedule = o.schedule ?? DEFAULT_SCHEDULE;
    this.random = o.random ?? Math.random;
    this.queue = o.endpoints.queue;
    this.slots = new FairSlots(o.concurrency ?? 16, o.perTenantConcurrency);
  }

  private queueKey(endpointId: string, atMs: number, id: string): string {
    return dueKey(endpointId, atMs, id);
  }

  private ops(d: DeliveryRecord, previousQueueKey: string | null): Write {
    const ops: Op[] = [WEBHOOK_DELIVERIES.putOp(d.id, d, { index: [`${d.workspace}\x00${d.id}`] })];
    const change: QueueChange = { endpoint: d.endpoint_id };
    if (previousQueueKey && previousQueueKey !== d.queue_key) change.del = [previousQueueKey];
    if (d.queue_key && d.queue_key !== previousQueueKey) change.add = [d.queue_key];
    return { ops, changes: change.add || change.del ? [change] : [] };
  }

  private commit(w: Write): Promise<void> {
    return this.queue.commit(w.ops, w.changes);
  }

  /**
   * Records an event and queues one delivery per endpoint of the workspace subscribed to it. `origin`:
   * the id and time the event already has where it happened (the vault API's outbox, api/customers/
   * event-relay.ts), kept so the customer dedupes on the same id whoever relays it.
   */
  async emit(scope: Scope, type: string, resource: { type: string; id: string }, actor: Envelope['actor'], data: Record<string, unknown>, extra: Op[] = [], extraQueue: QueueChange[] = [], origin?: { id: string; created_at: string }): Promise<{ event: Envelope; deliveries: DeliveryRecord[] }> {
    const [out] = await this.emitAll(scope, [{ type, resource, actor, data, ...(origin ? { origin } : {}) }], extra, extraQueue);
    return out!;
  }

  /** Several events of one change (e.g. an update and the verification decision it records), in one batch with `extra`. */
  async emitAll(scope: Scope, events: { type: string; resource: { type: string; id: string }; actor: Envelope['actor']; data: Record<string, unknown>; origin?: { id: string; created_at: string } }[], extra: Op[] = [], extraQueue: QueueChange[] = []): Promise<{ event: Envelope; deliveries: DeliveryRecord[] }[]> {
    const nowMs = this.clock();
    const now = new Date(nowMs).toISOString();
    const endpoints = await WEBHOOK_ENDPOINTS.in(this.o.store).byIndex(`${scope.workspace}\x00`, 100_000);
    const ops: Op[] = [...extra];
    const changes: QueueChange[] = [...extraQueue];
    const out: { event: Envelope; deliveries: DeliveryRecord[] }[] = [];
    for (const { type, resource, actor, data, origin } of events) {
      const et = eventType(type);
      if (!et) throw new CustodyError('unknown_event', `not a registered event: ${type}`);
      if (et.sensitive && !sensitiveDataAllowed(data, type)) throw new Error(`sensitive event ${type} may carry only identifiers, enumerated states and numbers, in the fields of its allow-list`);
      const event: Envelope = { id: origin?.id ?? newId('evt', nowMs), type, version: et.version, created_at: origin?.created_at ?? now, resource, actor, data };
      const deliveries: DeliveryRecord[] = [];
      ops.push(WEBHOOK_EVENTS.putOp(event.id, { ...event, tenant: scope.tenant, workspace: scope.workspace }));
      for (const e of endpoints.filter((x) => x.events.includes(type))) {
        const id = newId('whd', nowMs);
        const d: DeliveryRecord = {
          id, tenant: scope.tenant, workspace: scope.workspace, endpoint_id: e.id, event_id: event.id, event_type: type, status: 'pending', attempt_count: 0,
          last_status_code: null, last_response_body: null, last_error: null, next_retry_at: now, delivered_at: null, correlation_id: newId('cor', nowMs), payload: event,
          created_at: now, updated_at: now, queue_key: this.queueKey(e.id, nowMs, id),
        };
        deliveries.push(d);
        const w = this.ops(d, null);
        ops.push(...w.ops);
        changes.push(...w.changes);
      }
      out.push({ event, deliveries });
    }
    await this.queue.commit(ops, changes);
    this.kick();
    return out;
  }

  /**
   * One pass: every endpoint whose turn is due gets a turn (`serve`); waits for the turns and returns
   * how many attempts they made. The polling loop (`start`) does not wait: a turn to a slow endpoint
   * runs on while later passes serve the others.
   */
  async runDue(): Promise<number> {
    const turns = await this.dispatch();
    return (await Promise.all(turns)).reduce((a, b) => a + (b.ran ? b.value : 0), 0);
  }

  /** Starts a turn for each endpoint whose ready entry is due and that is not in a turn already. */
  private async dispatch(): Promise<Promise<TryResult<number>>[]> {
    await this.migrate();
    if (this.halting) return [];
    const max = this.o.maxEndpointsServing ?? 1000;
    const turns: Promise<TryResult<number>>[] = [];
    // Endpoints in a turn here or on another instance are read past, so they never fill the window.
    const ready = await this.queue.readyEndpoints(this.clock(), max + this.serving.size + this.elsewhere.size);
    const listed = new Set(ready);
    for (const e of this.elsewhere) if (!listed.has(e)) this.elsewhere.delete(e);
    // Trying again an endpoint held elsewhere last time is a probe of its lock, not a turn: not counted.
    let probes = 0;
    for (const endpointId of ready) {
      if (this.serving.has(endpointId)) continue;
      const probe = this.elsewhere.has(endpointId);
      if (probe) probes++;
      else if (this.serving.size >= max + probes) break;
      // One turn at a time per endpoint over every instance sharing the store: no delivery is sent by
      // two at once, and the per-endpoint limits hold across them. Held elsewhere: skipped this pass.
      const turn = this.o.store.tryExclusive(turnLock(endpointId), () => this.serve(endpointId)).then((r) => {
        if (r.ran) this.elsewhere.delete(endpointId);
        else this.elsewhere.add(endpointId);
        return r;
      }).finally(() => this.serving.delete(endpointId));
      this.serving.set(endpointId, turn);
      turns.push(turn);
    }
    return turns;
  }

  /**
   * One endpoint's turn: its due rows, oldest first, at most `perEndpointBatch` of them and each at most
   * once, over at most `perEndpointConcurrency` requests at a time, each waiting for one of the engine's
   * slots (FairSlots: round-robin over tenants, then endpoints). An index entry whose row is no longer
   * queued under it is dropped. The turn ends early when the endpoint is paused. At the end the
   * endpoint's ready entry moves behind every endpoint that became ready earlier.
   */
  private async serve(endpointId: string): Promise<number> {
    const concurrency = this.o.concurrency ?? 16;
    const perEndpoint = Math.max(1, this.o.perEndpointConcurrency ?? Math.floor(concurrency / 2));
    const budget = Math.max(1, this.o.perEndpointBatch ?? 100);
    const endpoint = await WEBHOOK_ENDPOINTS.in(this.o.store).get(endpointId);
    const tenant = endpoint?.tenant ?? '';
    const seen = new Set<string>();
    let buffer: { key: string; delivery_id: string }[] = [];
    let refilling: Promise<void> | undefined;
    let exhausted = false;
    let paused = endpoint !== undefined && !endpoint.enabled;
    let attempted = 0;
    const refill = () => (refilling ??= this.queue.due(endpointId, this.clock(), budget - seen.size, (id) => this.inFlight.has(id) || seen.has(id))
      .then((rows) => {
        buffer = rows;
        if (!rows.length) exhausted = true;
      })
      .finally(() => { refilling = undefined; }));
    const lane = async () => {
      while (!this.halting && !paused && seen.size < budget) {
        if (!buffer.length) {
          if (exhausted) return;
          await refill();
          continue;
        }
        const { key, delivery_id: id } = buffer.shift()!;
        if (this.inFlight.has(id) || seen.has(id)) continue;
        seen.add(id);
        await this.slots.acquire(tenant, endpointId);
        let sent: boolean;
        try {
          sent = await this.attempt(id);
        } finally {
          this.slots.release(tenant);
        }
        if (sent) {
          attempted++;
          continue;
        }
        // Not sent: the row is not queued under this entry any more, its endpoint was deleted (the row
        // was dead-lettered), or the endpoint was paused.
        const d = await WEBHOOK_DELIVERIES.in(this.o.store).get(id);
        if (!d || d.queue_key !== key) await this.queue.commit([], [{ endpoint: endpointId, del: [key] }]);
        const now = await WEBHOOK_ENDPOINTS.in(this.o.store).get(endpointId);
        if (now && !now.enabled) paused = true;
      }
    };
    await Promise.all(Array.from({ length: Math.min(perEndpoint, budget) }, lane));
    await this.queue.commit([], [{ endpoint: endpointId, turnAt: this.clock() }]);
    return attempted;
  }

  /**
   * Moves rows queued by an earlier version (one global queue, `delivery_queue`) into their endpoints'
   * queues, 200 at a time, each batch atomic. Runs once per engine, before its first pass; idempotent
   * (a migrated entry is deleted in the batch that queues its row), so a crash half-way is finished at
   * the next start.
   */
  migrate(): Promise<void> {
    return (this.migration ??= this.o.store.exclusive('webhook-queue-migration', async () => {
      for (;;) {
        const ops: Op[] = [];
        const changes: QueueChange[] = [];
        for await (const { id: key, value } of LEGACY_DELIVERY_QUEUE.in(this.o.store).entries({ limit: 200 })) {
          ops.push(queueEntryDel(key));
          const at = parseLegacyKey(key);
          const d = await WEBHOOK_DELIVERIES.in(this.o.store).get(value.delivery_id);
          if (!at || !d || d.queue_key !== key || (d.status !== 'pending' && d.status !== 'failed')) continue;
          const w = this.ops({ ...d, queue_key: this.queueKey(d.endpoint_id, at.atMs, d.id) }, null);
          ops.push(...w.ops);
          changes.push(...w.changes);
        }
        if (!ops.length) return;
        await this.queue.commit(ops, changes);
      }
    }).catch((err: unknown) => {
      this.migration = undefined;
      throw err;
    }));
  }

  private async attempt(id: string): Promise<boolean> {
    this.inFlight.add(id);
    try {
      const d = await WEBHOOK_DELIVERIES.in(this.o.store).get(id);
      if (!d || !d.queue_key || (d.status !== 'pending' && d.status !== 'failed')) return false;
      const endpoint = await WEBHOOK_ENDPOINTS.in(this.o.store).get(d.endpoint_id);
      if (!endpoint) {
        await this.commit(this.ops({ ...d, status: 'dlq', last_error: 'endpoint_deleted', next_retry_at: null, queue_key: null, updated_at: new Date(this.clock()).toISOString() }, d.queue_key));
        this.o.onOutcome?.('dlq');
        return false;
      }
      if (!endpoint.enabled) return false; // paused: stays queued until the endpoint is enabled again
      // A new SVC-Webhook-Delivery-Id per attempt; the same event id and correlation id on every one.
      const r = await this.o.endpoints.post(endpoint.url, this.o.endpoints.signedRequest(endpoint, d.payload, d.correlation_id));
      const nowMs = this.clock();
      const now = new Date(nowMs).toISOString();
      const attempts = d.attempt_count + 1;
      const base = { ...d, attempt_count: attempts, last_status_code: r.status_code, last_response_body: r.response_body, last_error: r.error, updated_at: now };
      if (r.delivered) {
        await this.commit(this.ops({ ...base, status: 'delivered', delivered_at: now, next_retry_at: null, queue_key: null }, d.queue_key));
        this.o.onOutcome?.('delivered');
        return true;
      }
      const permanent = r.status_code !== null && PERMANENT_4XX.has(r.status_code);
      if (r.status_code === 410) {
        // Gone: the receiver says the endpoint no longer exists. The row dead-letters and the endpoint is
        // disabled (webhook.endpoint.disabled, reason gone) so nothing more is sent until it is enabled.
        await this.gone(d, endpoint.id, this.ops({ ...base, status: 'dlq', next_retry_at: null, queue_key: null }, d.queue_key), attempts);
        this.o.onOutcome?.('dlq');
        return true;
      }
      if (permanent || attempts >= this.schedule.length) {
        const dead: DeliveryRecord = { ...base, status: 'dlq', next_retry_at: null, queue_key: null };
        const w = this.ops(dead, d.queue_key);
        if (d.event_type !== 'webhook.delivery.dead_lettered') {
          await this.emit({ tenant: d.tenant, workspace: d.workspace }, 'webhook.delivery.dead_lettered', { type: 'webhook_delivery', id: d.id }, { type: 'system', id: 'delivery-engine' },
            { delivery_id: d.id, endpoint_id: d.endpoint_id, event_id: d.event_id, attempt_count: attempts }, w.ops, w.changes);
        } else {
          await this.commit(w);
        }
        this.o.onOutcome?.('dlq');
        return true;
      }
      const at = nowMs + this.retryDelayMs(attempts, r.status_code, r.retry_after, nowMs);
      await this.commit(this.ops({ ...base, status: 'failed', next_retry_at: new Date(at).toISOString(), queue_key: this.queueKey(d.endpoint_id, at, d.id) }, d.queue_key));
      this.o.onOutcome?.('failed');
      return true;
    } finally {
      this.inFlight.delete(id);
    }
  }

  async get(scope: Scope, id: string): Promise<DeliveryRecord> {
    const d = DELIVERY_ID.test(id) ? await WEBHOOK_DELIVERIES.in(this.o.store).get(id) : undefined;
    if (!d || d.workspace !== scope.workspace) throw new CustodyError('not_found', `no webhook delivery ${id}`);
    return d;
  }

  async list(scope: Scope, filters: { status?: DeliveryStatus | undefined; endpoint_id?: string | undefined }, cursor: string | undefined, limit: number): Promise<PageResult<DeliveryRecord>> {
    const after = this.o.cursors.decode(cursor, 'webhook_deliveries', scope.workspace, filters);
    const out: DeliveryRecord[] = [];
    let from = after;
    for (;;) {
      const batch = await WEBHOOK_DELIVERIES.in(this.o.store).byIndexAfter(`${scope.workspace}\x00`, from, 200);
      for (const d of batch) {
        if ((!filters.status || d.status === filters.status) && (!filters.endpoint_id || d.endpoint_id === filters.endpoint_id)) out.push(d);
        if (out.length > limit) break;
      }
      if (out.length > limit || batch.length < 200) break;
      from = batch[batch.length - 1]!.id;
    }
    return pageOf(this.o.cursors, out, limit, 'webhook_deliveries', scope.workspace, filters);
  }

  /**
   * The wait before attempt `attempts + 1`: full jitter on the schedule (uniformly random between 0 and
   * the step), and, when the failed answer was a 429 or 503 with a Retry-After (seconds or an HTTP
   * date), at least that, bounded by the schedule's longest step.
   */
  private retryDelayMs(attempts: number, status: number | null, retryAfter: string | undefined, nowMs: number): number {
    const step = this.schedule[attempts]! * 1000;
    const jittered = Math.floor(this.random() * (step + 1));
    const asked = (status === 429 || status === 503) && retryAfter !== undefined ? retryAfterMs(retryAfter, nowMs) : null;
    if (asked === null) return jittered;
    return Math.max(jittered, Math.min(asked, Math.max(...this.schedule) * 1000));
  }

  /** A 410 Gone: the row dead-letters and, unless it was already, the endpoint is disabled; in one batch with their events. */
  private async gone(d: DeliveryRecord, endpointId: string, dead: Write, attempts: number): Promise<void> {
    const scope = { tenant: d.tenant, workspace: d.workspace };
    const system = { type: 'system' as const, id: 'delivery-engine' };
    await this.o.store.exclusive(`webhook-endpoint-gone:${endpointId}`, async () => {
      const endpoint = await WEBHOOK_ENDPOINTS.in(this.o.store).get(endpointId);
      const events: Parameters<DeliveryEngine['emitAll']>[1] = [];
      const ops = [...dead.ops];
      const changes = [...dead.changes];
      if (d.event_type !== 'webhook.delivery.dead_lettered') {
        events.push({ type: 'webhook.delivery.dead_lettered', resource: { type: 'webhook_delivery', id: d.id }, actor: system, data: { delivery_id: d.id, endpoint_id: d.endpoint_id, event_id: d.event_id, attempt_count: attempts } });
      }
      if (endpoint?.enabled) {
        const w = this.o.endpoints.goneWrites(endpoint);
        ops.push(...w.ops);
        changes.push(w.change);
        events.push({ type: 'webhook.endpoint.disabled', resource: { type: 'webhook_endpoint', id: endpointId }, actor: system, data: { endpoint_id: endpointId, enabled: false, reason: 'gone' } });
      }
      if (events.length) await this.emitAll(scope, events, ops, changes);
      else await this.commit({ ops, changes });
    });
  }

  /** Replay: the row goes back to pending with a fresh budget (attempt_count 0, the schedule from its start). */
  private requeue(d: DeliveryRecord): Write {
    const nowMs = this.clock();
    return this.ops({ ...d, status: 'pending', attempt_count: 0, next_retry_at: new Date(nowMs).toISOString(), queue_key: this.queueKey(d.endpoint_id, nowMs, d.id), updated_at: new Date(nowMs).toISOString() }, d.queue_key);
  }

  async replay(scope: Scope, id: string): Promise<DeliveryRecord> {
    const d = await this.get(scope, id);
    if (d.status !== 'failed' && d.status !== 'dlq') throw new CustodyError('invalid_state', `delivery ${id} is ${d.status}; only failed or dlq deliveries can be replayed`);
    const w = this.requeue(d);
    await this.commit(w);
    this.kick();
    return (w.ops[0] as { value: DeliveryRecord }).value;
  }

  async bulkReplay(scope: Scope, ids: string[]): Promise<{ data: DeliveryRecord[]; replayed_count: number; skipped_count: number }> {
    const bad = ids.find((i) => !DELIVERY_ID.test(i));
    if (bad !== undefined) throw new CustodyError('validation_failed', `malformed delivery id: ${bad.slice(0, 40)}`);
    const seen = new Set<string>();
    const ops: Op[] = [];
    const changes: QueueChange[] = [];
    const data: DeliveryRecord[] = [];
    for (const id of ids) {
      if (seen.has(id)) continue;
      seen.add(id);
      const d = await WEBHOOK_DELIVERIES.in(this.o.store).get(id);
      if (!d || d.workspace !== scope.workspace || (d.status !== 'failed' && d.status !== 'dlq')) continue;
      const r = this.requeue(d);
      ops.push(...r.ops);
      changes.push(...r.changes);
      data.push((r.ops[0] as { value: DeliveryRecord }).value);
    }
    await this.queue.commit(ops, changes);
    this.kick();
    return { data, replayed_count: data.length, skipped_count: ids.length - data.length };
  }

  /**
   * Retention (30 days, by the engine's clock): deletes delivery rows last changed (`updated_at`) before
   * the cutoff, whatever their status, with their queue entry (a row still queued that long belongs to
   * an endpoint paused for 30 days), and event records created before it. Rows in flight wait for the
   * next pass. Deletes in batches of at most 500 operations; returns the delivery rows deleted.
   */
  async prune(): Promise<number> {
    // One instance at a time; another pruning now does this pass's work.
    const r = await this.o.store.tryExclusive('webhook-prune', () => this.pruneNow());
    return r.ran ? r.value : 0;
  }

  private async pruneNow(): Promise<number> {
    const cutoff = this.clock() - RETENTION_MS;
    let ops: Op[] = [];
    let pruned = 0;
    const flush = async () => {
      if (ops.length) await this.o.store.batch(ops);
      ops = [];
    };
    for await (const d of WEBHOOK_DELIVERIES.in(this.o.store).all()) {
      if (!(Date.parse(d.updated_at) < cutoff) || this.inFlight.has(d.id)) continue;
      ops.push(WEBHOOK_DELIVERIES.delOp(d.id, [`${d.workspace}\x00${d.id}`]));
      if (d.queue_key) ops.push(queueEntryDel(d.queue_key));
      pruned++;
      if (ops.length >= 500) await flush();
    }
    for await (const e of WEBHOOK_EVENTS.in(this.o.store).all()) {
      if (Date.parse(e.created_at) < cutoff) ops.push(WEBHOOK_EVENTS.delOp(e.id));
      if (ops.length >= 500) await flush();
    }
    await flush();
    return pruned;
  }

  /** Runs `prune` now and then every `intervalMs` (default hourly) until the returned function is called. */
  startPruning(intervalMs = 3_600_000): () => void {
    let running = false;
    const tick = () => {
      if (running) return;
      running = true;
      this.prune().catch(() => 0).finally(() => { running = false; });
    };
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    tick();
    return () => clearInterval(timer);
  }

  /** Polls for due deliveries every `intervalMs` until stopped. */
  start(intervalMs = 500): void {
    this.stopped = false;
    this.halting = false;
    this.intervalMs = intervalMs;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(this.loop, 0);
  }

  /** One pass; its turns run on in the background, and each one's end starts another pass. */
  private readonly loop = (): void => {
    this.timer = undefined;
    if (this.stopped) return;
    this.again = false;
    this.running = this.dispatch().then((turns) => {
      // A turn that ended may have left rows due now; one another instance holds is left to the next pass.
      for (const turn of turns) turn.then((r) => { if (r.ran) this.kick(); }, () => this.kick());
    }, () => undefined).finally(() => {
      this.running = undefined;
      if (!this.stopped) this.timer = setTimeout(this.loop, this.again ? 0 : this.intervalMs);
    });
  };

  /** New work: pass now rather than at the next interval. */
  private kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.loop, 0);
  }

  /** Stops polling; turns in progress finish the requests in flight and start no more. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.halting = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    await Promise.allSettled([...this.serving.values()]);
    this.halting = false;
  }
}
