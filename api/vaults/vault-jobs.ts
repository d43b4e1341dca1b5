// Runs queued vault key generations and reshares against the coordinator of the vault's shard
// (api/coordinator/coordinator-shards.ts). Each key job record (`jobs`) has a
// job on the durable queue (api/jobs, kind `vault_key`, ordered per vault), leased by one API instance at a
// time, so a restart or another instance resumes it; a job that already generated its key (the coordinator
// says it exists) just finishes.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { Logger } from '../../common/logger.ts';
import type { CoordinatorClient } from '../coordinator/coordinator-client.ts';
import { CoordinatorShards } from '../coordinator/coordinator-shards.ts';
import type { VaultInfo } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { WIRE_TIERS } from '../../core/tier-wire.ts';
import type { CommitteeMemberView, JobRecord, VaultRecord } from './records.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { VAULT_KEY_JOB, vaultKeyJob, type VaultService } from './vault-service.ts';
import type { JobQueue, LeasedJob } from '../jobs/job-queue.ts';
import { JobRunner } from '../jobs/job-runner.ts';
import { jobQueueFor, workerId } from '../jobs/queue-for-store.ts';
import { JOBS, VAULTS } from './collections.ts';

export class VaultJobs {
  /** The committee as the vault response names it: each member's kind from the organization's enrolments. */
  private async committeeView(org: string, info: VaultInfo): Promise<CommitteeMemberView[]> {
    const enrolled = new Map((await this.vaults.nodes.list(org)).map((n) => [n.id, n.kind]));
    return info.committee.map((m) => ({ node_id: m.nodeId, kind: enrolled.get(m.nodeId) ?? 'service' }));
  }

  private readonly runner: JobRunner;
  private readonly coordinators: CoordinatorShards | undefined;

  /** `maxAttempts`: key generation attempts before the vault fails (MAX_CREATE_ATTEMPTS; fewer in tests). One client stands for a single shard. */
  constructor(
    private readonly vaults: VaultService, coordinator: CoordinatorShards | CoordinatorClient | undefined, private readonly log: Logger, pollMs = 1000,
    private readonly maxAttempts = MAX_CREATE_ATTEMPTS, opts: { queue?: JobQueue; workerId?: string; perOrganization?: number; leaseMs?: number } = {},
  ) {
    this.coordinators = CoordinatorShards.of(coordinator);
    // A reshare may run for minutes; the lease is renewed every 5 s while it does, so a lapse means a dead
    // instance, and another takes its jobs within 15 s.
    this.runner = new JobRunner(opts.queue ?? jobQueueFor(vaults.store), {
      workerId: opts.workerId ?? workerId('vault-jobs'), concurrency: 4, pollMs, leaseMs: opts.leaseMs ?? 15_000, logger: log,
      ...(opts.perOrganization === undefined ? {} : { perGroup: opts.perOrganization }),
      kinds: { [VAULT_KEY_JOB]: { handler: (job) => this.run(job as LeasedJob<{ job_id: string }>), maxAttempts: 1000 } },
    });
    vaults.onJob(() => this.runner.poke());
  }

