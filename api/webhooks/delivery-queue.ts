// The webhook delivery queue (docs/platform/webhooks.md "Delivery queue"; docs/security.md "Webhook
// delivery: fairness and retention"). One queue per endpoint instead of one global queue, so one
// endpoint's backlog is never in front of another endpoint's work:
//
//   delivery_due     `<endpoint>/<due ms>/<delivery id>`  -> { delivery_id }   every queued row
//   delivery_ready   `<turn ms>/<endpoint>`               -> { endpoint_id }   endpoints with queued rows
//   delivery_queues  `<endpoint>`                         -> { head, ready, turn } its queue's state
//
// An endpoint has at most one ready entry, and only while it is active (enabled, or deleted: a deleted
// endpoint's rows are dead-lettered by the worker) and has queued rows. The entry sorts at
// max(due time of the endpoint's oldest row, the time its last turn ended): a worker pass reads the
// ready entries that are due, in that order, and gives each endpoint one turn of a bounded number of
// rows; at the end of the turn the endpoint goes to the back of the line. A paused endpoint has no
// ready entry, so its rows are never read until it is enabled again.
//
// Every change to an endpoint's queue goes through `commit`, which works out the queue's head from its
// state record and the keys added and writes the due entries, the ready entry, the state and the
// caller's records in one atomic batch. No two changes to one queue race: in a process, commits are
// worked out one at a time by a single writer; across the API instances sharing a store, that writer
// holds the queue locks of the endpoints it changes (`RecordRepository.exclusive`, one of
// QUEUE_LOCK_STRIPES per endpoint) from reading their state to writing the batch, and reads the state
// afresh under them, since another instance may have changed it since. The recorded head may be older
// than the real one (rows removed by a delivery, or by retention outside `commit`): that only makes
// the ready entry early, which costs at most one empty turn, and the end of every turn reads the head
// from the index and sets the entry right. It is never later than the real head, so no row waits
// behind it.
import { createHash } from 'node:crypto';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { DELIVERY_DUE, DELIVERY_QUEUES, DELIVERY_READY, LEGACY_DELIVERY_QUEUE, WEBHOOK_ENDPOINTS } from './collections.ts';

// The queue's collection names, for the tests that read its rows directly.
export const DUE = DELIVERY_DUE.name;
export const READY = DELIVERY_READY.name;
export const QUEUES = DELIVERY_QUEUES.name;
export const LEGACY_QUEUE = LEGACY_DELIVERY_QUEUE.name;

/**
 * Endpoints share this many queue locks, so a commit to a workspace with thousands of endpoints holds a
 * bounded number of database locks; two endpoints on one stripe only wait for each other's commits.
 */
export const QUEUE_LOCK_STRIPES = 64;

/** The queue lock an endpoint's changes are made under. */
export function queueLock(endpointId: string): string {
  return `webhook-queue:${createHash('sha256').update(endpointId).digest().readUInt32BE(0) % QUEUE_LOCK_STRIPES}`;
}

/** Runs `fn` holding every lock in `names`, taken in sorted order so two holders of overlapping sets never wait on each other in a cycle. */
async function holding<T>(store: RecordRepository, names: string[], fn: () => Promise<T>): Promise<T> {
  const [first, ...rest] = names;
  return first === undefined ? fn() : store.exclusive(first, () => holding(store, rest, fn));
}

const t16 = (ms: number): string => String(Math.max(0, Math.floor(ms))).padStart(16, '0');

export function dueKey(endpointId: string, atMs: number, deliveryId: string): string {
  return `${endpointId}/${t16(atMs)}/${deliveryId}`;
}

export function parseDueKey(key: string): { endpointId: string; atMs: number; deliveryId: string } | undefined {
  const m = /^([^/]+)\/(\d{16})\/([^/]+)$/.exec(key);
  return m ? { endpointId: m[1]!, atMs: Number(m[2]), deliveryId: m[3]! } : undefined;
}

/** Due time of a key of the global queue of earlier versions. */
export function parseLegacyKey(key: string): { atMs: number; deliveryId: string } | undefined {
  const m = /^(\d{16})_(.+)$/.exec(key);
  return m ? { atMs: Number(m[1]), deliveryId: m[2]! } : undefined;
}

/** Deletes a row's queue entry, whichever queue (current or legacy) its key is in. */
export function queueEntryDel(key: string): Op {
  return (parseDueKey(key) ? DELIVERY_DUE : LEGACY_DELIVERY_QUEUE).delOp(key);
}

/** A change to one endpoint's queue: due keys added and removed, and optionally its state. */
export interface QueueChange {
  endpoint: string;
  add?: string[];
  del?: string[];
  /** Whether the endpoint is served; read from its record (enabled, or deleted) when absent. */
  active?: boolean;
  /** Its turn ended at this time: it goes behind every endpoint that became ready earlier. */
  turnAt?: number;
}

