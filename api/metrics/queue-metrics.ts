// Depth and lag of the API's durable work queues (docs/operations.md "Metrics and health"), read from
// the store when Prometheus scrapes rather than counted as work moves: the store is the truth, and a
// restart or another writer cannot make a counter drift from it. Lag is how long the oldest work that is
// due has waited past its due time: 0 while the workers keep up.
import { Gauge, type Registry } from 'prom-client';
import type { RecordRepository } from '../store/record-repository.ts';
import type { JobRecord } from '../vaults/records.ts';
import type { TransactionJob } from '../transactions/records.ts';
import { DUE, READY } from '../webhooks/delivery-queue.ts';

/** The queues by label: vault key generations and reshares, transactions, webhook deliveries, and the vault API's event outbox. */
export type QueueName = 'vault_jobs' | 'transaction_jobs' | 'webhook_deliveries' | 'event_outbox';

interface QueueStats { queue: QueueName; depth: number; lagSeconds: number }

export function registerQueueMetrics(registry: Registry, store: RecordRepository, clock: () => number = Date.now): void {
  // One scan per scrape: the depth gauge starts it, the lag gauge (collected next) takes it over.
  let started: { at: number; stats: Promise<QueueStats[] | undefined> } | undefined;
  const scan = () => scanQueues(store, clock()).catch(() => undefined);
  const startScan = () => (started = { at: performance.now(), stats: scan() }).stats;
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
  const jobs = async (queue: QueueName, collection: string): Promise<QueueStats> => {
    let depth = 0;
    let oldest: number | undefined;
    for await (const j of store.all<Pick<JobRecord | TransactionJob, 'next_at'>>(collection)) {
      depth++;
      if (j.next_at <= now && (oldest === undefined || j.next_at < oldest)) oldest = j.next_at;
    }
    return { queue, depth, lagSeconds: lag(oldest) };
  };
  // The ready index is ordered by the time each endpoint's turn is due (delivery-queue.ts): its first entry is the oldest.
  let readyAt: number | undefined;
  for await (const { id } of store.entries(READY, { limit: 1 })) readyAt = Number(id.slice(0, 16));
  // The outbox is read oldest first (api/customers/event-relay.ts), and its rows are due when written.
  let outboxAt: number | undefined;
  for await (const { value } of store.entries<{ created_at: string }>('outbox', { limit: 1 })) outboxAt = Date.parse(value.created_at);
  return [
    await jobs('vault_jobs', 'jobs'),
    await jobs('transaction_jobs', 'tx_jobs'),
    { queue: 'webhook_deliveries', depth: await store.count(DUE), lagSeconds: lag(readyAt !== undefined && readyAt <= now ? readyAt : undefined) },
    { queue: 'event_outbox', depth: await store.count('outbox'), lagSeconds: lag(Number.isNaN(outboxAt) ? undefined : outboxAt) },
  ];
}
