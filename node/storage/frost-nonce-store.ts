// The node's precommitted FROST nonce pairs (docs/protocols/pools.md "FROST: precommitted nonces"): a
// flavour of the shared single-use pool (single-use-pool.ts). An entry is one nonce pair (d, e) of this
// node, sealed under `frost-nonce/<key>/<epoch>/<entry id>` with its binding: the key epoch, the signer
// set, the suite, the derivation path, the Taproot script tree root, and the key the signature verifies
// under. Its commitments (D, E) = (d·G, e·G) are not stored apart: they are recomputed from the pair, so
// the commitments a signing names for this node are checked against the secret itself.
//
// `take` deletes the pair and writes a used mark in one synced batch before anything derived from it
// is computed: reuse of a pair with two messages would give away the key share. Only a node with a
// rollback anchor keeps pairs (`nonce_pool_unanchored` otherwise).
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { SecretBytes } from '../../core/codec/secret.ts';
import { commitmentOf, type Commit, type Nonces } from '../protocols/frost/frost-precommit.ts';
import { nativePrimitives } from '../runtime/native-primitives.ts';
import type { FrostSuite } from '../protocols/frost/frost-sign.ts';
import type { SealedStore } from './sealed-store.ts';
import { SingleUsePool, SingleUseStore, type PoolFlavor, type PoolOptions, type ReservedTake } from './single-use-pool.ts';

/** Where the entries are kept (`frost-nonce/<key>/<epoch>/<id>`): dropped at open when the anchor holds nothing (sealed-store.ts). */
export const FROST_NONCE_PREFIX = 'frost-nonce';
/** How long a pair may wait for its request. */
export const FROST_NONCE_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** How many pairs a node keeps per key (every epoch, path, suite and signer set together). */
export const FROST_NONCES_PER_KEY = 64;

const NONCE_RECORD_VERSION = 1;

export class FrostNonceStoreError extends CustodyError {
  constructor(code: ErrorCode, message: string) {
    super(code, message);
    this.name = 'FrostNonceStoreError';
  }
}

/** What a nonce pair was made for; a signing must name exactly this to use it. */
export interface FrostNonceBinding {
  epoch: number;
  /** Party indices of the signer set (stored sorted). */
  signers: number[];
  suite: FrostSuite;
  path: number[];
  /** Taproot: the script tree root hex, '' for a key-path-only output (and for other suites). */
  merkleRoot: string;
  /** The key the signature verifies under (x-only for Taproot and BIP-340), after path and tweak. */
  publicKey: string;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const sameList = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

const flavor: PoolFlavor<FrostNonceBinding, Nonces> = {
  prefix: FROST_NONCE_PREFIX,
  entryKind: 'frost-nonce-entry',
  usedKind: 'frost-nonce-used',
  secretField: 'nonces',
  noun: 'FROST nonce pair',
  codes: {
    unanchored: 'nonce_pool_unanchored', full: 'nonce_pool_full', exists: 'nonce_exists', unknown: 'nonce_unknown', used: 'nonce_used',
    expired: 'nonce_expired', wrongEpoch: 'nonce_wrong_epoch', wrongSigners: 'nonce_wrong_signers', wrongPath: 'nonce_wrong_path',
  },
  error: FrostNonceStoreError,
  normalize: (b) => ({ epoch: b.epoch, signers: sorted(b.signers), suite: b.suite, path: [...b.path], merkleRoot: b.merkleRoot, publicKey: b.publicKey }),
  differs(stored, want) {
    if (stored.suite !== want.suite) return `the ${stored.suite} suite`;
    if (!sameList(stored.path, want.path)) return 'another derivation path';
    if (stored.merkleRoot !== want.merkleRoot) return 'another script tree';
    if (stored.publicKey !== want.publicKey) return 'another key';
    return undefined;
  },
  encode(n) {
    const h = n.hiding.expose();
    const b = n.binding.expose();
    if (h.length !== 32 || b.length !== 32) throw new Error('a nonce is a 32-byte scalar');
    const out = new Uint8Array(65);
    out[0] = NONCE_RECORD_VERSION;
    out.set(h, 1);
    out.set(b, 33);
    return out;
  },
  decode(bytes) {
    if (bytes.length !== 65 || bytes[0] !== NONCE_RECORD_VERSION) throw new Error('unknown nonce record format');
    return { hiding: new SecretBytes(bytes.slice(1, 33)), binding: new SecretBytes(bytes.slice(33, 65)) };
  },
  discard(n) {
    n.hiding.zeroize();
    n.binding.zeroize();
  },
};

/** Refuses unless the pairs behind the entries are exactly the named commitments, in order. */
function sameCommitments(named: Commit[]) {
  return (values: Nonces[]) => {
    values.forEach((n, i) => {
      const own = commitmentOf(n, nativePrimitives);
      const c = named[i];
      if (!c || own.hiding !== c.hiding || own.binding !== c.binding) throw new FrostNonceStoreError('wrong_commitment', 'the commitments named for this node are not the ones it made for the entry');
    });
  };
}

export class FrostNonceStore extends SingleUseStore<FrostNonceBinding, Nonces> {
  constructor(store: SealedStore, opts: PoolOptions = {}) {
    super(new SingleUsePool(store, flavor, { ...opts, lifetimeMs: opts.lifetimeMs ?? FROST_NONCE_LIFETIME_MS, maxPerKey: opts.maxPerKey ?? FROST_NONCES_PER_KEY }));
  }

  /** Seals new pairs in one synced batch; resolves once they are on disk (their commitments may then leave). */
  put(keyId: string, binding: FrostNonceBinding, made: { entryId: string; nonces: Nonces }[]): Promise<void> {
    return this.pool.put(keyId, binding, made.map((m) => ({ entryId: m.entryId, value: m.nonces })));
  }

  /** Refuses unless every entry is held, unused, unexpired, bound to `want` and behind `commitments`. Takes nothing. */
  check(keyId: string, entryIds: string[], want: FrostNonceBinding, commitments: Commit[]): Promise<void> {
    return this.pool.check(keyId, entryIds, want, sameCommitments(commitments));
  }

  /**
   * Takes the pairs for one signing session: checked as `check` does, deleted and marked used in one
   * synced batch, and only then returned (in the order asked). A share may leave once this resolved.
   */
  take(keyId: string, entryIds: string[], want: FrostNonceBinding, commitments: Commit[]): Promise<Nonces[]> {
    return this.pool.take(keyId, entryIds, want, sameCommitments(commitments));
  }

  /** `take` in two halves, its write in the caller's batch (`SingleUsePool.reserve`). */
  reserve(keyId: string, entryIds: string[], want: FrostNonceBinding, commitments: Commit[]): Promise<ReservedTake<Nonces>> {
    return this.pool.reserve(keyId, entryIds, want, sameCommitments(commitments));
  }
}