/** Exists while the endpoint has queued rows. `head` is the oldest row's key; `turn` when its last turn ended. */
export interface QueueState { head: string; ready: string | null; turn: number }
interface Merged { add: Set<string>; del: Set<string>; active?: boolean; turnAt?: number }

interface Pending { ops: Op[]; by: Map<string, Merged>; resolve: () => void; reject: (err: unknown) => void }

export class DeliveryQueue {
  /**
   * What the store holds for an endpoint, as of the commits of the group being written computed so
   * far: its queue state (null: none) and whether it is active. Valid while the group's queue locks are
   * held, so cleared at the start of each group; a batch that fails drops the entries it touched, so the
   * next commit reads them from the store again.
   */
  private readonly states = new Map<string, QueueState | null>();
  private readonly actives = new Map<string, boolean>();
  private pending: Pending[] = [];
  private writing = false;

  constructor(private readonly store: RecordRepository) {}

  /**
   * Writes `ops` and the queue changes in one atomic batch. Commits are applied one at a time, in call
   * order, by a single writer (group commit): the commits waiting while a batch is written are worked
   * out in turn, each on the state the previous ones left, and written together in the next batch. No
   * queue change is ever computed on a state another one is changing, in this process or another
   * sharing the store: the group is worked out and written holding its endpoints' queue locks.
   */
  commit(ops: Op[], changes: QueueChange[]): Promise<void> {
    const by = new Map<string, Merged>();
    for (const c of changes) {
      const m = by.get(c.endpoint) ?? { add: new Set<string>(), del: new Set<string>() };
      for (const k of c.del ?? []) { m.add.delete(k); m.del.add(k); }
      for (const k of c.add ?? []) { m.del.delete(k); m.add.add(k); }
      if (c.active !== undefined) m.active = c.active;
      if (c.turnAt !== undefined) m.turnAt = c.turnAt;
      by.set(c.endpoint, m);
    }
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, by, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    let batch: Op[] = [];
    let members: Pending[] = [];
    const touched = new Set<string>();
    const flush = async () => {
      const [ops, done] = [batch, members];
      batch = [];
      members = [];
      try {
        if (ops.length) await this.store.batch(ops);
        for (const m of done) m.resolve();
      } catch (err) {
        for (const e of touched) {
          this.states.delete(e);
          this.actives.delete(e);
        }
        for (const m of done) m.reject(err);
      }
      touched.clear();
    };
    try {
      while (this.pending.length) {
        const group = this.pending.splice(0);
        const locks = [...new Set(group.flatMap((p) => [...p.by.keys()].map(queueLock)))].sort();
        await holding(this.store, locks, async () => {
          // Another instance may have changed these queues since this process last read them.
          this.states.clear();
          this.actives.clear();
          for (const p of group) {
            // The end of a turn reads the endpoint's queue from the store: write what is pending for it first.
            if ([...p.by].some(([e, c]) => c.turnAt !== undefined && touched.has(e))) await flush();
            try {
              batch.push(...await this.commitOps(p, touched));
              members.push(p);
            } catch (err) {
              p.reject(err);
            }
          }
          await flush();
        }).catch((err: unknown) => {
          // The locks were not to be had (the lock session failed): what was not written is refused.
          // (Settling an already settled commit again changes nothing.)
          for (const p of group) p.reject(err);
        });
      }
    } finally {
      this.writing = false;
    }
  }

  /** One commit's operations, worked out on the state the commits before it left. */
  private async commitOps(p: Pending, touched: Set<string>): Promise<Op[]> {
    const ops = [...p.ops];
    const after: [string, QueueState | null, boolean | undefined][] = [];
    for (const [e, c] of p.by) {
      const r = await this.endpointOps(e, c);
      ops.push(...r.ops);
      after.push([e, r.state, r.active]);
    }
    for (const [e, state, active] of after) {
      touched.add(e);
      this.states.set(e, state);
      if (active === undefined) this.actives.delete(e);
      else this.actives.set(e, active);
    }
    return ops;
  }

