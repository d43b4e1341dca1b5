// The sandbox payment rail (docs/platform/funding.md "Sandbox"): a double of a fiat rail that behaves as
// one does, moving no money. A submitted transfer is `pending`, and is settled (or failed, or returned)
// `settleMs` later on the injected scheduler's clock, never on the wall clock the tests cannot control.
// Outcomes are chosen by documented magic amounts, as card and bank sandboxes do. Transfers are kept in
// the API's store, so a restart loses none: `runDue` settles every transfer whose time has come, and each
// settlement is told to the listeners at least once. It refuses to exist in a production deployment.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { collection } from '../store/collection.ts';
import { newId } from '../store/ids.ts';
import type { PaymentRail, RailDirection, RailFailureReason, RailListener, RailReturnReason, RailSubmission, RailTransfer } from './payment-rail.ts';

/** The clock and timers the rail runs on: the process's in a server, a manual one in tests. */
export interface Scheduler {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const SYSTEM_SCHEDULER: Scheduler = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * Magic amounts, in minor units, and what the sandbox does with a transfer of exactly that amount. Any
 * other amount settles. The same amounts apply to pulls and pushes.
 */
export const SANDBOX_MAGIC_AMOUNTS: Readonly<Record<string, { outcome: 'failed'; reason: RailFailureReason } | { outcome: 'returned'; reason: RailReturnReason } | { outcome: 'refused'; reason: RailFailureReason }>> = {
  // USD 1,000.01: fails at settlement, the holder's account lacks the funds.
  100001: { outcome: 'failed', reason: 'insufficient_funds' },
  // USD 1,000.02: fails at settlement, the account is closed.
  100002: { outcome: 'failed', reason: 'account_closed' },
  // USD 1,000.03: returned by the bank instead of settling (a pull: unauthorized debit; a push: account closed).
  100003: { outcome: 'returned', reason: 'unauthorized_debit' },
  // USD 1,000.04: refused at submission (the account number is invalid); failed at once.
  100004: { outcome: 'refused', reason: 'account_invalid' },
};

interface StoredTransfer {
  v: 1;
  id: string;
  reference: string;
  direction: RailDirection;
  amount: string;
  currency: string;
  status: RailTransfer['status'];
  reason: RailTransfer['reason'];
  submitted_at: number;
  due_at: number;
  resolved_at: number | null;
  /** The listeners were told of the outcome (at least once). */
  notified: boolean;
}

/** Transfers by id; index `due/<due ms, 15 digits>` while pending or not yet told. */
const TRANSFERS = collection<StoredTransfer>('sandbox_rail_transfers');
/** `<direction>/<reference>` → the transfer id: one transfer per reference. */
const REFERENCES = collection<{ id: string }>('sandbox_rail_references');

const dueIndex = (t: StoredTransfer) => (t.notified ? [] : [`due/${String(t.due_at).padStart(15, '0')}`]);
const view = (t: StoredTransfer): RailTransfer => ({
  id: t.id, reference: t.reference, direction: t.direction, amount: BigInt(t.amount), currency: t.currency, status: t.status, reason: t.reason, submitted_at: t.submitted_at, resolved_at: t.resolved_at,
});

export interface SandboxRailOptions {
  store: RecordRepository;
  /** The deployment's environment (API_ENVIRONMENT): production is refused. */
  environment: 'sandbox' | 'production';
  /** Delay between submission and outcome (API_SANDBOX_RAIL_SETTLE_MS). */
  settleMs: number;
  scheduler?: Scheduler;
  /** Redemption address per chain (the issuer's, or one configured). */
  redemptionAddresses?: Readonly<Record<string, string>>;
}

export class SandboxRail implements PaymentRail {
  readonly name = 'sandbox';
  readonly sandbox = true;
  readonly currencies = ['USD'] as const;
  private readonly scheduler: Scheduler;
  private readonly listeners: RailListener[] = [];
  private readonly timers = new Set<unknown>();
  private stopped = false;

  constructor(private readonly o: SandboxRailOptions) {
    // As the Hosted Auth demo persona: a double never serves production.
    if (o.environment !== 'sandbox') throw new CustodyError('sandbox_only', 'the sandbox payment rail exists in sandbox deployments only; configure a real rail for production');
    this.scheduler = o.scheduler ?? SYSTEM_SCHEDULER;
  }

