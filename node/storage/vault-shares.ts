// The node's vault shares and the marks that keep nonces single-use, in its sealed store. A vault has a
// current epoch and, during a reshare, a pending one; the committee each share belongs to is pinned
// with it (node ids and identity keys), so a coordinator cannot swap in other nodes later. Record names
// keep their `key/<vault>/…` form (docs/storage.md).
import type { BatchOp, SealedStore } from './sealed-store.ts';
import type { EndUserBinding } from '../runtime/authorization/sign-authorizer.ts';
import { decodeKeyShare, encodeKeyShare, type KeyShare } from '../protocols/keys/key-package.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import { decodeOtSetup, encodeOtSetup, mergeOtSetup, type EcdsaOtSetup } from '../protocols/ecdsa/ot-setup.ts';
import { decodeBlob, encodeBlob } from '../../core/codec/blob.ts';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { sessionIdTimeHex, sessionIdTimePrefix } from '../../core/session/session-id.ts';
import { PRUNE_MARGIN_MS, pruneRange, prunedBelow, raisePrunedBelow } from './range-pruning.ts';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { EpochReceipt } from '../../core/session/session-params.ts';
import type { InventoryKey } from '../../core/link/inventory.ts';

export interface PinnedMember {
  index: number;
  nodeId: string;
  signingKey: string;
  encryptionKey: string;
}

/** A reshare as its dealer recorded it (recordDealt). */
export interface DealtReshare {
  /** The new epoch's public package, as the reshare made it. */
  pkg: KeyPackage;
  /** The new committee, pinned from the session's parties. */
  committee: PinnedMember[];
}

export interface StoredShare {
  key: KeyShare;
  /** Organization that owns the key; intents must name it. */
  owner: string;
  committee: PinnedMember[];
  /** Tier the key was generated for (absent on keys from before nodes were told). */
  tier?: string | undefined;
  /** Hosted keys: whether signatures need an end-user token, and the bound end user (docs/trust.md). */
  endUser?: EndUserBinding | undefined;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One pair's OT material, named by its peer and the setup id of the run that made it. */
export interface OtPairId {
  peer: number;
  setupId: string;
}

/**
 * The OT pair record: which material is stored now (per peer, its pair setup id) and which material
 * must never be used again. Kept apart from the setup itself so a retirement is a small
 * read-merge-write under the key's lock, and no write of a setup snapshot taken earlier can clear it:
 * a retirement names the material it retires, and only a new setup of that pair replaces it.
 */
export interface OtRetirement {
  /** Per peer, the setup id of the stored material. */
  current: Record<string, string>;
  retired: OtPairId[];
  /** A version-1 record (one setup id for every pair) read as version 2: the id of every pair it names. */
  legacySetupId?: string;
}

/** The setup id of the material stored for `peer`, as `rec` names it. */
export const currentPairId = (rec: OtRetirement, peer: number): string | undefined => rec.current[String(peer)] ?? rec.legacySetupId;

/** Whether `rec` retires the pair material (peer, setupId). */
export const isRetired = (rec: OtRetirement, peer: number, setupId: string): boolean => rec.retired.some((r) => r.peer === peer && r.setupId === setupId);

const OT_RECORD_BLOB = 'ot-retirement/v2';

function decodeOtRecord(raw: Uint8Array): OtRetirement {
  try {
    const r = decodeBlob<OtRetirement>(OT_RECORD_BLOB, raw);
    return { current: { ...r.current }, retired: r.retired.map((x) => ({ peer: x.peer, setupId: x.setupId })) };
  } catch (err) {
    if (!(err instanceof CustodyError)) throw err;
    // Version 1: one setup for the whole committee, its retired peers listed by index.
    const v1 = decodeBlob<{ setupId: string; retired: number[] }>('ot-retirement', raw);
    return { current: {}, legacySetupId: v1.setupId, retired: v1.retired.map((peer) => ({ peer, setupId: v1.setupId })) };
  }
}

const encodeOtRecord = (rec: OtRetirement): Uint8Array => encodeBlob(OT_RECORD_BLOB, { current: rec.current, retired: rec.retired } satisfies OtRetirement);

/** Every VaultShareStore over one store shares its per-key locks: OT records change under them only. */
const storeLocks = new WeakMap<SealedStore, KeyedMutex>();

export class VaultShareStoreError extends CustodyError {
  declare readonly code: 'unknown_key' | 'session_reused' | 'session_expired' | 'no_pending' | 'epoch_mismatch';
  constructor(code: VaultShareStoreError['code'], message: string) {
    super(code, message);
    this.name = 'VaultShareStoreError';
  }
}

/** The receipts a node kept at its promotion (`key/<id>/current/receipts`), hex for the inventory. */
function receiptsOf(raw: Uint8Array | undefined): { party: number; signature: string }[] {
  if (!raw) return [];
  return decodeBlob<{ receipts: EpochReceipt[] }>('epoch-receipts', raw).receipts.map((r) => ({ party: r.party, signature: bytesToHex(r.signature) }));
}

export class VaultShareStore {
  /** Session ids claimed in this process but maybe not yet on disk: closes the check-then-write gap. */
  private readonly claiming = new Set<string>();