  private async endpointOps(endpoint: string, c: Merged): Promise<{ ops: Op[]; state: QueueState | null; active: boolean | undefined }> {
    const out: Op[] = [];
    const cached = this.states.get(endpoint);
    const before = cached === null ? undefined : cached ?? (await DELIVERY_QUEUES.in(this.store).get(endpoint));
    // Removing rows leaves `head` as it was: possibly older than the oldest row left, which only makes
    // the ready entry early. The index is read at the end of a turn, which sets the head right.
    let head: string | undefined = before?.head;
    for (const k of c.del) out.push(queueEntryDel(k));
    if (c.turnAt !== undefined) {
      head = undefined;
      for await (const { id } of DELIVERY_DUE.in(this.store).entries({ after: `${endpoint}/`, lt: `${endpoint}/\xff`, limit: c.del.size + 1 })) {
        if (c.del.has(id)) continue;
        head = id;
        break;
      }
    }
    for (const k of c.add) {
      const p = parseDueKey(k);
      if (!p || p.endpointId !== endpoint) throw new Error(`queue key ${k} is not in the queue of ${endpoint}`);
      out.push(DELIVERY_DUE.putOp(k, { delivery_id: p.deliveryId }));
      if (head === undefined || k < head) head = k;
    }
    let active = c.active ?? this.actives.get(endpoint);
    if (active === undefined && head !== undefined) {
      const e = await WEBHOOK_ENDPOINTS.in(this.store).get(endpoint);
      active = !e || e.enabled;
    }
    const turn = c.turnAt ?? before?.turn ?? 0;
    const ready = active && head !== undefined ? `${t16(Math.max(parseDueKey(head)!.atMs, turn))}/${endpoint}` : null;
    const was = before?.ready ?? null;
    if (ready !== was) {
      if (was) out.push(DELIVERY_READY.delOp(was));
      if (ready) out.push(DELIVERY_READY.putOp(ready, { endpoint_id: endpoint }));
    }
    const state: QueueState | null = head === undefined ? null : { head, ready, turn };
    if (!state) {
      if (before) out.push(DELIVERY_QUEUES.delOp(endpoint));
    } else if (!before || before.head !== head || was !== ready || before.turn !== turn) {
      out.push(DELIVERY_QUEUES.putOp(endpoint, state));
    }
    return { ops: out, state, active };
  }

  /** Endpoints whose turn is due at `nowMs`, oldest turn first; at most `limit`. */
  async readyEndpoints(nowMs: number, limit: number): Promise<string[]> {
    const out: string[] = [];
    for await (const { value } of DELIVERY_READY.in(this.store).entries({ lt: t16(nowMs + 1), limit })) out.push(value.endpoint_id);
    return out;
  }

  /** Up to `limit` rows of one endpoint due at `nowMs`, oldest first, leaving out those `skip` names. */
  async due(endpoint: string, nowMs: number, limit: number, skip: (deliveryId: string) => boolean): Promise<{ key: string; delivery_id: string }[]> {
    const out: { key: string; delivery_id: string }[] = [];
    if (limit <= 0) return out;
    for await (const { id, value } of DELIVERY_DUE.in(this.store).entries({ after: `${endpoint}/`, lt: `${endpoint}/${t16(nowMs + 1)}` })) {
      if (skip(value.delivery_id)) continue;
      out.push({ key: id, delivery_id: value.delivery_id });
      if (out.length >= limit) break;
    }
    return out;
  }
}

/**
 * The engine's request slots, handed out round-robin: first over tenants with a request waiting, then
 * over that tenant's endpoints. A tenant with a thousand busy endpoints gets one slot in turn, like a
 * tenant with one; and no tenant holds more than `perTenant` slots at once (default half of them), so
 * a tenant whose endpoints answer slowly can never take every slot while another tenant waits.
 */
export class FairSlots {
  private free: number;
  private readonly perTenant: number;
  private readonly waiting = new Map<string, Map<string, (() => void)[]>>();
  private readonly held = new Map<string, number>();

  constructor(slots: number, perTenant?: number) {
    this.free = Math.max(1, slots);
    this.perTenant = Math.max(1, perTenant ?? Math.ceil(this.free / 2));
  }

  /** Slots `tenant` holds now. */
  holding(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  acquire(tenant: string, endpoint: string): Promise<void> {
    if (this.free > 0 && this.waiting.size === 0 && this.holding(tenant) < this.perTenant) {
      this.take(tenant);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const eps = this.waiting.get(tenant) ?? new Map<string, (() => void)[]>();
      const queue = eps.get(endpoint) ?? [];
      queue.push(resolve);
      eps.set(endpoint, queue);
      this.waiting.set(tenant, eps);
      this.grant();
    });
  }

  release(tenant: string): void {
    this.free++;
    const n = this.holding(tenant) - 1;
    if (n > 0) this.held.set(tenant, n);
    else this.held.delete(tenant);
    this.grant();
  }

  private take(tenant: string): void {
    this.free--;
    this.held.set(tenant, this.holding(tenant) + 1);
  }

  private grant(): void {
    while (this.free > 0) {
      // The first waiting tenant in turn that is under its cap.
      const next = [...this.waiting].find(([tenant]) => this.holding(tenant) < this.perTenant);
      if (!next) return;
      const [tenant, eps] = next;
      const [endpoint, queue] = eps.entries().next().value!;
      const resolve = queue.shift()!;
      // Served ones go to the back, at both levels.
      eps.delete(endpoint);
      if (queue.length) eps.set(endpoint, queue);
      this.waiting.delete(tenant);
      if (eps.size) this.waiting.set(tenant, eps);
      this.take(tenant);
      resolve();
    }
  }
}
