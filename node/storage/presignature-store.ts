// The node's pool of ECDSA presignatures made ahead of a signing request (docs/protocols/pools.md), in
// its sealed store. An entry is one DKLs23 presignature of this node, sealed under
// `presig/<key>/<epoch>/<entry id>` with its binding: the key epoch, the signer set and the derivation
// path it was made for, and the public key it signs under. Single use is kept by the store, not by the
// coordinator: `take` deletes the entry and writes a used mark (`presig-used/<key>/<entry id>`) in one
// synced batch, under the key's lock, before it hands the presignature out, so nothing derived from it
// can leave first, a second take of the id is refused, and a restarted node finds it used.
//
// Only a node with a rollback anchor keeps entries (docs/storage.md): without one, a data directory put
// back from an older copy would hold entries already used. Such a node refuses to make or use them
// (`presignature_pool_unanchored`) and signs with the full protocol.
import { decodeBlob, encodeBlob } from '../../core/codec/blob.ts';
import { SecretBytes } from '../../core/codec/secret.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import { decodePresignature, type Presignature } from '../protocols/ecdsa/presignature.ts';
import type { BatchOp, SealedStore } from './sealed-store.ts';

/** Entry ids: 128 random bits, hex. */
export const ENTRY_ID = /^[0-9a-f]{32}$/;
/** How long an entry may wait for its request: a pool is secret material at rest. */
export const PRESIGNATURE_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** How many entries a node keeps per key (every epoch, path and signer set together). */
export const PRESIGNATURES_PER_KEY = 64;

export type PresignatureRefusal =
  | 'presignature_pool_unanchored'
  | 'presignature_pool_full'
  | 'presignature_exists'
  | 'presignature_unknown'
  | 'presignature_used'
  | 'presignature_expired'
  | 'presignature_wrong_epoch'
  | 'presignature_wrong_signers'
  | 'presignature_wrong_path';

export class PresignatureStoreError extends CustodyError {
  declare readonly code: PresignatureRefusal;
  constructor(code: PresignatureRefusal, message: string) {
    super(code, message);
    this.name = 'PresignatureStoreError';
  }
}

/** What an entry was made for; a signing session must name exactly this to use it. */
export interface PresignatureBinding {
  epoch: number;
  /** Party indices of the signer set (stored sorted). */
  signers: number[];
  path: number[];
  /** The (derived) public key the presignature signs under. */
  publicKey: string;
}

interface StoredEntry extends PresignatureBinding {
  keyId: string;
  entryId: string;
  createdAt: number;
  expiresAt: number;
  presignature: SecretBytes;
}

interface UsedMark {
  /** After this the mark is dropped: the entry would have expired by then anyway. */
  expiresAt: number;
}

export interface PresignatureStoreOptions {
  lifetimeMs?: number;
  maxPerKey?: number;
  now?: () => number;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const sameList = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const entryKey = (keyId: string, epoch: number, entryId: string) => `presig/${keyId}/${epoch}/${entryId}`;
const usedKey = (keyId: string, entryId: string) => `presig-used/${keyId}/${entryId}`;

function checkEntryId(id: string): void {
  if (!ENTRY_ID.test(id)) throw new PresignatureStoreError('presignature_unknown', 'an entry id is 16 bytes of hex');
}

export class PresignatureStore {
  private readonly locks = new KeyedMutex();
  private readonly lifetimeMs: number;
  readonly maxPerKey: number;
  private readonly now: () => number;

  constructor(private readonly store: SealedStore, opts: PresignatureStoreOptions = {}) {
    this.lifetimeMs = opts.lifetimeMs ?? PRESIGNATURE_LIFETIME_MS;
    this.maxPerKey = opts.maxPerKey ?? PRESIGNATURES_PER_KEY;
    this.now = opts.now ?? Date.now;
  }

  /** Whether this node keeps presignatures at all: only over a store with a rollback anchor. */
  get enabled(): boolean {
    return this.store.anchored;
  }

  private requireAnchor(): void {
    if (!this.enabled) throw new PresignatureStoreError('presignature_pool_unanchored', 'this node has no rollback anchor (NODE_ROLLBACK_ANCHOR_FILE) and keeps no presignatures');
  }