  /** Takes over key jobs kept before they ran on the job queue, then starts the runner. */
  start(): void {
    void this.adopt()
      .catch((err: unknown) => this.log.error({ err: (err as Error).message }, 'key jobs could not be adopted'))
      .finally(() => this.runner.start());
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  /** A queued job for every key job record; records enqueued before are deduped (their id is the key). */
  private async adopt(): Promise<void> {
    for await (const job of JOBS.in(this.vaults.store).all()) {
      // A vault deleted since: its job runs ungrouped and finds nothing to do.
      const v = await VAULTS.in(this.vaults.store).get(job.vault_id);
      await this.vaults.store.batch([vaultKeyJob(job, v?.org)]);
    }
  }

  /**
   * One queued job: the key job record it names, when due. The record keeps the attempts and the next
   * time, as the vault shows them; while it stays (a retry), the queued job is deferred to its next time.
   */
  private async run(leased: LeasedJob<{ job_id: string }>): Promise<void | { runAt: number }> {
    const job = await JOBS.in(this.vaults.store).get(leased.payload.job_id);
    if (!job) return;
    if (job.next_at > Date.now()) return { runAt: job.next_at };
    // One at a time with a deletion of the same vault, on any instance (VaultService.deleteVault); a
    // vault being deleted is left to it, and its record goes with it.
    const ran = await this.vaults.withVault(job.vault_id, () => this.runClaimed(job));
    if (!ran.ran) return { runAt: Date.now() + 1000 };
    // Still there: a retry at its next time (no sooner than a second: without a coordinator a job stays as it was).
    const left = await JOBS.in(this.vaults.store).get(job.id);
    return left ? { runAt: Math.max(left.next_at, Date.now() + 1000) } : undefined;
  }

  private async runClaimed(job: JobRecord): Promise<void> {
    const store = this.vaults.store;
    const vault = await VAULTS.in(store).get(job.vault_id);
    if (!vault) return store.batch([JOBS.delOp(job.id)]);
    if (!this.coordinators) return;
    // A vault on a shard not configured here fails the call as unavailable: retried, never sent elsewhere.
    let coordinator: CoordinatorClient;
    try {
      coordinator = this.coordinators.forVault(vault);
    } catch (err) {
      this.log.error({ vault: vault.id, err: (err as Error).message }, 'the vault\'s coordinator shard is not configured');
      return;
    }
    if (job.kind === 'reshare') return this.reshare(job, vault, coordinator);
    let key: VaultInfo | undefined;
    try {
      // The creation request proves the customer asked for this key; nodes can check it only against an
      // organization whose log an operator rooted (docs/trust.md), so it goes along with a log only.
      const trustLog = await this.vaults.trustLog(vault.org);
      key = (await coordinator.createVault({
        vaultId: vault.id, owner: vault.org, tier: WIRE_TIERS[vault.tier], trustLog, requestId: `${vault.id}:${job.id}`,
        ...(vault.creation_request && trustLog.length ? { creationRequest: hexToBytes(vault.creation_request) } : {}),
        ...(vault.customer_node_id ? { customerNodeId: vault.customer_node_id } : {}),
      }, { deadline: Date.now() + 120_000 })).vault;
    } catch (err) {
      const e = custodyError(err);
      const lastAttempt = job.attempts + 1 >= this.maxAttempts;
      let problem = `${e.code}: ${e.message}`.slice(0, 500);
      let refusedBefore = false;
      // The coordinator's record says how a generation it knows of stands; asked before the vault fails
      // for want of attempts too, since the last call may have given up (a deadline) on one that completed.
      if (e.code === 'vault_exists' || lastAttempt) {
        const info = await coordinator.getVault({ vaultId: vault.id }).then((r) => r.vault, () => undefined);
        if (info?.publicKey.length) key = info;
        else if (info?.state === 'failed' && e.code === 'vault_exists') {
          // A generation the nodes refused stays failed on the coordinator, which does not run it again.
          refusedBefore = true;
          problem = 'vault_exists: the nodes refused this vault\'s key generation before and the coordinator does not run it again; delete the vault and create a new one';
        }
      }
      if (!key && (e.kind === 'refused' || e.kind === 'invalid' || refusedBefore || lastAttempt)) {
        await store.batch([
          this.vaults.vaultOp({ ...vault, state: 'failed', problem, updated_at: new Date().toISOString() }), JOBS.delOp(job.id),
          this.vaults.event(vault.org, 'vault.failed', 'vault', vault.id, { vault_id: vault.id, state: 'failed', code: e.code }),
        ]);
        this.log.warn({ vault: vault.id, attempts: job.attempts + 1, err: problem }, 'key generation failed for good');
        return;
      }
      if (!key || key.state !== 'active') {
        const attempts = job.attempts + 1;
        const delay = Math.min(60_000, 1000 * 2 ** Math.min(attempts, 6));
        this.log.warn({ vault: vault.id, attempts, code: e.code, err: e.message }, 'key generation failed; will retry');
        // The vault says what it waits for (a customer node that is not attached, say) while it retries.
        await store.batch([
          JOBS.putOp(job.id, { ...job, attempts, next_at: Date.now() + delay, last_error: problem }),
          this.vaults.vaultOp({ ...vault, problem: `retrying (attempt ${attempts} of ${this.maxAttempts}): ${problem}`.slice(0, 500), updated_at: new Date().toISOString() }),
        ]);
        return;
      }
    }
    const { problem: _p, ...settled } = vault;
    const updated: VaultRecord = {
      ...settled, state: 'active', public_key: bytesToHex(key!.publicKey), chain_code: bytesToHex(key!.chainCode), rotation: key!.rotation,
      committee: await this.committeeView(vault.org, key!), updated_at: new Date().toISOString(),
    };
    await store.batch([
      this.vaults.vaultOp(updated),
      JOBS.delOp(job.id),
      this.vaults.event(vault.org, 'vault.activated', 'vault', vault.id, { vault_id: vault.id, state: 'active', public_key: updated.public_key }),
    ]);
    this.log.info({ vault: vault.id }, 'vault active');
  }

  /**
   * Runs a reshare through the coordinator (which commits it in two phases). Success: active, rotation
   * from the coordinator, the new tier. A failure the coordinator reports leaves the old epoch signing and
   * the vault reshare_pending with the reason; an unreachable coordinator is retried.
   */
  private async reshare(job: JobRecord, vault: VaultRecord, coordinator: CoordinatorClient): Promise<void> {
    const store = this.vaults.store;
    const finish = async (next: VaultRecord, type: string) => {
      await store.batch([
        this.vaults.vaultOp(next), JOBS.delOp(job.id),
        this.vaults.event(vault.org, type, 'vault', vault.id, { vault_id: vault.id, state: next.state, rotation: next.rotation, tier: next.tier }),
      ]);
    };
    const target = job.target_tier ?? vault.tier;
    try {
      // The customer's signed reshare request goes along with the log that lets the nodes verify it.
      const trustLog = await this.vaults.trustLog(vault.org);
      const { vault: key } = await coordinator.reshare({
        vaultId: vault.id, targetTier: WIRE_TIERS[target], trustLog, requestId: `${vault.id}:${job.id}`,
        ...(job.customer_node_id ? { customerNodeId: job.customer_node_id } : {}),
        ...(job.reshare_request && trustLog.length ? { reshareRequest: hexToBytes(job.reshare_request) } : {}),
      }, { deadline: Date.now() + 180_000 });
      if (!key || bytesToHex(key.publicKey) !== vault.public_key) throw new Error('the reshared key differs from the vault key');
      const { problem: _p, ...rest } = vault;
      const { customer_node_id: _c, ...base } = rest;
      await finish({
        ...base, state: 'active', tier: target, rotation: key.rotation, committee: await this.committeeView(vault.org, key),
        ...(job.customer_node_id ? { customer_node_id: job.customer_node_id } : {}), updated_at: new Date().toISOString(),
      }, 'vault.reshare.completed');
      this.log.info({ vault: vault.id, rotation: key.rotation, tier: target }, 'vault reshared');
    } catch (err) {
      const e = custodyError(err);
      const message = `${e.code}: ${e.message}`;
      if (e.kind === 'unavailable' && job.attempts < 5) {
        const attempts = job.attempts + 1;
        this.log.warn({ vault: vault.id, attempts, err: message }, 'reshare could not start; will retry');
        await store.batch([JOBS.putOp(job.id, { ...job, attempts, next_at: Date.now() + 2000 * attempts, last_error: message })]);
        return;
      }
      await finish({ ...vault, state: 'reshare_pending', problem: message.slice(0, 500), updated_at: new Date().toISOString() }, 'vault.reshare.pending');
      this.log.warn({ vault: vault.id, err: message }, 'reshare needs attention; the old shares keep signing');
    }
  }
}

/** Attempts at a key generation that keeps failing for want of nodes before the vault fails (about 30 minutes). */
export const MAX_CREATE_ATTEMPTS = 36;

/** The coordinator client fails with CustodyErrors; anything else (the store, a check here) is ours. */
function custodyError(err: unknown): CustodyError {
  return err instanceof CustodyError ? err : new CustodyError('internal', err instanceof Error ? err.message : String(err), { cause: err });
}
