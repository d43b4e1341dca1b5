// The node's LevelDB store. Public values are stored as they are; secret values are sealed with
// XChaCha20-Poly1305 under the node storage key, with the record's key as associated data so a
// ciphertext cannot be moved to another record. Every multi-record change is one atomic batch.
//
// Every record, public or sealed, is also covered by an authenticated head (docs/storage.md): a sealed
// record holding a version that grows with every write, the record count, and a keyed set hash, the
// XOR of HMAC(record key, stored bytes) over all records (MSet-XOR-Hash, Clarke et al. 2003, keyed
// from the storage key: without the key nobody can compute or test it offline). On open the store
// recomputes it from what is on disk and refuses to open when a record was edited, removed, added or
// rolled back to an older value; every read checks the record against the digest the head accounts
// for. A rollback of the whole directory, head included, is caught by a rollback anchor kept
// elsewhere (rollback-anchor.ts), when one is configured.
//
// The bytes live in a KvBackend (kv-backend.ts): a LevelDB directory, or, for an enclave node, one kept by
// its untrusted parent (tee/host-store/). Nothing a backend answers is taken on trust: a value is checked
// against its digest, a listing against the keys the head accounts for.
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RollbackAnchor } from './rollback-anchor.ts';
import { inRange, type KvBackend, type KvRange } from './kv-backend.ts';
import { LevelDamage, LevelKvBackend } from './level-kv-backend.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { xchacha20Poly1305 } from '../../common/aead.ts';

const SEALED_VERSION = 1;
const NONCE_BYTES = 24;
const HEAD_VERSION = 1;
/** Sorts before every record key and is no record's name. */
const HEAD_KEY = '\u0000head';
/**
 * Where a remote backend keeps the node's sealed storage key (remote-sealed-key.ts): beside the records,
 * not one of them (it authenticates itself), and never written by the store.
 */
export const SEALED_KEY_RECORD = '\u0000sealed-storage-key';
const isReserved = (key: string) => key === HEAD_KEY || key === SEALED_KEY_RECORD;
const enc = new TextEncoder();

export class SealedStoreError extends CustodyError {
  declare readonly code: 'not_found' | 'unseal_failed' | 'bad_version' | 'tampered' | 'rolled_back' | 'unvouched_store' | 'store_damaged';
  constructor(code: SealedStoreError['code'], message: string) {
    super(code, message);
    this.name = 'SealedStoreError';
  }
}

type RawOp = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string };
/**
 * A group (one batch) takes writes while it stays within these; a single write larger than them goes
 * alone, as it would without grouping. They keep a group well inside what a remote backend takes in
 * one batch (tee/host-store/frame.ts: 4,096 operations, 16 MiB a frame).
 */
const GROUP_MAX_WRITES = 64;
const GROUP_MAX_OPS = 1024;
const GROUP_MAX_BYTES = 4 * 1024 * 1024;

const opBytes = (op: RawOp) => op.key.length + (op.type === 'put' ? op.value.length : 0);

export type BatchOp =
  | { type: 'put'; key: string; value: Uint8Array; secret?: boolean }
  | { type: 'del'; key: string };

export interface SealedStoreOptions {
  /** Where the head's version is also kept, off this disk (rollback-anchor.ts). */
  anchor?: RollbackAnchor;
  /**
   * Take a store that has records but no head (one written before heads existed) as it is, once. Off by
   * default: removing the head must not be a way to have an altered store adopted.
   */
  adoptUnheaded?: boolean;
  /**
   * Records whose reuse would leak a secret, which only the anchor keeps from coming back (OT setups and
   * their retirement records, pool entries made ahead). An open the anchor does not vouch for (a
   * written store with no anchor, an anchor that holds nothing: new, deleted, on a volume that came back
   * empty, in an enclave's memory across a restart; or one more than a version behind the head) proves
   * nothing about the store not being an older copy: every record `discardUnvouched` picks is deleted,
   * in one synced write, before the store is returned.
   */
  discardUnvouched?: (key: string) => boolean;
  /**
   * Refuse an open the anchor does not vouch for (`unvouched_store`) instead of discarding: a node
   * outside development mode, unless its operator overrode it for this start.
   */
  requireVouched?: boolean;
}

