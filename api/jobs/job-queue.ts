// The durable job queue of issue #18 item 2 (docs/api-storage.md "Jobs"): jobs with leases, so several API
// instances share key generation, reshare, transaction progress and webhook delivery, no job runs under
// two live leases at once, and a crashed instance's jobs are claimed again once its leases lapse. Two
// implementations: PostgreSQL (postgres-job-queue.ts, several instances) and the embedded LevelDB store
// (record-job-queue.ts, one process). One contract suite (test/jobs/job-queue-contract.ts) runs on both.

/** queued: waits for `runAt`; leased: a worker holds it until `leasedUntil`; done and dead are final. */
export type JobState = 'queued' | 'leased' | 'done' | 'dead';

export interface Job<P = unknown> {
  /** Assigned by the queue; ids of one ordering key grow in enqueue order. */
  id: string;
  /** Which handler runs it: 'vault_keygen', 'vault_reshare', 'transaction_progress', 'webhook_delivery'. */
  kind: string;
  /** What it works on (a vault, a transaction, a delivery id): for logs and look-ups, not interpreted. */
  key: string;
  payload: P;
  state: JobState;
  /** Epoch milliseconds before which it is not claimed (its retry time after a failure). */
  runAt: number;
  /** Claims so far, the current one included. */
  attempts: number;
  dedupeKey?: string;
  orderingKey?: string;
  groupKey?: string;
  leaseOwner?: string;
  leasedUntil?: number;
  lastError?: string;
}

/** A job as `claim` returns it: with the token that `complete`, `fail`, `extend` and `release` require. */
export interface LeasedJob<P = unknown> extends Job<P> {
  state: 'leased';
  leaseToken: string;
  leasedUntil: number;
  leaseOwner: string;
}

export interface EnqueueOptions {
  /** Not claimed before (epoch ms); now when absent. */
  runAt?: number;
  /** Per kind: a second enqueue with the same key returns the first job (in any state) and creates none. */
  dedupeKey?: string;
  /**
   * Jobs sharing it run one at a time in enqueue order (a wallet: nonces, UTXOs): a job is not claimable
   * while an earlier job of its key is queued or leased. Done and dead jobs no longer hold the key back.
   */
  orderingKey?: string;
  /**
   * Jobs sharing it (an organization's) count together against a claim's `perGroup` limit: no more of
   * them hold live leases at once than that, over every claimer of every instance.
   */
  groupKey?: string;
}

export interface ClaimOptions {
  /** At most this many live leases per group key, those already held included (no limit when absent). */
  perGroup?: number;
}

export interface EnqueueResult<P = unknown> {
  job: Job<P>;
  /** False when the dedupe key named an existing job, which `job` then is. */
  created: boolean;
}

export interface KindStats {
  kind: string;
  /** Queued and leased jobs (due or not, blocked by ordering or not). */
  depth: number;
  /** Of those, under a live lease. */
  leased: number;
  /** How long the oldest due job waited past its due time (its `runAt`, or a lapsed lease's end); 0 if none. */
  lagMs: number;
}

/**
 * Lease tokens: each claim issues a new one. A token stays valid until its job is claimed again (after
 * the lease lapsed) or leaves the leased state; then `complete`, `fail`, `extend` and `release` refuse it
 * with a `LeaseLostError`, so a worker that stalled past its lease cannot finish or overwrite the job
 * that another worker now holds.
 */
export interface JobQueue {
  enqueue<P>(kind: string, key: string, payload: P, opts?: EnqueueOptions): Promise<EnqueueResult<P>>;
  /**
   * Leases up to `limit` due jobs of `kinds` to `workerId` for `leaseMs`: queued jobs whose `runAt` has
   * come and leased jobs whose lease lapsed, oldest due first, the earliest unfinished job of an ordering
   * key only, and none of a group key that already holds `perGroup` live leases (of any kind). Of
   * concurrent claims, each job goes to one; a job never has two live leases.
   */
  claim(workerId: string, kinds: readonly string[], limit: number, leaseMs: number, opts?: ClaimOptions): Promise<LeasedJob[]>;
  /** Marks the job done. */
  complete(job: Pick<Job, 'id'>, leaseToken: string): Promise<void>;
  /** Queues the job again for `retryAt` (epoch ms), or makes it dead when `retryAt` is null; keeps `error`. */
  fail(job: Pick<Job, 'id'>, leaseToken: string, retryAt: number | null, error: string): Promise<void>;
  /** Moves the lease's end to `leaseMs` from now; returns the new end. */
  extend(job: Pick<Job, 'id'>, leaseToken: string, leaseMs: number): Promise<number>;
  /**
   * Gives the job back unrun, the claim not counted as an attempt: queued again, due at `runAt`, or now
   * when absent (a worker stopping). A handler that waits on something outside (a confirmation) defers
   * its job this way rather than holding a lease while it waits.
   */
  release(job: Pick<Job, 'id'>, leaseToken: string, runAt?: number): Promise<void>;
  get<P = unknown>(id: string): Promise<Job<P> | undefined>;
  /**
   * Deletes up to `limit` done and dead jobs that finished before `before` (epoch ms), oldest first, and
   * frees their dedupe keys; how many it deleted. Queued and leased jobs are never touched.
   */
  prune(before: number, limit: number): Promise<number>;
  /** Depth and lag of every kind with queued or leased jobs (api/metrics/queue-metrics.ts). */
  stats(): Promise<KindStats[]>;
}
