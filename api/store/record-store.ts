// The API's records behind one repository interface (DESIGN.md "Storage"). This is the embedded
// LevelDB implementation: JSON records in named collections, secondary keys as index entries, and
// multi-record changes in one atomic batch.
import { Level } from 'level';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import type { Op, RecordRepository } from './record-repository.ts';
import { enqueueRecords } from '../jobs/record-job-queue.ts';
import { LocalLocks, type TryResult } from './local-locks.ts';

export type { Op } from './record-repository.ts';

const SEP = '\x00';
/** The claim key of batches that enqueue jobs; \x00 keeps it apart from every `<collection>\x00<id>`. */
const ENQUEUE_LOCK = '\x00queue';

export class RecordStore implements RecordRepository {
  private readonly claims = new KeyedMutex();
  private readonly locks = new LocalLocks();

  private constructor(private readonly db: Level<string, string>) {}

  static async open(dir: string): Promise<RecordStore> {
    const db = new Level<string, string>(dir, { valueEncoding: 'utf8' });
    await db.open();
    return new RecordStore(db);
  }

  private key(collection: string, id: string): string {
    return `r${SEP}${collection}${SEP}${id}`;
  }

  private indexKey(collection: string, ix: string, id: string): string {
    return `i${SEP}${collection}${SEP}${ix}${SEP}${id}`;
  }

  async get<T>(collection: string, id: string): Promise<T | undefined> {
    const raw = await this.db.get(this.key(collection, id));
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }

  /**
   * Applies every operation or none. `index` entries let `byIndex` find records by another key. A batch
   * that enqueues jobs runs under one lock (api/jobs/record-job-queue.ts `enqueueRecords`), so dedupe
   * keys and job ids are decided and written with nothing in between.
   */
  async batch(ops: Op[]): Promise<void> {
    if (!ops.some((op) => op.type === 'enqueue')) return this.write(ops);
    return this.claims.run(ENQUEUE_LOCK, async () => this.write(await enqueueRecords(this, ops, Date.now())));
  }

  private async write(ops: Op[]): Promise<void> {
    const out: ({ type: 'put'; key: string; value: string } | { type: 'del'; key: string })[] = [];
    for (const op of ops) {
      if (op.type === 'enqueue') throw new Error('enqueue operations are expanded before the write');
      if (op.type === 'put') out.push({ type: 'put', key: this.key(op.collection, op.id), value: JSON.stringify(op.value) });
      else out.push({ type: 'del', key: this.key(op.collection, op.id) });
      // Removed before the entries are written, so an entry named in both stays.
      if (op.type === 'put') for (const ix of op.unindex ?? []) out.push({ type: 'del', key: this.indexKey(op.collection, ix, op.id) });
      for (const ix of op.index ?? []) {
        const k = this.indexKey(op.collection, ix, op.id);
        out.push(op.type === 'put' ? { type: 'put', key: k, value: op.id } : { type: 'del', key: k });
      }
    }
    await this.db.batch(out);
  }

  /**
   * Puts the record only when none is stored under its id, and says whether it did: of any number of
   * concurrent calls for one id, exactly one returns true. LevelDB has no conditional write, so the
   * look-up and the write run under a lock per id; one process holds the database (LevelDB's own lock
   * file), so that lock is the whole story. A store shared by several processes implements this with
   * its conditional insert (INSERT ... ON CONFLICT DO NOTHING, SET NX).
   */
  insertIfAbsent(collection: string, id: string, value: unknown, index?: string[]): Promise<boolean> {
    return this.claims.run(`${collection}${SEP}${id}`, async () => {
      if ((await this.db.get(this.key(collection, id))) !== undefined) return false;
      await this.put(collection, id, value, index);
      return true;
    });
  }

  put(collection: string, id: string, value: unknown, index?: string[]): Promise<void> {
    return this.batch([{ type: 'put', collection, id, value, ...(index ? { index } : {}) }]);
  }

  /** Records whose index entry starts with `prefix`, in index order. */
  async byIndex<T>(collection: string, prefix: string, limit = 1000): Promise<T[]> {
    const base = `i${SEP}${collection}${SEP}${prefix}`;
    const out: T[] = [];
    for await (const id of this.db.values({ gte: base, lt: base + '\xff', limit })) {
      const v = await this.get<T>(collection, id);
      if (v !== undefined) out.push(v);
    }
    return out;
  }

  /** Up to `limit` records whose index entry starts with `prefix` and sorts strictly after `prefix + after`. */
  async byIndexAfter<T>(collection: string, prefix: string, after: string | undefined, limit: number): Promise<T[]> {
    const base = `i${SEP}${collection}${SEP}${prefix}`;
    const range = after === undefined ? { gte: base } : { gt: base + after + SEP + '\xff' };
    const out: T[] = [];
    for await (const id of this.db.values({ ...range, lt: base + '\xff', limit })) {
      const v = await this.get<T>(collection, id);
      if (v !== undefined) out.push(v);
    }
    return out;
  }