interface Head {
  version: bigint;
  count: number;
  acc: Uint8Array;
}

export class SealedStore {
  /** A write in flight adds its new digest here, until it is on disk (undefined: a deletion). */
  private readonly pending = new Map<string, Digest | undefined>();
  /** Writes waiting for the one on its way to disk; the flush loop takes them as one group. */
  private readonly queued: { ops: RawOp[]; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    /** Digest of every record as the head accounts for it. */
    private readonly digests: Map<string, Digest>,
    private readonly db: KvBackend,
    private readonly storageKey: Uint8Array,
    private readonly macKey: Uint8Array,
    private head: Head,
    private readonly anchor: RollbackAnchor | undefined,
    /** True when the store had records but no head yet (written before heads existed) and was adopted. */
    readonly adopted: boolean,
  ) {}

  /** The store in the LevelDB directory `dir`. */
  static async open(dir: string, storageKey: Uint8Array, opts: SealedStoreOptions = {}): Promise<SealedStore> {
    return SealedStore.openOn(new LevelKvBackend(dir), storageKey, opts);
  }

  /** The store kept by `db`, which this opens and, from then on, owns (close() closes it). */
  static async openOn(db: KvBackend, storageKey: Uint8Array, opts: SealedStoreOptions = {}): Promise<SealedStore> {
    if (storageKey.length !== 32) throw new Error('storage key must be 32 bytes');
    const macKey = hkdf(sha256, storageKey, undefined, enc.encode('custody/store/record-mac/v1'), 32);
    await db.open().catch((err: unknown) => {
      if (err instanceof LevelDamage) throw new SealedStoreError('store_damaged', `${err.message}. Restore the data directory from a copy, with the rollback anchor that goes with it (docs/storage.md "Damage")`);
      throw err;
    });
    try {
      const digests = new Map<string, Digest>();
      const acc = new Uint8Array(32);
      for await (const [key, value] of db.entries()) {
        if (isReserved(key)) continue;
        // A backend that answers a key twice is not a store this head can account for.
        if (digests.has(key)) throw tampered(key);
        const d = recordDigest(macKey, key, value);
        digests.set(key, asDigest(d));
        xorInto(acc, d);
      }
      const headBlob = await db.get(HEAD_KEY);
      let head: Head;
      let adopted = false;
      if (headBlob === undefined) {
        head = { version: 0n, count: digests.size, acc };
        adopted = digests.size > 0;
        if (adopted && !opts.adoptUnheaded) {
          throw new SealedStoreError('tampered', 'the store has records but no authenticated head: it was removed, or the store predates heads (then open it once with adoption allowed: NODE_STORE_ADOPT=true)');
        }
      } else {
        try {
          head = decodeHead(unsealWith(storageKey, HEAD_KEY, headBlob));
        } catch (err) {
          if (err instanceof SealedStoreError && err.code === 'unseal_failed') throw new SealedStoreError('unseal_failed', 'the store\'s head does not open under this storage key: is it the key this store was made with?');
          throw err;
        }
        if (head.count !== digests.size || !timingSafeEqual(head.acc, acc)) {
          throw new SealedStoreError('tampered', 'the store\'s records do not match its authenticated head: a record was edited, removed, added or rolled back');
        }
      }
      let unvouched: string | undefined;
      const anchored = opts.anchor ? await opts.anchor.read() : undefined;
      if (anchored !== undefined && anchored > head.version) {
        if (headBlob === undefined && digests.size === 0) {
          throw new SealedStoreError('rolled_back', `the store is empty but its rollback anchor says version ${anchored}: its records were deleted (or this is not the store the anchor belongs to). Restore the data directory; a node started on an empty store would be a new node`);
        }
        throw new SealedStoreError('rolled_back', `the store is at version ${head.version} but its rollback anchor says ${anchored}: the data directory was restored from an older copy, or its last writes were lost (a truncated or deleted write-ahead log)`);
      }
      // A store never written needs no voucher; one version behind is a crash between the store's write
      // and the anchor's (rollback-anchor.ts), which the anchor catches up on below.
      if (head.version > 0n) {
        if (!opts.anchor) unvouched = 'no rollback anchor is configured';
        else if (anchored === undefined) unvouched = 'the rollback anchor holds nothing (new, deleted, or on storage that came back empty)';
        else if (head.version - anchored > 1n) unvouched = `the rollback anchor says version ${anchored}, ${head.version - anchored} behind the store's ${head.version}`;
      }
      if (unvouched && opts.requireVouched) {
        throw new SealedStoreError('unvouched_store', `${unvouched}: nothing shows this store is not an older copy. Restore the anchor that goes with it, or start the node once with NODE_STORE_ACCEPT_UNVOUCHED=true, which deletes its OT setups and the presignatures and nonces made ahead (docs/storage.md "Rollback anchor")`);
      }
      const store = new SealedStore(digests, db, storageKey, macKey, head, opts.anchor, adopted);
      store.unvouched = unvouched;
      const pick = opts.discardUnvouched;
      const drop = unvouched && pick ? [...digests.keys()].filter((k) => pick(k)) : [];
      store.droppedUnanchored = drop.length;
      // A store from before heads existed gets one now; single-use entries no anchor vouches for go; an
      // anchor behind the head (a crash between the two writes) catches up.
      if (adopted || drop.length > 0) await store.commit(drop.map((key) => ({ type: 'del' as const, key })));
      else if (opts.anchor) await opts.anchor.write(head.version);
      return store;
    } catch (err) {
      await db.close();
      throw err;
    }
  }

