// The coordinator's side of precommitted FROST nonces (docs/protocols/pools.md "FROST"): which rows of
// precommitted entries the nodes hold, per (vault, epoch, suite, path, signer set), and when to make
// more. A row is what one signature needs: every signer's entry id and commitments, each signed by its
// node. The bookkeeping, idle refills and back-off are the presignature pool's (presignature-pool.ts),
// one instance per suite, with a row carried as an opaque entry. It holds no secret and decides no
// safety question: each node checks and takes its own entry and checks every other signer's signature.
import type { Logger } from '../../common/logger.ts';
import type { PrecommittedNonce } from '../../core/session/session-params.ts';
import { PresignaturePool, type PoolOptions } from './presignature-pool.ts';

export type FrostPoolScheme = 'taproot' | 'bip340';

/** Rows a precommit session made at every node of `signers`. */
export interface PrecommittedRows {
  /** One row per signature: every signer's entry. */
  rows: PrecommittedNonce[][];
  /** Node ids of the signer set. */
  signers: string[];
  epoch: number;
  scheme: FrostPoolScheme;
  path: number[];
}

export interface FrostNoncePoolHooks {
  precommit(input: { vaultId: string; path: number[]; count: number; scheme: FrostPoolScheme }): Promise<PrecommittedRows>;
  isAttached(nodeId: string): boolean;
  /** The vault's current epoch, or undefined when it cannot sign now. */
  epochOf(vaultId: string): Promise<number | undefined>;
}

const encodeRow = (row: PrecommittedNonce[]) => JSON.stringify(row.map((e) => ({ ...e, signature: Buffer.from(e.signature).toString('hex') })));
const decodeRow = (s: string): PrecommittedNonce[] => (JSON.parse(s) as (Omit<PrecommittedNonce, 'signature'> & { signature: string })[]).map((e) => ({ ...e, signature: new Uint8Array(Buffer.from(e.signature, 'hex')) }));

export class FrostNoncePool {
  private readonly pools: Record<FrostPoolScheme, PresignaturePool>;

  constructor(hooks: FrostNoncePoolHooks, log: Logger, readonly opts: PoolOptions) {
    const of = (scheme: FrostPoolScheme) => new PresignaturePool({
      presign: async (input) => {
        const made = await hooks.precommit({ ...input, scheme });
        return { entryIds: made.rows.map(encodeRow), signers: made.signers, epoch: made.epoch, path: made.path };
      },
      isAttached: hooks.isAttached,
      epochOf: hooks.epochOf,
    }, log, opts);
    this.pools = { taproot: of('taproot'), bip340: of('bip340') };
  }

  get enabled(): boolean {
    return this.pools.taproot.enabled;
  }

  size(vaultId: string, epoch: number, scheme: FrostPoolScheme, path: number[]): number {
    return this.pools[scheme].size(vaultId, epoch, path);
  }

  /** Takes `count` rows of one signer set whose nodes are all attached, or none. */
  take(vaultId: string, epoch: number, scheme: FrostPoolScheme, path: number[], count: number): PrecommittedRows | undefined {
    const got = this.pools[scheme].take(vaultId, epoch, path, count);
    return got && { rows: got.entryIds.map(decodeRow), signers: got.signers, epoch: got.epoch, scheme, path: got.path };
  }

  add(vaultId: string, made: PrecommittedRows): void {
    this.pools[made.scheme].add(vaultId, { entryIds: made.rows.map(encodeRow), signers: made.signers, epoch: made.epoch, path: made.path });
  }

  signingStarted(vaultId: string, scheme: FrostPoolScheme): void {
    this.pools[scheme].signingStarted(vaultId);
  }

  signingEnded(vaultId: string, scheme: FrostPoolScheme, path: number[]): void {
    this.pools[scheme].signingEnded(vaultId, path);
  }

  refused(vaultId: string, code: string): void {
    for (const p of Object.values(this.pools)) p.refused(vaultId, code);
  }

  refill(vaultId: string, scheme: FrostPoolScheme): Promise<number> {
    return this.pools[scheme].refill(vaultId);
  }

  stop(): void {
    for (const p of Object.values(this.pools)) p.stop();
  }
}