  private readonly locks: KeyedMutex;

  private readonly now: () => number;

  constructor(private readonly store: SealedStore, opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
    let locks = storeLocks.get(store);
    if (!locks) storeLocks.set(store, (locks = new KeyedMutex()));
    this.locks = locks;
  }

  private async read(keyId: string, slot: 'current' | 'pending'): Promise<StoredShare | undefined> {
    const [share, committee] = await Promise.all([this.store.getSecret(`key/${keyId}/${slot}/share`), this.store.get(`key/${keyId}/${slot}/committee`)]);
    if (!share || !committee) return undefined;
    const meta = JSON.parse(dec.decode(committee)) as { owner: string; committee: PinnedMember[]; tier?: string; endUser?: EndUserBinding };
    return { key: decodeKeyShare(share), owner: meta.owner, committee: meta.committee, ...(meta.tier ? { tier: meta.tier } : {}), ...(meta.endUser ? { endUser: meta.endUser } : {}) };
  }

  current(keyId: string): Promise<StoredShare | undefined> {
    return this.read(keyId, 'current');
  }

  pending(keyId: string): Promise<StoredShare | undefined> {
    return this.read(keyId, 'pending');
  }

  private ops(keyId: string, slot: 'current' | 'pending', k: StoredShare) {
    return [
      { type: 'put' as const, key: `key/${keyId}/${slot}/share`, value: encodeKeyShare(k.key), secret: true },
      { type: 'put' as const, key: `key/${keyId}/${slot}/committee`, value: enc.encode(JSON.stringify({ owner: k.owner, committee: k.committee, tier: k.tier, endUser: k.endUser })) },
    ];
  }

  /**
   * A fresh key from DKG: becomes current at once (there is no older epoch to protect). The creation
   * request that asked for it, if any, is bound to it in the same batch.
   */
  async putNew(keyId: string, k: StoredShare, creationHash?: string): Promise<void> {
    if (await this.current(keyId)) throw new VaultShareStoreError('epoch_mismatch', `key ${keyId} already exists here`);
    const bind = creationHash ? [{ type: 'put' as const, key: `creation/${creationHash}`, value: enc.encode(keyId) }] : [];
    await this.store.batch([...this.ops(keyId, 'current', k), ...bind]);
  }

  /** The key a creation request was used for, if any. */
  async creationBinding(creationHash: string): Promise<string | undefined> {
    const v = await this.store.get(`creation/${creationHash}`);
    return v ? dec.decode(v) : undefined;
  }

  async putPending(keyId: string, k: StoredShare): Promise<void> {
    await this.store.batch(this.ops(keyId, 'pending', k));
  }

  /**
   * What a dealer records of a reshare it dealt in, before its result leaves: the new epoch's public
   * package and the new committee pinned from that session, so that it can later check the new
   * committee's receipts itself (docs/sessions.md "Reshare, two phases").
   */
  async recordDealt(keyId: string, dealt: DealtReshare): Promise<void> {
    await this.store.put(`key/${keyId}/dealt`, enc.encode(JSON.stringify(dealt)));
  }

  /** The reshare this node last dealt in for `keyId`, if any. */
  async dealt(keyId: string): Promise<DealtReshare | undefined> {
    const raw = await this.store.get(`key/${keyId}/dealt`);
    return raw ? (JSON.parse(dec.decode(raw)) as DealtReshare) : undefined;
  }