  /**
   * How many records the open deleted because the anchor did not vouch for it (`discardUnvouched`); 0
   * otherwise.
   */
  droppedUnanchored = 0;

  /** Why the anchor did not vouch for this open, when it did not. */
  unvouched: string | undefined;

  /** Whether a rollback anchor kept elsewhere guards this store (what single-use material at rest needs). */
  get anchored(): boolean {
    return this.anchor !== undefined;
  }

  /** Whether the store holds nothing and was never written: a new store, or one whose files were deleted. */
  get empty(): boolean {
    return this.head.version === 0n && this.digests.size === 0;
  }

  /** The head's version: grows by one with every write. */
  get version(): bigint {
    return this.head.version;
  }

  private seal(key: string, plaintext: Uint8Array): Uint8Array {
    const nonce = new Uint8Array(randomBytes(NONCE_BYTES));
    const ct = xchacha20Poly1305.seal(this.storageKey, nonce, enc.encode(key), plaintext);
    const out = new Uint8Array(1 + NONCE_BYTES + ct.length);
    out[0] = SEALED_VERSION;
    out.set(nonce, 1);
    out.set(ct, 1 + NONCE_BYTES);
    return out;
  }

  /** The stored bytes of `key`, checked against the digest the head accounts for. */
  private async read(key: string): Promise<Uint8Array | undefined> {
    if (isReserved(key)) throw new SealedStoreError('not_found', 'not a record');
    const raw = await this.db.get(key);
    const expected = this.digests.get(key);
    const inFlight = this.pending.has(key);
    const next = this.pending.get(key);
    if (raw === undefined) {
      if (expected && !(inFlight && next === undefined)) throw tampered(key);
      return undefined;
    }
    const d = recordDigest(this.macKey, key, raw);
    const ok = (expected !== undefined && timingSafeEqual(d, digestBytes(expected))) || (next !== undefined && timingSafeEqual(d, digestBytes(next)));
    if (!ok) throw tampered(key);
    return raw;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return this.read(key);
  }

  async getSecret(key: string): Promise<Uint8Array | undefined> {
    const blob = await this.read(key);
    return blob === undefined ? undefined : unsealWith(this.storageKey, key, blob);
  }

