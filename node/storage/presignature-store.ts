// The node's pool of ECDSA presignatures made ahead of a signing request (docs/protocols/pools.md), in
// its sealed store. An entry is one DKLs23 presignature of this node, sealed under
// `presig/<key>/<epoch>/<entry id>` with its binding: the key epoch, the signer set and the derivation
// path it was made for, and the public key it signs under. Single use is kept by the store, not by the
// coordinator: `take` deletes the entry and writes a used mark (`presig-used/<key>/<entry id>`) in one
// synced batch (checked and reserved under the key's lock), before it hands the presignature out, so nothing derived from it
// can leave first, a second take of the id is refused, and a restarted node finds it used.
//
// The pool's machinery (records, locks, purge, take) is shared with FROST's precommitted nonces:
// single-use-pool.ts. Only a node with a rollback anchor keeps entries (docs/storage.md): without one, a data directory put
// back from an older copy would hold entries already used. Such a node refuses to make or use them
// (`presignature_pool_unanchored`) and signs with the full protocol.
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodePresignature, type Presignature } from '../protocols/ecdsa/presignature.ts';
import type { Primitives } from '../protocols/math/primitives.ts';
import type { SealedStore } from './sealed-store.ts';
import { SingleUsePool, SingleUseStore, type PoolFlavor, type PoolOptions, type ReservedTake } from './single-use-pool.ts';

/** Where the entries are kept (`presig/<key>/<epoch>/<id>`): dropped at open when the anchor holds nothing (sealed-store.ts). */
export const PRESIGNATURE_PREFIX = 'presig';
export { ENTRY_ID } from './single-use-pool.ts';
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

export interface PresignatureStoreOptions extends PoolOptions {
  /** What checks a taken entry's points (the reference by default; the node passes its native ones). */
  primitives?: Pick<Primitives, 'point'>;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const sameList = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Records `presig/<key>/<epoch>/<id>` (field `presignature`) and `presig-used/<key>/<id>`, as before the pool was shared. */
const flavor: PoolFlavor<PresignatureBinding, Presignature> = {
  prefix: PRESIGNATURE_PREFIX,
  entryKind: 'presignature-entry',
  usedKind: 'presignature-used',
  secretField: 'presignature',
  noun: 'presignature',
  codes: {
    unanchored: 'presignature_pool_unanchored', full: 'presignature_pool_full', exists: 'presignature_exists', unknown: 'presignature_unknown', used: 'presignature_used',
    expired: 'presignature_expired', wrongEpoch: 'presignature_wrong_epoch', wrongSigners: 'presignature_wrong_signers', wrongPath: 'presignature_wrong_path',
  },
  error: PresignatureStoreError as new (code: string, message: string) => CustodyError,
  normalize: (b) => ({ epoch: b.epoch, signers: sorted(b.signers), path: [...b.path], publicKey: b.publicKey }),
  differs: (stored, want) => (!sameList(stored.path, want.path) || stored.publicKey !== want.publicKey ? 'another derivation path' : undefined),
  encode(presignature, binding) {
    if (presignature.publicKey !== binding.publicKey || !sameList(sorted(presignature.signers), sorted(binding.signers))) {
      throw new Error('a presignature does not match the binding it is stored with');
    }
    return presignature.encode();
  },
  decode: (bytes) => decodePresignature(bytes),
  discard: () => undefined,
};

/** The node's ECDSA presignatures: a flavour of the shared single-use pool (single-use-pool.ts). */
export class PresignatureStore extends SingleUseStore<PresignatureBinding, Presignature> {
  constructor(store: SealedStore, opts: PresignatureStoreOptions = {}) {
    const { primitives } = opts;
    const decoding = primitives ? { ...flavor, decode: (bytes: Uint8Array) => decodePresignature(bytes, primitives) } : flavor;
    super(new SingleUsePool(store, decoding, { ...opts, lifetimeMs: opts.lifetimeMs ?? PRESIGNATURE_LIFETIME_MS, maxPerKey: opts.maxPerKey ?? PRESIGNATURES_PER_KEY }));
  }

  /** Seals new entries, all in one synced batch; resolves once they are on disk. */
  put(keyId: string, binding: PresignatureBinding, made: { entryId: string; presignature: Presignature }[]): Promise<void> {
    return this.pool.put(keyId, binding, made.map((m) => ({ entryId: m.entryId, value: m.presignature })));
  }

  /** Refuses unless every entry exists, is unused, unexpired and bound to `want`. Takes nothing. */
  check(keyId: string, entryIds: string[], want: PresignatureBinding): Promise<void> {
    return this.pool.check(keyId, entryIds, want);
  }

  /**
   * Takes the entries for one signing session: checked as `check` does, deleted and marked used in one
   * synced batch, and only then decoded and returned (in the order asked).
   */
  take(keyId: string, entryIds: string[], want: PresignatureBinding): Promise<Presignature[]> {
    return this.pool.take(keyId, entryIds, want);
  }

  /** `take` in two halves, its write in the caller's batch (`SingleUsePool.reserve`). */
  reserve(keyId: string, entryIds: string[], want: PresignatureBinding): Promise<ReservedTake<Presignature>> {
    return this.pool.reserve(keyId, entryIds, want);
  }
}