  /**
   * Like `byIndexAfter`, with each entry's position: what follows `prefix` in the entry (the `after` that
   * resumes behind it). `value` is undefined for an entry whose record is gone, so a walk can step past it.
   * `reverse`: in descending order, `after` then being the position to resume strictly before.
   */
  async byIndexEntries<T>(collection: string, prefix: string, after: string | undefined, limit: number, reverse = false): Promise<{ position: string; value: T | undefined }[]> {
    const base = `i${SEP}${collection}${SEP}${prefix}`;
    // Positions are fixed-format (`<created_at>/<id>`, a padded number), so no position is another's prefix.
    const range = reverse
      ? { gte: base, lt: after === undefined ? base + '\xff' : base + after }
      : { ...(after === undefined ? { gte: base } : { gt: base + after + SEP + '\xff' }), lt: base + '\xff' };
    const out: { position: string; value: T | undefined }[] = [];
    for await (const [k, id] of this.db.iterator({ ...range, limit, reverse })) {
      out.push({ position: k.slice(base.length, k.length - SEP.length - id.length), value: await this.get<T>(collection, id) });
    }
    return out;
  }

  /**
   * Gives every stored record of `collection` the index entries `indexOf` names for it now, once per
   * `version` (kept under `index_versions`): how records written before an index existed join it. Run
   * when the store opens, before anything else writes the collection (api/app.ts); records written
   * afterwards carry their entries already. Only index entries are written, never a record. Returns how
   * many records it indexed (0 when the version was reached before).
   */
  async reindex<T>(collection: string, version: number, indexOf: (record: T) => string[]): Promise<number> {
    const reached = await this.get<number>('index_versions', collection);
    if (reached !== undefined && reached >= version) return 0;
    const base = `r${SEP}${collection}${SEP}`;
    let out: { type: 'put'; key: string; value: string }[] = [];
    let n = 0;
    for await (const [k, v] of this.db.iterator({ gte: base, lt: base + '\xff' })) {
      const id = k.slice(base.length);
      for (const ix of indexOf(JSON.parse(v) as T)) out.push({ type: 'put', key: this.indexKey(collection, ix, id), value: id });
      n++;
      if (out.length >= 1000) {
        await this.db.batch(out);
        out = [];
      }
    }
    // The version is recorded with the last entries: an interrupted run starts again at the next open.
    out.push({ type: 'put', key: this.key('index_versions', collection), value: JSON.stringify(version) });
    await this.db.batch(out);
    return n;
  }

  /** Records of a collection in id order, starting after `after`, stopping at `lt`. */
  async *range<T>(collection: string, opts: { after?: string; lt?: string } = {}): AsyncGenerator<T> {
    const base = `r${SEP}${collection}${SEP}`;
    const lower = opts.after === undefined ? { gte: base } : { gt: base + opts.after };
    for await (const v of this.db.values({ ...lower, lt: opts.lt === undefined ? base + '\xff' : base + opts.lt })) yield JSON.parse(v) as T;
  }

  /** Like `range`, with each record's id; at most `limit` records. */
  async *entries<T>(collection: string, opts: { after?: string; lt?: string; limit?: number } = {}): AsyncGenerator<{ id: string; value: T }> {
    const base = `r${SEP}${collection}${SEP}`;
    const lower = opts.after === undefined ? { gte: base } : { gt: base + opts.after };
    const upper = opts.lt === undefined ? base + '\xff' : base + opts.lt;
    for await (const [k, v] of this.db.iterator({ ...lower, lt: upper, ...(opts.limit !== undefined ? { limit: opts.limit } : {}) })) yield { id: k.slice(base.length), value: JSON.parse(v) as T };
  }

  async *all<T>(collection: string): AsyncGenerator<T> {
    const base = `r${SEP}${collection}${SEP}`;
    for await (const v of this.db.values({ gte: base, lt: base + '\xff' })) yield JSON.parse(v) as T;
  }

  /** How many records `collection` holds: keys only, nothing parsed (the queue-depth metrics). */
  async count(collection: string): Promise<number> {
    const base = `r${SEP}${collection}${SEP}`;
    let n = 0;
    for await (const _k of this.db.keys({ gte: base, lt: base + '\xff' })) n++;
    return n;
  }

  /**
   * Every record and index entry as stored, for a copy into another store (api/store/store-copy.ts): a
   * record's JSON text unparsed, an index entry as `<index string>\x00<id>` (its key without the
   * collection, the layout of PostgresRecordStore's `entry`). One iterator, so one snapshot; index
   * entries come first (key order). A key of another layout throws rather than being left behind.
   */
  async *exportRaw(): AsyncGenerator<{ kind: 'record'; collection: string; id: string; value: string } | { kind: 'index'; collection: string; entry: string; id: string }> {
    for await (const [k, v] of this.db.iterator()) {
      const tag = k.slice(0, 2);
      const cut = k.indexOf(SEP, 2);
      if ((tag !== `r${SEP}` && tag !== `i${SEP}`) || cut < 0) throw new Error(`exportRaw: a key of unknown layout: ${JSON.stringify(k.slice(0, 60))}`);
      const collection = k.slice(2, cut);
      const rest = k.slice(cut + 1);
      if (tag === `r${SEP}`) yield { kind: 'record', collection, id: rest, value: v };
      else if (!rest.endsWith(SEP + v)) throw new Error(`exportRaw: the index entry ${JSON.stringify(rest.slice(0, 60))} of ${collection} does not end with its id`);
      else yield { kind: 'index', collection, entry: rest, id: v };
    }
  }

  /** In-process: LevelDB's lock file makes this process the only one with the store open. */
  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(name, fn);
  }

  tryExclusive<T>(name: string, fn: () => Promise<T>): Promise<TryResult<T>> {
    return this.locks.tryRun(name, fn);
  }

  /** One point read; throws when the database is closed or failing (readiness, api/routes/health.ts). */
  async ping(): Promise<void> {
    await this.db.get(this.key('index_versions', ''));
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
