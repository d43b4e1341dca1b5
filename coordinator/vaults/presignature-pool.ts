// The coordinator's side of ECDSA presignature pools (docs/protocols/pools.md): which entries the
// nodes hold, per (vault, epoch, path, signer set), and when to make more. It holds no secret and
// decides no safety question: every node checks and takes its own entry, and refuses a used, unknown
// or mismatched one; what this adds is that a signing request finds an entry ready.
//
// - An ECDSA signing of a (vault, path) marks the path in use. When the vault has no signing in flight
//   for `idleMs`, each path in use is refilled up to `target` entries by a presigning session.
// - A signing takes `count` entries of one bucket whose signers are all attached, or none.
// - Entries of another epoch than the vault's are dropped when seen; the nodes delete them too.
// - A refusal that says the nodes keep no pool (no rollback anchor) stops refills for the vault for a
//   while; any other failure backs off for less. The pool is lost with the process: the nodes' entries
//   then expire unused (a day), which costs work, never safety.
import type { Logger } from '../../common/logger.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';

export interface PoolEntries {
  entryIds: string[];
  signers: string[];
  epoch: number;
  path: number[];
}

export interface PoolHooks {
  /** Runs a presigning session for `count` entries of (vault, path) on a free signer set. */
  presign(input: { vaultId: string; path: number[]; count: number }): Promise<PoolEntries>;
  isAttached(nodeId: string): boolean;
  /** The vault's current epoch, or undefined when it cannot sign ECDSA now (not active, unknown). */
  epochOf(vaultId: string): Promise<number | undefined>;
}

export interface PoolOptions {
  /** Entries to keep ready per (vault, path) in use; 0 turns the pool off. */
  target: number;
  /** How long a vault must have no signing in flight before a refill starts. */
  idleMs?: number;
  /** Pause after a failed refill; after a refusal that the nodes keep no pool, ten times as long. */
  backoffMs?: number;
  now?: () => number;
}

/** Most entries one presigning session makes (PARAM_LIMITS.presignEntries). */
const MAX_PER_SESSION = 32;

interface Bucket extends PoolEntries {
  key: string;
  vaultId: string;
}

/** The nodes' answers that they keep no pool at all, as opposed to a refill that failed. */
const POOL_ABSENT = /^(presignature|nonce)_pool_(unanchored|unavailable)$/;

export class PresignaturePool {
  private readonly buckets = new Map<string, Bucket>();
  /** (vault, path) pairs a signing used, to refill. */
  private readonly inUse = new Map<string, { vaultId: string; path: number[] }>();
  private readonly inFlight = new Map<string, number>();
  private readonly refilling = new Set<string>();
  private readonly pausedUntil = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly idleMs: number;
  private readonly backoffMs: number;
  private readonly now: () => number;
  private stopped = false;

  /** Vaults whose nodes answered that they keep no pool: said once in the log. */
  private readonly noPool = new Set<string>();

  constructor(private readonly hooks: PoolHooks, private readonly log: Logger, readonly opts: PoolOptions) {
    this.idleMs = opts.idleMs ?? 250;
    this.backoffMs = opts.backoffMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.opts.target > 0 && !this.stopped;
  }

  /** Entries ready for (vault, epoch, path), over every bucket. */
  size(vaultId: string, epoch: number, path: number[]): number {
    return this.bucketsOf(vaultId, epoch, path).reduce((n, b) => n + b.entryIds.length, 0);
  }

  private bucketsOf(vaultId: string, epoch: number, path: number[]): Bucket[] {
    const p = path.join('/');
    const out: Bucket[] = [];
    for (const [k, b] of this.buckets) {
      if (b.vaultId !== vaultId) continue;
      // The vault moved to another epoch: those entries can never serve (the nodes refuse them).
      if (b.epoch !== epoch) {
        this.buckets.delete(k);
        continue;
      }
      if (b.path.join('/') === p) out.push(b);
    }
    return out;
  }