  /** A public record, on disk (fsync) with the head before this resolves. */
  async put(key: string, value: Uint8Array): Promise<void> {
    await this.batch([{ type: 'put', key, value }]);
  }

  /** A sealed record, on disk (fsync) with the head before this resolves. */
  async putSecret(key: string, value: Uint8Array): Promise<void> {
    await this.batch([{ type: 'put', key, value, secret: true }]);
  }

  /** Applies every operation or none, with the new head, on disk (fsync) before this resolves. */
  async batch(ops: BatchOp[]): Promise<void> {
    for (const op of ops) if (isReserved(op.key)) throw new SealedStoreError('not_found', 'not a record');
    await this.commit(ops.map((op) => (op.type === 'del' ? op : { type: 'put' as const, key: op.key, value: op.secret ? this.seal(op.key, op.value) : op.value })));
  }

  /**
   * Writes are serialized: each moves the head from the version the previous one left. Writes that
   * arrive while one is on its way to disk wait, then go down together (group commit): their operations,
   * in arrival order, in one atomic batch with one new head, one sync and one anchor update, and each
   * caller resolves once that batch is on disk. A caller's own operations stay all-or-nothing; the
   * group only adds others' to the same atomic write, so under load a node pays one sync for many
   * claims instead of one each.
   */
  private commit(ops: RawOp[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ ops, resolve, reject });
      if (!this.flushing) this.writes = this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queued.length > 0) {
        const group = this.takeGroup();
        try {
          await this.write(group.flatMap((w) => w.ops));
          for (const w of group) w.resolve();
        } catch (err) {
          for (const w of group) w.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The longest prefix of the queue within the group limits, and at least its first write. */
  private takeGroup(): typeof this.queued {
    let n = 0;
    let ops = 0;
    let bytes = 0;
    for (const w of this.queued) {
      const b = w.ops.reduce((sum, op) => sum + opBytes(op), 0);
      if (n > 0 && (n >= GROUP_MAX_WRITES || ops + w.ops.length > GROUP_MAX_OPS || bytes + b > GROUP_MAX_BYTES)) break;
      n++;
      ops += w.ops.length;
      bytes += b;
    }
    return this.queued.splice(0, n);
  }

  private async write(ops: RawOp[]): Promise<void> {
    const acc = new Uint8Array(this.head.acc);
    let count = this.head.count;
    const changes = new Map<string, Digest | undefined>();
    for (const op of ops) {
      const old = changes.has(op.key) ? changes.get(op.key) : this.digests.get(op.key);
      if (old !== undefined) {
        xorInto(acc, digestBytes(old));
        count--;
      }
      if (op.type === 'put') {
        const d = recordDigest(this.macKey, op.key, op.value);
        xorInto(acc, d);
        count++;
        changes.set(op.key, asDigest(d));
      } else changes.set(op.key, undefined);
    }
    const head: Head = { version: this.head.version + 1n, count, acc };
    for (const [k, d] of changes) this.pending.set(k, d);
    try {
      await this.db.batch([...ops, { type: 'put', key: HEAD_KEY, value: this.seal(HEAD_KEY, encodeHead(head)) }], { sync: true });
      for (const [k, d] of changes) {
        if (d !== undefined) this.digests.set(k, d);
        else this.digests.delete(k);
      }
      this.head = head;
    } finally {
      for (const k of changes.keys()) this.pending.delete(k);
    }
    await this.anchor?.write(head.version);
  }

  /**
   * Record keys under `prefix` (or in a range of keys), in order: only records the head accounts for,
   * and every record it accounts for that was there when the listing began and still is when it ends
   * (so a backend cannot hide one by leaving it out).
   */
  async *keys(prefixOrRange: string | KvRange): AsyncGenerator<string> {
    const range = typeof prefixOrRange === 'string' ? { gte: prefixOrRange, lt: prefixOrRange + '\xff' } : prefixOrRange;
    // Every key of the range starts with what its two bounds share: a cheap test before the exact one.
    const common = sharedPrefix(range.gte, range.lt);
    const within = (k: string) => k.startsWith(common) && inRange(k, range);
    const expected: string[] = [];
    for (const k of this.digests.keys()) if (within(k) && !this.pending.has(k)) expected.push(k);
    // Accounted for when the listing began: a write that lands while it runs may delete one of these,
    // and the backend's listing may still show it; that one is skipped, not taken for tampering.
    const known = new Set(expected);
    for (const k of this.pending.keys()) if (within(k)) known.add(k);
    const seen = new Set<string>();
    for await (const k of this.db.keys(range)) {
      if (isReserved(k)) continue;
      if (!this.digests.has(k) && !this.pending.has(k)) {
        if (known.has(k)) continue;
        throw tampered(k);
      }
      seen.add(k);
      yield k;
    }
    for (const k of expected) if (!seen.has(k) && this.digests.has(k) && !this.pending.has(k)) throw tampered(k);
  }

  /** Raw bytes as stored (for tests that prove secrets are not stored in the clear). */
  async raw(key: string): Promise<Uint8Array | undefined> {
    return this.db.get(key);
  }

  async close(): Promise<void> {
    await this.writes;
    await this.db.close();
  }
}

function sharedPrefix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  // Not into a surrogate pair: a prefix ends on a whole character.
  if (i > 0 && /[\ud800-\udbff]/.test(a[i - 1]!)) i--;
  return a.slice(0, i);
}

