// A node's sealed pool of single-use secret material made ahead of a signing request
// (docs/protocols/pools.md): ECDSA presignatures (presignature-store.ts) and FROST nonce pairs
// (frost-nonce-store.ts) are two flavours of it. An entry is sealed under `<prefix>/<key>/<epoch>/<id>`
// with its binding (the key epoch, the signer set, and what the flavour adds: path, key, suite). Single
// use is kept by the store, not by the coordinator: `take` deletes the entry and writes a used mark
// (`<prefix>-used/<key>/<id>`) in one synced batch (checked and reserved under the key's lock) before it hands the secret
// out, so nothing derived from it can leave first, a second take of the id is refused, and a restarted
// node finds it used.
//
// Only a node with a rollback anchor keeps entries (docs/storage.md): without one, a data directory put
// back from an older copy would hold entries already used. Such a node refuses to make or use them
// (the flavour's `unanchored` code) and signs with the full protocol.
import { decodeBlob, encodeBlob } from '../../core/codec/blob.ts';
import { SecretBytes } from '../../core/codec/secret.ts';
import type { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import type { BatchOp, SealedStore } from './sealed-store.ts';

/** Entry ids: 128 random bits, hex. */
export const ENTRY_ID = /^[0-9a-f]{32}$/;

/** What every entry is bound to; a flavour adds its own fields. */
export interface PoolBinding {
  epoch: number;
  /** Party indices of the signer set (stored sorted). */
  signers: number[];
}

/** A flavour's refusal codes, one per reason. */
export interface PoolCodes {
  unanchored: ErrorCode;
  full: ErrorCode;
  exists: ErrorCode;
  unknown: ErrorCode;
  used: ErrorCode;
  expired: ErrorCode;
  wrongEpoch: ErrorCode;
  wrongSigners: ErrorCode;
  wrongPath: ErrorCode;
}

/** What makes a pool one of presignatures or of nonce pairs. */
export interface PoolFlavor<B extends PoolBinding, V> {
  /** Record prefix: entries under `<prefix>/`, used marks under `<prefix>-used/`. */
  prefix: string;
  /** Blob kinds of an entry and of a used mark. */
  entryKind: string;
  usedKind: string;
  /** The entry field that holds the sealed secret (kept as the first flavour named it). */
  secretField: string;
  /** What an entry is, for messages. */
  noun: string;
  codes: PoolCodes;
  error: new (code: ErrorCode, message: string) => CustodyError;
  /** The binding as stored: a copy, signer set sorted, nothing else kept. */
  normalize(b: B): B;
  /** Undefined when `stored` serves `want` beyond epoch and signers; else why not (refused with `wrongPath`). */
  differs(stored: B, want: B): string | undefined;
  /** The secret's bytes; throws when `value` does not match the binding it is stored with. */
  encode(value: V, binding: B): Uint8Array;
  decode(bytes: Uint8Array): V;
  /** Zeroes a decoded value that is not handed out. */
  discard(value: V): void;
}

export interface PoolOptions {
  lifetimeMs?: number;
  maxPerKey?: number;
  now?: () => number;
}

type StoredEntry<B> = B & { keyId: string; entryId: string; createdAt: number; expiresAt: number } & Record<string, unknown>;

interface UsedMark {
  /** After this the mark is dropped: the entry would have expired by then anyway. */
  expiresAt: number;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const sameList = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export class SingleUsePool<B extends PoolBinding, V> {
  private readonly locks = new KeyedMutex();
  /** Entries (key id, NUL, entry id) a take has checked and is writing off: refused to any other. */
  private readonly taking = new Set<string>();
  private readonly lifetimeMs: number;
  readonly maxPerKey: number;
  private readonly now: () => number;

  constructor(private readonly store: SealedStore, private readonly flavor: PoolFlavor<B, V>, opts: Required<Pick<PoolOptions, 'lifetimeMs' | 'maxPerKey'>> & PoolOptions) {
    this.lifetimeMs = opts.lifetimeMs;
    this.maxPerKey = opts.maxPerKey;
    this.now = opts.now ?? Date.now;
  }

  private fail(code: keyof PoolCodes, message: string): never {
    throw new this.flavor.error(this.flavor.codes[code], message);
  }

  private entryKey(keyId: string, epoch: number, entryId: string): string {
    return `${this.flavor.prefix}/${keyId}/${epoch}/${entryId}`;
  }

  private usedKey(keyId: string, entryId: string): string {
    return `${this.flavor.prefix}-used/${keyId}/${entryId}`;
  }

  private checkEntryId(id: string): void {
    if (!ENTRY_ID.test(id)) this.fail('unknown', 'an entry id is 16 bytes of hex');
  }

  private secretOf(e: StoredEntry<B>): SecretBytes {
    return e[this.flavor.secretField] as SecretBytes;
  }

  /** Whether this node keeps entries at all: only over a store with a rollback anchor. */
  get enabled(): boolean {
    return this.store.anchored;
  }

  private requireAnchor(): void {
    if (!this.enabled) this.fail('unanchored', `this node has no rollback anchor (NODE_ROLLBACK_ANCHOR_FILE) and keeps no ${this.flavor.noun}s`);
  }

  /** The record names of a key's entries, with the epoch each is under. */
  private async entries(keyId: string): Promise<{ key: string; epoch: number; entryId: string }[]> {
    const out: { key: string; epoch: number; entryId: string }[] = [];
    const prefix = `${this.flavor.prefix}/${keyId}/`;
    for await (const key of this.store.keys(prefix)) {
      const rest = key.slice(prefix.length).split('/');
      if (rest.length !== 2) continue;
      out.push({ key, epoch: Number(rest[0]), entryId: rest[1]! });
    }
    return out;
  }

  private async read(key: string): Promise<StoredEntry<B> | undefined> {
    const raw = await this.store.getSecret(key);
    return raw ? decodeBlob<StoredEntry<B>>(this.flavor.entryKind, raw, { secrets: true }) : undefined;
  }

  /**
   * Deletes what can never be used: entries of another epoch than `epoch` (a reshare or refresh moved
   * the key on; their share is gone), expired entries and expired used marks. Under the key's lock. A
   * negative `epoch` says the node holds no share of the key: every entry and used mark of it goes.
   */
  async purge(keyId: string, epoch: number): Promise<number> {
    return this.locks.run(keyId, () => this.purgeLocked(keyId, epoch, true));
  }

  /**
   * The purge; used marks only with `marks` (the sweep): reading every mark of a key costs a read per
   * signing of the last day, too much for each admit, and no admit needs them gone.
   */
  private async purgeLocked(keyId: string, epoch: number, marks = false): Promise<number> {
    const now = this.now();
    const ops: BatchOp[] = [];
    for (const e of await this.entries(keyId)) {
      if (e.epoch !== epoch) {
        ops.push({ type: 'del', key: e.key });
        continue;
      }
      const entry = await this.read(e.key);
      if (entry && entry.expiresAt <= now) ops.push({ type: 'del', key: e.key });
      if (entry) this.secretOf(entry).zeroize();
    }
    // A used mark makes a second take of its id `used` rather than `unknown` and keeps the id from
    // being made again; neither protects a secret (the entry is deleted in the take's own batch, and
    // an entry made again under the id would hold fresh nonces), so the mark goes once the entry would
    // have expired, or at once when the node holds no share of the key any more.
    for await (const key of marks ? this.store.keys(`${this.flavor.prefix}-used/${keyId}/`) : []) {
      if (epoch < 0) {
        ops.push({ type: 'del', key });
        continue;
      }
      const raw = await this.store.get(key);
      if (raw && decodeBlob<UsedMark>(this.flavor.usedKind, raw).expiresAt <= now) ops.push({ type: 'del', key });
    }
    if (ops.length) await this.store.batch(ops);
    return ops.length;
  }

  /**
   * Purges every key that has entries or used marks here: `epochOf` says the key's current epoch
   * (undefined when the node holds no share of it any more, which drops all of the key's entries).
   */
  async sweep(epochOf: (keyId: string) => Promise<number | undefined>): Promise<number> {
    const keyIds = new Set<string>();
    for (const prefix of [`${this.flavor.prefix}/`, `${this.flavor.prefix}-used/`]) {
      for await (const key of this.store.keys(prefix)) {
        // Record names end in /<epoch>/<id> or /<id>: what precedes is the key id (which may hold '/').
        const parts = key.slice(prefix.length).split('/');
        keyIds.add(parts.slice(0, prefix.endsWith('-used/') ? -1 : -2).join('/'));
      }
    }
    let removed = 0;
    for (const keyId of keyIds) removed += await this.purge(keyId, (await epochOf(keyId)) ?? -1);
    return removed;
  }

  /** How many unexpired entries of `keyId` at `epoch` this node holds (after a purge). */
  async count(keyId: string, epoch: number): Promise<number> {
    return this.locks.run(keyId, async () => {
      await this.purgeLocked(keyId, epoch);
      return (await this.entries(keyId)).length;
    });
  }

  /** Whether `entryIds` may be made for the key at `epoch`: anchored, every id new, within the bound. */
  async admit(keyId: string, epoch: number, entryIds: string[]): Promise<void> {
    this.requireAnchor();
    await this.locks.run(keyId, async () => {
      await this.purgeLocked(keyId, epoch);
      await this.admitLocked(keyId, epoch, entryIds);
    });
  }

  private async admitLocked(keyId: string, epoch: number, entryIds: string[]): Promise<void> {
    if (new Set(entryIds).size !== entryIds.length) this.fail('exists', 'an entry id is named twice');
    for (const id of entryIds) {
      this.checkEntryId(id);
      if ((await this.store.get(this.usedKey(keyId, id))) || (await this.store.get(this.entryKey(keyId, epoch, id)))) this.fail('exists', `entry ${id} was made here before`);
    }
    const held = (await this.entries(keyId)).length;
    if (held + entryIds.length > this.maxPerKey) this.fail('full', `this node keeps at most ${this.maxPerKey} ${this.flavor.noun}s per key (holds ${held})`);
  }

  /** Seals new entries, all in one synced batch; resolves once they are on disk. */
  async put(keyId: string, binding: B, made: { entryId: string; value: V }[]): Promise<void> {
    this.requireAnchor();
    await this.locks.run(keyId, async () => {
      await this.purgeLocked(keyId, binding.epoch);
      await this.admitLocked(keyId, binding.epoch, made.map((m) => m.entryId));
      const createdAt = this.now();
      const bound = this.flavor.normalize(binding);
      const ops: BatchOp[] = made.map(({ entryId, value }) => {
        const secret = new SecretBytes(this.flavor.encode(value, binding));
        const entry = { keyId, entryId, ...bound, createdAt, expiresAt: createdAt + this.lifetimeMs, [this.flavor.secretField]: secret };
        const encoded = encodeBlob(this.flavor.entryKind, entry, { secrets: true });
        secret.zeroize();
        return { type: 'put', key: this.entryKey(keyId, binding.epoch, entryId), value: encoded, secret: true };
      });
      await this.store.batch(ops);
    });
  }

  /**
   * Refuses unless every entry exists, is unused, unexpired and bound to `want`, and `inspect` (given
   * the decoded values, which are zeroed after it) accepts them. Takes nothing.
   */
  async check(keyId: string, entryIds: string[], want: B, inspect?: (values: V[]) => void): Promise<void> {
    this.requireAnchor();
    await this.locks.run(keyId, async () => {
      const entries = await this.checkLocked(keyId, entryIds, want);
      try {
        if (inspect) this.inspected(entries, inspect);
      } finally {
        for (const e of entries) this.secretOf(e).zeroize();
      }
    });
  }

  private inspected(entries: StoredEntry<B>[], inspect: (values: V[]) => void): void {
    const values = entries.map((e) => this.flavor.decode(this.secretOf(e).expose()));
    try {
      inspect(values);
    } finally {
      for (const v of values) this.flavor.discard(v);
    }
  }

  private async checkLocked(keyId: string, entryIds: string[], want: B): Promise<StoredEntry<B>[]> {
    if (new Set(entryIds).size !== entryIds.length) this.fail('used', 'an entry id is named twice');
    const out: StoredEntry<B>[] = [];
    const wanted = this.flavor.normalize(want);
    try {
      for (const id of entryIds) {
        this.checkEntryId(id);
        if (this.taking.has(`${keyId}\u0000${id}`)) this.fail('used', `entry ${id} is being taken by another signing`);
        if (await this.store.get(this.usedKey(keyId, id))) this.fail('used', `entry ${id} was used before`);
        // Where the entry is when it is of the epoch asked; only when it is not there, a listing of the
        // key's entries tells an entry of another epoch from no entry at all.
        const direct = this.entryKey(keyId, want.epoch, id);
        let entry = await this.read(direct);
        if (!entry) {
          const found = (await this.entries(keyId)).find((e) => e.entryId === id);
          if (!found) this.fail('unknown', `no entry ${id} for this key here`);
          if (found.epoch !== want.epoch) this.fail('wrongEpoch', `entry ${id} was made at epoch ${found.epoch}, not ${want.epoch}`);
          entry = await this.read(found.key);
        }
        if (!entry) this.fail('unknown', `no entry ${id} for this key here`);
        out.push(entry);
        if (entry.keyId !== keyId || entry.entryId !== id || entry.epoch !== want.epoch) this.fail('unknown', `entry ${id} is not this key's`);
        if (entry.expiresAt <= this.now()) this.fail('expired', `entry ${id} expired`);
        if (!sameList(entry.signers, sorted(want.signers))) this.fail('wrongSigners', `entry ${id} was made for signers ${entry.signers.join(',')}`);
        const why = this.flavor.differs(entry, wanted);
        if (why) this.fail('wrongPath', `entry ${id} was made for ${why}`);
      }
    } catch (err) {
      for (const e of out) this.secretOf(e).zeroize();
      throw err;
    }
    return out;
  }

  /**
   * Takes the entries for one signing session: checks them as `check` does (with `inspect`), then
   * deletes every one and marks every id used in one synced batch, and only then decodes and returns
   * the values (in the order asked). Anything computed from them may leave the node once this resolved.
   */
  async take(keyId: string, entryIds: string[], want: B, inspect?: (values: V[]) => void): Promise<V[]> {
    const held = await this.reserve(keyId, entryIds, want, inspect);
    try {
      await this.store.batch(held.ops);
    } catch (err) {
      held.release();
      throw err;
    }
    return held.finish();
  }

  /**
   * The first half of `take`, for a caller that puts the take's write into a synced batch of its own
   * (the signing's claims: sign-authorization.ts). Checks the entries as `take` does and reserves them;
   * `ops` deletes them and marks them used. After that batch has landed, `finish` reads the used marks
   * back (refusing to hand anything out if they are not on disk) and returns the values; if the batch
   * is not written, `release` makes the entries usable again. One of the two must be called.
   */
  async reserve(keyId: string, entryIds: string[], want: B, inspect?: (values: V[]) => void): Promise<ReservedTake<V>> {
    this.requireAnchor();
    // Checked and reserved under the key's lock; written after it, so that the takes of concurrent
    // signings (other entries of the same key) reach the store together and share one synced write
    // (sealed-store.ts, group commit). A reserved id is refused to every other take and check until
    // its write has landed (then the used mark refuses it) or failed (then it is usable again).
    const reserved = entryIds.map((id) => `${keyId}\u0000${id}`);
    const entries = await this.locks.run(keyId, async () => {
      const found = await this.checkLocked(keyId, entryIds, want);
      for (const r of reserved) this.taking.add(r);
      return found;
    });
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      for (const e of entries) this.secretOf(e).zeroize();
      for (const r of reserved) this.taking.delete(r);
    };
    try {
      if (inspect) this.inspected(entries, inspect);
    } catch (err) {
      release();
      throw err;
    }
    const mark = encodeBlob(this.flavor.usedKind, { expiresAt: Math.max(...entries.map((e) => e.expiresAt)) } satisfies UsedMark);
    const ops: BatchOp[] = entries.flatMap((e) => [
      { type: 'del' as const, key: this.entryKey(keyId, e.epoch, e.entryId) },
      { type: 'put' as const, key: this.usedKey(keyId, e.entryId), value: mark },
    ]);
    return {
      ops,
      release,
      finish: async () => {
        if (done) throw new Error('a reserved take was finished twice or after its release');
        try {
          // Single use rests on this write: whatever batch carried it, the marks must be on disk now.
          for (const e of entries) {
            if (!(await this.store.get(this.usedKey(keyId, e.entryId))) || (await this.store.get(this.entryKey(keyId, e.epoch, e.entryId)))) {
              throw new Error(`entry ${e.entryId} was not written off before it was handed out`);
            }
          }
          return entries.map((e) => this.flavor.decode(this.secretOf(e).expose()));
        } finally {
          release();
        }
      },
    };
  }
}

/** A take checked and reserved, whose write the caller puts in its own synced batch (`SingleUsePool.reserve`). */
export interface ReservedTake<V> {
  ops: BatchOp[];
  /** After the batch with `ops` landed: the values, in the order asked. */
  finish(): Promise<V[]>;
  /** The batch was not written: the entries are usable again. */
  release(): void;
}

/**
 * What every flavour's store answers alike (ECDSA presignatures, FROST nonce pairs): its bound, whether
 * it keeps entries at all, and the purge, sweep, count and admission of its pool. Each flavour adds its
 * own `put`, `check` and `take`.
 */
export abstract class SingleUseStore<B extends PoolBinding, V> {
  protected constructor(protected readonly pool: SingleUsePool<B, V>) {}

  get maxPerKey(): number {
    return this.pool.maxPerKey;
  }

  /** Whether this node keeps entries at all: only over a store with a rollback anchor. */
  get enabled(): boolean {
    return this.pool.enabled;
  }

  /** Deletes entries of another epoch, expired entries and expired used marks. */
  purge(keyId: string, epoch: number): Promise<number> {
    return this.pool.purge(keyId, epoch);
  }

  /** Purges every key with entries here (at start and on a timer): expired, old epochs, keys no longer held. */
  sweep(epochOf: (keyId: string) => Promise<number | undefined>): Promise<number> {
    return this.pool.sweep(epochOf);
  }

  /** How many unexpired entries of `keyId` at `epoch` this node holds (after a purge). */
  count(keyId: string, epoch: number): Promise<number> {
    return this.pool.count(keyId, epoch);
  }

  /** Whether `entryIds` may be made for the key at `epoch`: a check before the making session runs; `put` checks again. */
  admit(keyId: string, epoch: number, entryIds: string[]): Promise<void> {
    return this.pool.admit(keyId, epoch, entryIds);
  }
}
