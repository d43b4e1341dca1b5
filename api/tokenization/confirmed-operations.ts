// Who hears of a token operation once it is confirmed on chain (a Safe operation, a module execution, a call
// by a vault wallet): the token's transparency log appends an `operation` entry for each (docs/platform/rwa.md).
// A confirmed record carries `log_pending: true` while listeners are registered and have not all run; they
// run after the record is stored, and once they all succeed the mark is removed. A process stopped in between
// runs them again at its next start (`resumePending`), so a listener sees an operation at least once.
import type { RecordRepository } from '../store/record-repository.ts';
import { OPERATIONS } from './collections.ts';
import type { TokenOperationRecord } from './records.ts';

export type ConfirmedListener = (op: TokenOperationRecord) => Promise<void>;

export class ConfirmedOperations {
  private readonly listeners: ConfirmedListener[] = [];

  constructor(
    private readonly store: RecordRepository,
    /** A record's index entries, as its service writes them. */
    private readonly indexOf: (r: TokenOperationRecord) => string[],
    private readonly log?: { warn(obj: object, msg: string): void } | undefined,
  ) {}

  listen(fn: ConfirmedListener): void {
    this.listeners.push(fn);
  }

  /** The mark a confirmed record is stored with. */
  get pending(): { log_pending?: true } {
    return this.listeners.length ? { log_pending: true } : {};
  }

  /** Runs every listener for `op` (stored confirmed); once all succeed, its mark is removed. Never throws. */
  async notify(op: TokenOperationRecord): Promise<void> {
    if (!this.listeners.length) return;
    try {
      for (const fn of this.listeners) await fn(op);
      const stored = await OPERATIONS.in(this.store).get(op.id);
      if (stored?.log_pending) {
        const { log_pending: _, ...rest } = stored;
        await this.store.batch([OPERATIONS.putOp(op.id, rest as TokenOperationRecord, { index: this.indexOf(stored) })]);
      }
    } catch (err) {
      this.log?.warn({ category: (err as { code?: string }).code ?? 'error', operation: op.id }, 'a confirmed token operation\'s listeners failed; they run again at the next start');
    }
  }

  /** At boot: every confirmed operation still marked. */
  async resumePending(): Promise<void> {
    if (!this.listeners.length) return;
    for await (const op of this.store.all<TokenOperationRecord>('token_operations')) {
      if (op.state === 'confirmed' && op.log_pending) await this.notify(op);
    }
  }
}