function tampered(key: string): SealedStoreError {
  return new SealedStoreError('tampered', `record ${key} is not the one the store's authenticated head accounts for`);
}

function unsealWith(storageKey: Uint8Array, key: string, blob: Uint8Array): Uint8Array {
  if (blob[0] !== SEALED_VERSION) throw new SealedStoreError('bad_version', `sealed record ${key} has unknown version ${blob[0]}`);
  try {
    return xchacha20Poly1305.open(storageKey, blob.subarray(1, 1 + NONCE_BYTES), enc.encode(key), blob.subarray(1 + NONCE_BYTES));
  } catch {
    throw new SealedStoreError('unseal_failed', `sealed record ${key} does not open under this storage key`);
  }
}

/** HMAC-SHA-256 under the store's record key of (u32 length ‖ record key ‖ stored bytes). */
function recordDigest(macKey: Uint8Array, key: string, value: Uint8Array): Buffer {
  // update() copies what it is given at once, so one length buffer serves every call.
  lengthPrefix.writeUInt32BE(Buffer.byteLength(key, 'utf8'));
  return createHmac('sha256', macKey).update(lengthPrefix).update(key, 'utf8').update(value).digest();
}
const lengthPrefix = Buffer.alloc(4);

/**
 * A digest as kept in memory: its 32 bytes as a 32-character latin1 string. A string of one-byte
 * characters costs about a third of a Uint8Array and its buffer, for each of possibly millions of records.
 */
type Digest = string;
const asDigest = (d: Buffer): Digest => d.toString('latin1');
const digestBytes = (d: Digest): Buffer => Buffer.from(d, 'latin1');

function xorInto(acc: Uint8Array, d: Uint8Array): void {
  for (let i = 0; i < acc.length; i++) acc[i]! ^= d[i]!;
}

/** Head bytes: version byte, u64 version, u32 record count, 32-byte set hash. */
function encodeHead(h: Head): Uint8Array {
  const out = new Uint8Array(1 + 8 + 4 + 32);
  const v = new DataView(out.buffer);
  out[0] = HEAD_VERSION;
  v.setBigUint64(1, h.version);
  v.setUint32(9, h.count);
  out.set(h.acc, 13);
  return out;
}

function decodeHead(b: Uint8Array): Head {
  if (b.length !== 45 || b[0] !== HEAD_VERSION) throw new SealedStoreError('bad_version', 'the store head has an unknown format');
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { version: v.getBigUint64(1), count: v.getUint32(9), acc: b.slice(13) };
}