  /**
   * Second phase of a reshare, for a receiver, in one batch: its pending epoch `epoch` becomes current,
   * and the old epoch's OT material goes (it belongs to the old committee: a fresh setup follows). The
   * caller has checked the new committee's receipts first; they are kept (public) so that a coordinator
   * rebuilding its records can send the commit again to a member that missed it.
   */
  async promote(keyId: string, epoch: number, receipts: readonly EpochReceipt[] = []): Promise<'promoted' | 'already'> {
    return this.locks.run(`ot/${keyId}`, async () => {
      const [pending, current] = await Promise.all([this.pending(keyId), this.current(keyId)]);
      if (current && current.key.pkg.epoch === epoch && !pending) return 'already';
      if (!pending || pending.key.pkg.epoch !== epoch) throw new VaultShareStoreError('no_pending', `no pending epoch ${epoch} for ${keyId}`);
      await this.store.batch([
        ...this.ops(keyId, 'current', pending),
        { type: 'del', key: `key/${keyId}/pending/share` },
        { type: 'del', key: `key/${keyId}/pending/committee` },
        { type: 'del', key: `key/${keyId}/dealt` },
        { type: 'del', key: `key/${keyId}/current/ot` },
        { type: 'del', key: `key/${keyId}/current/ot-retired` },
        { type: 'put', key: `key/${keyId}/current/receipts`, value: encodeBlob('epoch-receipts', { receipts: receipts.map((r) => ({ party: r.party, signature: r.signature })) }) },
      ]);
      return 'promoted';
    });
  }

  /**
   * Second phase of a reshare, for a dealer that is not in the new committee: its current share stops
   * serving at once but is kept sealed, apart, until `eraseAfterMs` (a retention window against a
   * reshare that turns out unusable), then erased by `eraseRetired`. The caller has checked the new
   * committee's receipts first.
   */
  async retire(keyId: string, epoch: number, eraseAfterMs: number): Promise<'removed' | 'already'> {
    return this.locks.run(`ot/${keyId}`, async () => {
      const current = await this.current(keyId);
      if (!current) return 'already';
      if (current.key.pkg.epoch >= epoch) throw new VaultShareStoreError('epoch_mismatch', `this node holds epoch ${current.key.pkg.epoch} of ${keyId}, not one before ${epoch}`);
      const old = current.key.pkg.epoch;
      await this.store.batch([
        { type: 'put', key: `retired/${keyId}/${old}/share`, value: encodeKeyShare(current.key), secret: true },
        { type: 'put', key: `retired/${keyId}/${old}/committee`, value: enc.encode(JSON.stringify({ owner: current.owner, committee: current.committee, tier: current.tier })) },
        { type: 'put', key: `retired/${keyId}/${old}/erase-after`, value: enc.encode(String(eraseAfterMs)) },
        { type: 'del', key: `key/${keyId}/current/share` },
        { type: 'del', key: `key/${keyId}/current/committee` },
        { type: 'del', key: `key/${keyId}/current/ot` },
        { type: 'del', key: `key/${keyId}/current/ot-retired` },
        { type: 'del', key: `key/${keyId}/current/receipts` },
        { type: 'del', key: `key/${keyId}/dealt` },
      ]);
      return 'removed';
    });
  }