  /** The record names of a key's entries, with the epoch each is under. */
  private async entries(keyId: string): Promise<{ key: string; epoch: number; entryId: string }[]> {
    const out: { key: string; epoch: number; entryId: string }[] = [];
    const prefix = `presig/${keyId}/`;
    for await (const key of this.store.keys(prefix)) {
      const rest = key.slice(prefix.length).split('/');
      if (rest.length !== 2) continue;
      out.push({ key, epoch: Number(rest[0]), entryId: rest[1]! });
    }
    return out;
  }

  private async read(key: string): Promise<StoredEntry | undefined> {
    const raw = await this.store.getSecret(key);
    return raw ? decodeBlob<StoredEntry>('presignature-entry', raw, { secrets: true }) : undefined;
  }

  /**
   * Deletes what can never be used: entries of another epoch than `epoch` (a reshare or refresh moved
   * the key on; their share is gone), expired entries and expired used marks. Under the key's lock.
   */
  async purge(keyId: string, epoch: number): Promise<number> {
    return this.locks.run(keyId, () => this.purgeLocked(keyId, epoch));
  }

  private async purgeLocked(keyId: string, epoch: number): Promise<number> {
    const now = this.now();
    const ops: BatchOp[] = [];
    for (const e of await this.entries(keyId)) {
      if (e.epoch !== epoch) {
        ops.push({ type: 'del', key: e.key });
        continue;
      }
      const entry = await this.read(e.key);
      if (entry && entry.expiresAt <= now) ops.push({ type: 'del', key: e.key });
      entry?.presignature.zeroize();
    }
    for await (const key of this.store.keys(`presig-used/${keyId}/`)) {
      const raw = await this.store.get(key);
      if (raw && decodeBlob<UsedMark>('presignature-used', raw).expiresAt <= now) ops.push({ type: 'del', key });
    }
    if (ops.length) await this.store.batch(ops);
    return ops.length;
  }

