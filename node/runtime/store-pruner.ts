// The node's periodic pass over its store (docs/storage.md "Pruning"): deletes what protects nothing any
// more, so the store, its open time and its memory stay bounded by recent traffic instead of growing
// with history. Intent records past their not_after and session claims past their deadline (each with
// a margin), pool entries and used marks past their expiry or of an epoch the key moved on from, and
// shares dealt away past their retention window. Run once after open and then on a timer; each part
// deletes in synced batches of bounded size, logs its counts and adds them to a metric.
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../../common/logger.ts';
import type { VaultShareStore } from '../storage/vault-shares.ts';
import type { IntentLedger } from './authorization/intent-ledger.ts';

/** What a pass deletes, by kind: the metric's label values, a fixed set. */
export type PrunedKind = 'intent_record' | 'session_claim' | 'presignature' | 'frost_nonce' | 'retired_share';

/** A pool's sweep (PresignatureStore, FrostNonceStore): `epochOf` gives a key's current epoch here. */
interface SweepablePool {
  readonly enabled: boolean;
  sweep(epochOf: (keyId: string) => Promise<number | undefined>): Promise<number>;
}

export interface StorePrunerDeps {
  vault: VaultShareStore;
  ledger: IntentLedger;
  presignatures?: SweepablePool;
  frostNonces?: SweepablePool;
  log: Logger;
  registry?: Registry;
  now?: () => number;
  /** Between passes; 15 minutes by default. */
  intervalMs?: number;
}

export const PRUNE_INTERVAL_MS = 15 * 60_000;

export class StorePruner {
  private readonly pruned?: Counter<'kind'>;
  private readonly failures?: Counter<'kind'>;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Partial<Record<PrunedKind, number>>> | undefined;

  constructor(private readonly deps: StorePrunerDeps) {
    this.now = deps.now ?? Date.now;
    if (deps.registry) {
      this.pruned = new Counter({ name: 'node_store_pruned_records_total', help: 'Records the node deleted from its store because they protect nothing any more, by kind', labelNames: ['kind'], registers: [deps.registry] });
      this.failures = new Counter({ name: 'node_store_prune_failures_total', help: 'Pruning passes of one kind that failed (the records stay; the next pass tries again)', labelNames: ['kind'], registers: [deps.registry] });
    }
  }

  /**
   * One pass over every kind; resolves with the counts. A pass already running is joined, not doubled. A
   * kind that fails is logged and counted and the others still run.
   */
  run(): Promise<Partial<Record<PrunedKind, number>>> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** A pass now, then one every interval; stop() ends them. */
  start(): void {
    void this.run();
    this.timer = setInterval(() => void this.run(), this.deps.intervalMs ?? PRUNE_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops the timer and waits for a pass in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async pass(): Promise<Partial<Record<PrunedKind, number>>> {
    const { vault, ledger, presignatures, frostNonces, log } = this.deps;
    const epochOf = async (keyId: string) => (await vault.current(keyId))?.key.pkg.epoch;
    const parts: [PrunedKind, () => Promise<number>][] = [
      ['intent_record', () => ledger.prune(this.now())],
      ['session_claim', () => vault.pruneSessionClaims(this.now())],
      ['retired_share', () => vault.eraseRetired(this.now())],
    ];
    // Pools exist only over an anchored store (single-use-pool.ts).
    if (presignatures?.enabled) parts.push(['presignature', () => presignatures.sweep(epochOf)]);
    if (frostNonces?.enabled) parts.push(['frost_nonce', () => frostNonces.sweep(epochOf)]);
    const counts: Partial<Record<PrunedKind, number>> = {};
    const started = performance.now();
    for (const [kind, prune] of parts) {
      try {
        const n = await prune();
        counts[kind] = n;
        if (n > 0) this.pruned?.inc({ kind }, n);
      } catch (err) {
        this.failures?.inc({ kind });
        log.warn({ kind, err: (err as Error).message }, 'pruning the store failed for this kind; the next pass tries again');
      }
    }
    const any = Object.values(counts).some((n) => n > 0);
    log[any ? 'info' : 'debug']({ ...counts, ms: Math.round(performance.now() - started) }, 'store pruned');
    return counts;
  }
}
