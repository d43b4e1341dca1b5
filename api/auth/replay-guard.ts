// Makes a request signature usable once, ever (docs/security.md, "Request signatures"). Each accepted
// (key id, nonce) pair is claimed in the API's record store, in the `request_nonces` collection, so a
// restart forgets nothing; the claim is atomic (RecordRepository.insertIfAbsent), so of two concurrent
// requests carrying one nonce exactly one passes. A claim is kept RETAIN_SECONDS past its signature's
// `expires`, long after the signature itself stops verifying (`expires` is hard, the only skew is on
// `created`), and pruned after that.
import type { RecordRepository } from '../store/record-repository.ts';
import { collection } from '../store/collection.ts';

/** How long a claim outlives its signature's `expires`, seconds: well past any accepted window (330 s). */
export const RETAIN_SECONDS = 3600;
/** Pruning runs at most this often, seconds, and deletes at most PRUNE_BATCH claims a run. */
const PRUNE_EVERY_SECONDS = 60;
const PRUNE_BATCH = 1000;

interface NonceRecord {
  key_id: string;
  nonce: string;
  /** The signature's `expires`, Unix seconds. */
  expires: number;
  /** Unix seconds after which the claim may be pruned. */
  keep_until: number;
}

const REQUEST_NONCES = collection<NonceRecord>('request_nonces');
/** The collection's name, for the tests that count the claims. */
export const NONCE_COLLECTION = REQUEST_NONCES.name;

// Key ids and nonces are structured-field strings (printable ASCII), so NUL separates them unambiguously.
const idOf = (keyId: string, nonce: string) => `${keyId}\x00${nonce}`;
// Fixed width, so index order is time order.
const untilIndex = (keepUntil: number) => `until/${String(keepUntil).padStart(12, '0')}`;

export class ReplayGuard {
  private nextPrune = 0;

  constructor(private readonly store: RecordRepository, private readonly retainSeconds = RETAIN_SECONDS) {}

  /** True exactly once per (key id, nonce) for as long as the claim is kept; records the claim. */
  async claim(keyId: string, nonce: string, expiresAt: number, now: number): Promise<boolean> {
    if (now >= this.nextPrune) {
      this.nextPrune = now + PRUNE_EVERY_SECONDS;
      await this.prune(now);
    }
    const keepUntil = Math.max(expiresAt, now) + this.retainSeconds;
    const rec: NonceRecord = { key_id: keyId, nonce, expires: expiresAt, keep_until: keepUntil };
    return REQUEST_NONCES.in(this.store).insertIfAbsent(idOf(keyId, nonce), rec, [untilIndex(keepUntil)]);
  }

  /** Deletes claims kept past their time (up to a batch); returns how many. */
  async prune(now: number): Promise<number> {
    const oldest = await REQUEST_NONCES.in(this.store).byIndex('until/', PRUNE_BATCH);
    const due = oldest.filter((r) => r.keep_until < now);
    if (due.length) {
      await this.store.batch(due.map((r) => REQUEST_NONCES.delOp(idOf(r.key_id, r.nonce), [untilIndex(r.keep_until)])));
    }
    return due.length;
  }
}
