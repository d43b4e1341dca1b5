// Depth and lag of the API's durable work queues (docs/operations.md "Metrics and health"), read from
// the store when Prometheus scrapes rather than counted as work moves: the store is the truth, and a
// restart or another writer cannot make a counter drift from it. Lag is how long the oldest work that is
// due has waited past its due time: 0 while the workers keep up. Key jobs and transactions are read from
// the durable job queue's own statistics (api/jobs), webhook deliveries and the outbox from their records.
import { Gauge, type Registry } from 'prom-client';
import type { RecordRepository } from '../store/record-repository.ts';
import { jobQueueFor } from '../jobs/queue-for-store.ts';
import { VAULT_KEY_JOB } from '../vaults/vault-service.ts';
import { TRANSACTION_PROGRESS } from '../transactions/transaction-service.ts';
import { OUTBOX } from '../vaults/collections.ts';
import { DELIVERY_DUE, DELIVERY_READY } from '../webhooks/collections.ts';

/** The queues by label: vault key generations and reshares, transactions, webhook deliveries, and the vault API's event outbox. */
export type QueueName = 'vault_jobs' | 'transaction_jobs' | 'webhook_deliveries' | 'event_outbox';

interface QueueStats { queue: QueueName; depth: number; lagSeconds: number; leased?: number }

/** The queues that run on the durable job queue (api/jobs), by their kind there. */
const KINDS: [QueueName, string][] = [['vault_jobs', VAULT_KEY_JOB], ['transaction_jobs', TRANSACTION_PROGRESS]];

export function registerQueueMetrics(registry: Registry, store: RecordRepository, clock: () => number = Date.now): void {
  // One scan per scrape: the depth gauge starts it, the lag gauge (collected next) takes it over.
  let started: { at: number; stats: Promise<QueueStats[] | undefined> } | undefined;
  const scan = () => scanQueues(store, clock()).catch(() => undefined);
  const startScan = () => (started = { at: performance.now(), stats: scan() }).stats;
  const peekScan = () => (started && performance.now() - started.at < 1000 ? started.stats : scan());
  const takeScan = () => {
    const s = started && performance.now() - started.at < 1000 ? started.stats : scan();
    started = undefined;
    return s;
  };
  new Gauge({
    name: 'job_queue_depth', help: 'Work queued in the store, by queue (webhook deliveries: including those of paused endpoints)', labelNames: ['queue'], registers: [registry],
    async collect() {
      const stats = await startScan();
      // An unreadable store drops the series rather than failing the scrape (readiness reports the store).
      this.reset();
      for (const q of stats ?? []) this.set({ queue: q.queue }, q.depth);
    },
  });
  new Gauge({
    name: 'job_queue_leased', help: 'Jobs of a queue under a live lease: running on some API instance now', labelNames: ['queue'], registers: [registry],
    async collect() {
      const stats = await peekScan();
      this.reset();
      for (const q of stats ?? []) if (q.leased !== undefined) this.set({ queue: q.queue }, q.leased);
    },
  });
  new Gauge({
    name: 'job_queue_lag_seconds', help: 'How long the oldest due work of a queue has waited past its due time, by queue', labelNames: ['queue'], registers: [registry],
    async collect() {
      const stats = await takeScan();
      this.reset();
      for (const q of stats ?? []) this.set({ queue: q.queue }, q.lagSeconds);
    },
  });
}

async function scanQueues(store: RecordRepository, now: number): Promise<QueueStats[]> {
  const lag = (dueMs: number | undefined) => (dueMs === undefined ? 0 : Math.max(0, now - dueMs) / 1000);
  // Depth, leases and lag of the job queue's kinds, as the queue computes them (on PostgreSQL, by its clock).
  const byKind = new Map((await jobQueueFor(store).stats()).map((k) => [k.kind, k]));
  const jobs = KINDS.map(([queue, kind]): QueueStats => {
    const k = byKind.get(kind);
    return { queue, depth: k?.depth ?? 0, leased: k?.leased ?? 0, lagSeconds: (k?.lagMs ?? 0) / 1000 };
  });
  // The ready index is ordered by the time each endpoint's turn is due (delivery-queue.ts): its first entry is the oldest.
  let readyAt: number | undefined;
  for await (const { id } of DELIVERY_READY.in(store).entries({ limit: 1 })) readyAt = Number(id.slice(0, 16));
  // The outbox is read oldest first (api/customers/event-relay.ts), and its rows are due when written.
  let outboxAt: number | undefined;
  for await (const { value } of OUTBOX.in(store).entries({ limit: 1 })) outboxAt = Date.parse(value.created_at);
  return [
    ...jobs,
    { queue: 'webhook_deliveries', depth: await DELIVERY_DUE.in(store).count(), lagSeconds: lag(readyAt !== undefined && readyAt <= now ? readyAt : undefined) },
    { queue: 'event_outbox', depth: await OUTBOX.in(store).count(), lagSeconds: lag(Number.isNaN(outboxAt) ? undefined : outboxAt) },
  ];
}