  /**
   * Purges every key that has entries or used marks here: `epochOf` says the key's current epoch
   * (undefined when the node holds no share of it any more, which drops all of the key's entries).
   * Run at start and on a timer, so entries expire and old epochs' entries go even for keys no
   * session names again.
   */
  async sweep(epochOf: (keyId: string) => Promise<number | undefined>): Promise<number> {
    const keyIds = new Set<string>();
    for (const prefix of ['presig/', 'presig-used/']) {
      for await (const key of this.store.keys(prefix)) {
        const rest = key.slice(prefix.length);
        // Record names end in /<epoch>/<id> or /<id>: what precedes is the key id (which may hold '/').
        const parts = rest.split('/');
        keyIds.add(parts.slice(0, prefix === 'presig/' ? -2 : -1).join('/'));
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

  /**
   * Whether `entryIds` may be made for the key at `epoch`: the node keeps entries, every id is new (never
   * made or used here) and the key's entries stay within the bound. A check before a presign session
   * runs; `put` checks again.
   */
  async admit(keyId: string, epoch: number, entryIds: string[]): Promise<void> {
    this.requireAnchor();
    await this.locks.run(keyId, async () => {
      await this.purgeLocked(keyId, epoch);
      await this.admitLocked(keyId, epoch, entryIds);
    });
  }

  private async admitLocked(keyId: string, epoch: number, entryIds: string[]): Promise<void> {
    if (new Set(entryIds).size !== entryIds.length) throw new PresignatureStoreError('presignature_exists', 'an entry id is named twice');
    for (const id of entryIds) {
      checkEntryId(id);
      if ((await this.store.get(usedKey(keyId, id))) || (await this.store.get(entryKey(keyId, epoch, id)))) {
        throw new PresignatureStoreError('presignature_exists', `entry ${id} was made here before`);
      }
    }
    const held = (await this.entries(keyId)).length;
    if (held + entryIds.length > this.maxPerKey) throw new PresignatureStoreError('presignature_pool_full', `this node keeps at most ${this.maxPerKey} presignatures per key (holds ${held})`);
  }

  /** Seals new entries, all in one synced batch; resolves once they are on disk. */
  async put(keyId: string, binding: PresignatureBinding, made: { entryId: string; presignature: Presignature }[]): Promise<void> {
    this.requireAnchor();
    await this.locks.run(keyId, async () => {
      await this.purgeLocked(keyId, binding.epoch);
      await this.admitLocked(keyId, binding.epoch, made.map((m) => m.entryId));
      const createdAt = this.now();
      const ops: BatchOp[] = made.map(({ entryId, presignature }) => {
        if (presignature.publicKey !== binding.publicKey || !sameList(sorted(presignature.signers), sorted(binding.signers))) {
          throw new Error('a presignature does not match the binding it is stored with');
        }
        const entry: StoredEntry = {
          keyId, entryId, epoch: binding.epoch, signers: sorted(binding.signers), path: [...binding.path], publicKey: binding.publicKey,
          createdAt, expiresAt: createdAt + this.lifetimeMs, presignature: new SecretBytes(presignature.encode()),
        };
        const value = encodeBlob('presignature-entry', entry, { secrets: true });
        entry.presignature.zeroize();
        return { type: 'put', key: entryKey(keyId, binding.epoch, entryId), value, secret: true };
      });
      await this.store.batch(ops);
    });
  }

  /** Refuses unless every entry exists, is unused, unexpired and bound to `want`. Takes nothing. */
  async check(keyId: string, entryIds: string[], want: PresignatureBinding): Promise<void> {
    this.requireAnchor();
    await this.locks.run(keyId, async () => {
      for (const e of await this.checkLocked(keyId, entryIds, want)) e.presignature.zeroize();
    });
  }

  private async checkLocked(keyId: string, entryIds: string[], want: PresignatureBinding): Promise<StoredEntry[]> {
    if (new Set(entryIds).size !== entryIds.length) throw new PresignatureStoreError('presignature_used', 'an entry id is named twice');
    const out: StoredEntry[] = [];
    try {
      for (const id of entryIds) {
        checkEntryId(id);
        if (await this.store.get(usedKey(keyId, id))) throw new PresignatureStoreError('presignature_used', `entry ${id} was used before`);
        const found = (await this.entries(keyId)).find((e) => e.entryId === id);
        if (!found) throw new PresignatureStoreError('presignature_unknown', `no entry ${id} for this key here`);
        if (found.epoch !== want.epoch) throw new PresignatureStoreError('presignature_wrong_epoch', `entry ${id} was made at epoch ${found.epoch}, not ${want.epoch}`);
        const entry = await this.read(found.key);
        if (!entry) throw new PresignatureStoreError('presignature_unknown', `no entry ${id} for this key here`);
        out.push(entry);
        if (entry.keyId !== keyId || entry.entryId !== id || entry.epoch !== want.epoch) throw new PresignatureStoreError('presignature_unknown', `entry ${id} is not this key's`);
        if (entry.expiresAt <= this.now()) throw new PresignatureStoreError('presignature_expired', `entry ${id} expired`);
        if (!sameList(entry.signers, sorted(want.signers))) throw new PresignatureStoreError('presignature_wrong_signers', `entry ${id} was made for signers ${entry.signers.join(',')}`);
        if (!sameList(entry.path, want.path) || entry.publicKey !== want.publicKey) throw new PresignatureStoreError('presignature_wrong_path', `entry ${id} was made for another derivation path`);
      }
    } catch (err) {
      for (const e of out) e.presignature.zeroize();
      throw err;
    }
    return out;
  }

  /**
   * Takes the entries for one signing session: checks them as `check` does, then deletes every one and
   * marks every id used in one synced batch, and only then decodes and returns the presignatures (in
   * the order asked). Anything computed from them may leave the node once this resolved.
   */
  async take(keyId: string, entryIds: string[], want: PresignatureBinding): Promise<Presignature[]> {
    this.requireAnchor();
    return this.locks.run(keyId, async () => {
      const entries = await this.checkLocked(keyId, entryIds, want);
      const mark = encodeBlob('presignature-used', { expiresAt: Math.max(...entries.map((e) => e.expiresAt)) } satisfies UsedMark);
      const ops: BatchOp[] = entries.flatMap((e) => [
        { type: 'del' as const, key: entryKey(keyId, e.epoch, e.entryId) },
        { type: 'put' as const, key: usedKey(keyId, e.entryId), value: mark },
      ]);
      try {
        await this.store.batch(ops);
        return entries.map((e) => decodePresignature(e.presignature.expose()));
      } finally {
        for (const e of entries) e.presignature.zeroize();
      }
    });
  }
}