  /**
   * What this node holds, public parts only (docs/transport.md "Inventory"): up to `limit` keys whose id
   * sorts after `after` (in the store's order), or exactly `keyIds` when given; `more` when the listing
   * stopped at `limit`. Never a share or OT material.
   */
  async inventory(q: { after?: string | undefined; limit: number; keyIds?: readonly string[] | undefined }): Promise<{ keys: InventoryKey[]; more: boolean }> {
    let ids: string[];
    let more = false;
    if (q.keyIds?.length) {
      ids = [...new Set(q.keyIds)].slice(0, q.limit);
    } else {
      // Record names sort as `<id>/…`, so ids are compared with the slash.
      const after = q.after ? `${q.after}/` : '';
      ids = [];
      for await (const k of this.store.keys('key/')) {
        const m = /^key\/(.+)\/(?:current|pending)\/committee$/.exec(k);
        if (!m || `${m[1]}/` <= after || ids.at(-1) === m[1]) continue;
        if (ids.length === q.limit) {
          more = true;
          break;
        }
        ids.push(m[1]!);
      }
    }
    const keys: InventoryKey[] = [];
    for (const keyId of ids) {
      const [current, pending, receipts] = await Promise.all([this.current(keyId), this.pending(keyId), this.store.get(`key/${keyId}/current/receipts`)]);
      const held = current ?? pending;
      if (!held) continue;
      keys.push({
        keyId, owner: held.owner, tier: held.tier ?? 'hosted',
        ...(current ? { current: { pkg: current.key.pkg, committee: current.committee, receipts: receiptsOf(receipts) } } : {}),
        ...(pending ? { pendingEpoch: pending.key.pkg.epoch } : {}),
      });
    }
    return { keys, more };
  }

  /** Erases every retired share whose retention ended by `nowMs`; returns how many. */
  async eraseRetired(nowMs: number): Promise<number> {
    const due = new Map<string, string[]>();
    for await (const k of this.store.keys('retired/')) {
      const base = k.slice(0, k.lastIndexOf('/'));
      due.set(base, [...(due.get(base) ?? []), k]);
    }
    let erased = 0;
    for (const [base, keys] of due) {
      const raw = await this.store.get(`${base}/erase-after`);
      const after = raw ? Number(dec.decode(raw)) : 0;
      if (after > nowMs) continue;
      await this.store.batch(keys.map((key) => ({ type: 'del' as const, key })));
      erased++;
    }
    return erased;
  }

  /**
   * The ECDSA OT setup stored with the current epoch (secret), if any, with every retirement recorded
   * for its current material merged in.
   */
  async ot(keyId: string): Promise<EcdsaOtSetup | undefined> {
    const [bytes, rec] = await Promise.all([this.store.getSecret(`key/${keyId}/current/ot`), this.otRetirement(keyId)]);
    if (!bytes) return undefined;
    const setup = decodeOtSetup(bytes);
    const retired = rec ? Object.entries(setup.peers).filter(([j, p]) => isRetired(rec, Number(j), p.setupId)).map(([j]) => Number(j)) : [];
    return { ...setup, retired: [...new Set([...setup.retired, ...retired])].sort((a, b) => a - b) };
  }

  /** The OT pair record of the current setup, read from the store (never from a snapshot). */
  async otRetirement(keyId: string): Promise<OtRetirement | undefined> {
    const raw = await this.store.getSecret(`key/${keyId}/current/ot-retired`);
    return raw ? decodeOtRecord(raw) : undefined;
  }

  /**
   * Merges the pairs of one setup run into the stored setup (mergeOtSetup): only the run's peers get
   * new material and lose their retirement; every other pair stays as it was, retired or not.
   */
  async putOt(keyId: string, run: EcdsaOtSetup): Promise<EcdsaOtSetup> {
    return this.locks.run(`ot/${keyId}`, async () => {
      const bytes = await this.store.getSecret(`key/${keyId}/current/ot`);
      const stored = bytes ? decodeOtSetup(bytes) : undefined;
      const merged = mergeOtSetup(stored, run);
      const before = stored?.epoch === run.epoch ? await this.otRetirement(keyId) : undefined;
      const current = Object.fromEntries(Object.entries(merged.peers).map(([j, p]) => [j, p.setupId]));
      // Retirements of material still stored stay; those of replaced material have nothing left to name.
      const retired = (before?.retired ?? []).filter((r) => current[String(r.peer)] === r.setupId);
      await this.store.batch([
        { type: 'put', key: `key/${keyId}/current/ot`, value: encodeOtSetup(merged), secret: true },
        { type: 'put', key: `key/${keyId}/current/ot-retired`, value: encodeOtRecord({ current, retired }), secret: true },
      ]);
      return merged;
    });
  }