  onSettlement(listener: RailListener): void {
    this.listeners.push(listener);
  }

  redemptionAddress(chain: string): string | undefined {
    return this.o.redemptionAddresses?.[chain];
  }

  submitPull(req: RailSubmission): Promise<RailTransfer> {
    return this.submit('pull', req);
  }

  submitPush(req: RailSubmission): Promise<RailTransfer> {
    return this.submit('push', req);
  }

  async transfer(id: string): Promise<RailTransfer | undefined> {
    const t = await TRANSFERS.in(this.o.store).get(id);
    return t && view(t);
  }

  private async submit(direction: RailDirection, req: RailSubmission): Promise<RailTransfer> {
    if (req.amount <= 0n) throw new CustodyError('invalid_request', 'a rail transfer moves a positive amount');
    if (!(this.currencies as readonly string[]).includes(req.currency)) throw new CustodyError('invalid_request', `the sandbox rail moves ${this.currencies.join(', ')}`);
    const refKey = `${direction}/${req.reference}`;
    return this.o.store.exclusive(`sandbox-rail:${refKey}`, async () => {
      const known = await REFERENCES.in(this.o.store).get(refKey);
      const existing = known && (await TRANSFERS.in(this.o.store).get(known.id));
      if (existing) return view(existing);
      const now = this.scheduler.now();
      const magic = SANDBOX_MAGIC_AMOUNTS[req.amount.toString()];
      const refused = magic?.outcome === 'refused';
      const t: StoredTransfer = {
        v: 1, id: newId('srt', now), reference: req.reference, direction, amount: req.amount.toString(), currency: req.currency,
        status: refused ? 'failed' : 'pending', reason: refused ? magic.reason : null, submitted_at: now, due_at: refused ? now : now + this.o.settleMs,
        resolved_at: refused ? now : null, notified: refused,
      };
      await this.o.store.batch([TRANSFERS.putOp(t.id, t, { index: dueIndex(t) }), REFERENCES.putOp(refKey, { id: t.id })]);
      if (!refused) this.wake(this.o.settleMs);
      return view(t);
    });
  }

  private wake(ms: number): void {
    if (this.stopped) return;
    const h = this.scheduler.setTimeout(() => {
      this.timers.delete(h);
      void this.runDue().catch(() => undefined);
    }, ms);
    this.timers.add(h);
  }

  /**
   * Resolves every transfer due by the scheduler's clock and tells the listeners; a transfer resolved but
   * not yet told (a listener failed, or the process stopped) is told again. Returns how many were told.
   */
  async runDue(): Promise<number> {
    return this.o.store.exclusive('sandbox-rail:due', async () => {
      const now = this.scheduler.now();
      const due = await TRANSFERS.in(this.o.store).byIndexEntries('due/', undefined, 1000);
      let told = 0;
      for (const { value } of due) {
        if (!value) continue;
        // Entries are in due order: the rest are not due yet.
        if (value.due_at > now) break;
        let t = value;
        if (t.status === 'pending') {
          const magic = SANDBOX_MAGIC_AMOUNTS[t.amount];
          const outcome = magic && magic.outcome !== 'refused' ? magic : undefined;
          const returned = outcome?.outcome === 'returned' ? (t.direction === 'pull' ? 'unauthorized_debit' : 'account_closed') : null;
          t = { ...t, status: outcome ? outcome.outcome : 'settled', reason: returned ?? outcome?.reason ?? null, resolved_at: now };
          await TRANSFERS.in(this.o.store).put(t.id, t, dueIndex(t));
        }
        // The callback is at least once: a listener that throws leaves the transfer to be told again.
        try {
          for (const l of this.listeners) await l(view(t));
        } catch {
          continue;
        }
        const done = { ...t, notified: true };
        await this.o.store.batch([TRANSFERS.putOp(t.id, done, { unindex: dueIndex(t) })]);
        told++;
      }
      return told;
    });
  }

  /** Cancels the pending timers (the server's shutdown); transfers stay stored and settle at the next start. */
  stop(): void {
    this.stopped = true;
    for (const h of this.timers) this.scheduler.clearTimeout(h);
    this.timers.clear();
  }
}