  /** Takes `count` entries of one bucket whose signers are all attached, or none. */
  take(vaultId: string, epoch: number, path: number[], count: number): PoolEntries | undefined {
    if (!this.enabled) return undefined;
    for (const b of this.bucketsOf(vaultId, epoch, path)) {
      if (b.entryIds.length < count || !b.signers.every((s) => this.hooks.isAttached(s))) continue;
      const entryIds = b.entryIds.splice(0, count);
      if (!b.entryIds.length) this.buckets.delete(b.key);
      return { entryIds, signers: [...b.signers], epoch, path: [...path] };
    }
    return undefined;
  }

  /** Adds entries a presigning session made. */
  add(vaultId: string, made: PoolEntries): void {
    const key = `${vaultId}|${made.epoch}|${made.path.join('/')}|${[...made.signers].sort().join(',')}`;
    const b = this.buckets.get(key);
    if (b) b.entryIds.push(...made.entryIds);
    else this.buckets.set(key, { ...made, entryIds: [...made.entryIds], key, vaultId });
  }

  /** A signing of the vault started. */
  signingStarted(vaultId: string): void {
    this.inFlight.set(vaultId, (this.inFlight.get(vaultId) ?? 0) + 1);
    const timer = this.timers.get(vaultId);
    if (timer) clearTimeout(timer);
    this.timers.delete(vaultId);
  }

  /** A signing of (vault, path) ended: the path is in use, and a refill follows once the vault is idle. */
  signingEnded(vaultId: string, path: number[]): void {
    const left = (this.inFlight.get(vaultId) ?? 1) - 1;
    if (left > 0) this.inFlight.set(vaultId, left);
    else this.inFlight.delete(vaultId);
    if (!this.enabled) return;
    this.inUse.set(`${vaultId}|${path.join('/')}`, { vaultId, path: [...path] });
    if (left === 0) this.scheduleRefill(vaultId);
  }

  /** The nodes refused entries or presigning: `code` says whether they keep a pool at all. */
  refused(vaultId: string, code: string): void {
    const pause = POOL_ABSENT.test(code) ? 10 * this.backoffMs : this.backoffMs;
    this.pausedUntil.set(vaultId, this.now() + pause);
  }

  private scheduleRefill(vaultId: string): void {
    if (this.timers.has(vaultId)) return;
    const timer = setTimeout(() => {
      this.timers.delete(vaultId);
      void this.refill(vaultId);
    }, this.idleMs);
    timer.unref();
    this.timers.set(vaultId, timer);
  }

  /** Refills every path in use of the vault up to the target, one presigning session per path, while the vault stays idle. */
  async refill(vaultId: string): Promise<number> {
    let made = 0;
    if (!this.enabled || this.refilling.has(vaultId) || this.inFlight.get(vaultId)) return made;
    if ((this.pausedUntil.get(vaultId) ?? 0) > this.now()) return made;
    this.refilling.add(vaultId);
    try {
      const epoch = await this.hooks.epochOf(vaultId);
      if (epoch === undefined) return made;
      for (const { path } of [...this.inUse.values()].filter((u) => u.vaultId === vaultId)) {
        if (this.inFlight.get(vaultId) || this.stopped) break;
        const want = Math.min(MAX_PER_SESSION, this.opts.target - this.size(vaultId, epoch, path));
        if (want <= 0) continue;
        try {
          const entries = await this.hooks.presign({ vaultId, path, count: want });
          this.add(vaultId, entries);
          made += entries.entryIds.length;
        } catch (err) {
          const code = err instanceof CustodyError ? err.code : 'internal';
          this.refused(vaultId, code);
          if (!POOL_ABSENT.test(code)) this.log.warn({ vaultId, path: path.join('/'), code, problem: (err as Error).message }, 'presignature refill failed; signings use the full protocol meanwhile');
          else if (!this.noPool.has(vaultId)) {
            // Nodes that keep no pool (none configured, or no rollback anchor to keep one safely) are not a failure: said once per vault.
            this.noPool.add(vaultId);
            this.log.info({ vaultId, code }, 'the nodes keep no presignature pool for this vault; signings use the full protocol');
          }
          break;
        }
      }
    } finally {
      this.refilling.delete(vaultId);
    }
    return made;
  }

  /** No more refills (the coordinator stops). */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