  /**
   * Retires the OT material `pairs` name (peer and pair setup id), merged into the stored record under
   * the key's lock and on disk before this resolves. Retirements only accumulate: nothing but a new
   * setup of a pair (fresh keys and Δ) clears one. Material already replaced needs nothing.
   */
  async retireOtPairs(keyId: string, pairs: OtPairId[]): Promise<OtRetirement | undefined> {
    return this.locks.run(`ot/${keyId}`, async () => {
      const bytes = await this.store.getSecret(`key/${keyId}/current/ot`);
      if (!bytes) return undefined;
      const setup = decodeOtSetup(bytes);
      const before = await this.otRetirement(keyId);
      const current = Object.fromEntries(Object.entries(setup.peers).map(([j, p]) => [j, p.setupId]));
      const had = (before?.retired ?? []).filter((r) => current[String(r.peer)] === r.setupId);
      const named = pairs.filter((r) => r.peer !== setup.me && current[String(r.peer)] === r.setupId);
      const inBlob = setup.retired.filter((p) => current[String(p)]).map((peer) => ({ peer, setupId: current[String(peer)]! }));
      const retired: OtPairId[] = [];
      for (const r of [...inBlob, ...had, ...named]) if (!isRetired({ current, retired }, r.peer, r.setupId)) retired.push(r);
      retired.sort((a, b) => a.peer - b.peer);
      const record: OtRetirement = { current, retired };
      await this.store.putSecret(`key/${keyId}/current/ot-retired`, encodeOtRecord(record));
      return record;
    });
  }

  /**
   * Marks a signing session's nonces used, durably, before anything computed with them leaves the
   * node (a FROST signature share, any ECDSA presigning message; FROST's public nonce commitments may
   * precede it). A session id is accepted once, ever: its claim is kept until its deadline is long past,
   * and from its deadline on the id is refused by its time.
   */
  async claimSession(sessionId: string): Promise<void> {
    // On disk before anything that uses the session's nonces leaves: a mark lost to a crash would let
    // a restarted node run the same session id again.
    await this.store.batch(await this.reserveSession(sessionId));
  }

  /**
   * The first half of `claimSession`: refuses a session id used or being claimed before, reserves it in
   * this process, and returns the write that claims it on disk, for the caller to put in a synced batch
   * of its own (the intent ledger's) before anything that uses the session's nonces leaves. A reserved
   * id stays refused in this process even if that batch is never written.
   */
  async reserveSession(sessionId: string): Promise<BatchOp[]> {
    const k = `${CLAIM_PREFIX}${sessionId}`;
    // An id past its deadline may have had its claim pruned (pruneSessionClaims): refused here too, not
    // only by the session host, so that no claim is ever written for an id a pass may have forgotten.
    const deadline = sessionIdTimeHex(sessionId);
    if (deadline < BigInt(Math.floor(this.now()))) throw new VaultShareStoreError('session_expired', `this session id's deadline ${deadline} has passed`);
    if (this.claiming.has(sessionId) || (await this.store.get(k))) throw new VaultShareStoreError('session_reused', 'this session id was used before');
    // Read after the claim: a pass raises this bound on disk before it deletes, so a claim found
    // missing because a pass deleted it is caught here, whatever this node's clock says now.
    if (deadline < (await prunedBelow(this.store, 'session-claims'))) throw new VaultShareStoreError('session_expired', `this session id's deadline ${deadline} is below what this node has pruned`);
    this.claiming.add(sessionId);
    return [{ type: 'put', key: k, value: new Uint8Array([1]) }];
  }

  /**
   * Deletes the claims of session ids whose deadline is more than PRUNE_MARGIN_MS before `nowMs`: every
   * node refuses such an id at open (core/session/session-id.ts) and reserveSession refuses it, by its
   * time and by the bound this raises first, so its claim protects nothing. Ids sort by deadline, so
   * this is one key range. Returns how many went.
   */
  async pruneSessionClaims(nowMs: number): Promise<number> {
    const below = await raisePrunedBelow(this.store, 'session-claims', BigInt(Math.floor(nowMs - PRUNE_MARGIN_MS)));
    const pruned = await pruneRange(this.store, { gte: CLAIM_PREFIX, lt: CLAIM_PREFIX + sessionIdTimePrefix(below) });
    // Ids reserved in this process and long past need no place in memory either.
    for (const id of this.claiming) if (sessionIdTimeHex(id) < below) this.claiming.delete(id);
    return pruned;
  }
}

/** `used/<session id, hex>`: a claimed signing session. */
const CLAIM_PREFIX = 'used/';
