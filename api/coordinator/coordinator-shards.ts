// The coordinators the API talks to, one per shard (docs/operations.md "Coordinator shards"). Each vault
// lives on one shard: the coordinator there keeps its committed key record and runs all its sessions,
// so every per-vault call goes to it. A vault is placed when it is created, by a stable hash of its id
// over the shards configured then, and its record keeps the shard's name: adding a shard moves no
// existing vault. Records written before shards existed name none: they belong to the shard named
// `default` (what API_COORDINATOR was), or the first shard when none has that name.
//
// Calls about no vault (a committee proposal) go to the first shard that answers; readiness and the
// attached-node view ask every shard.
import { sha256 } from '@noble/hashes/sha2.js';
import { ConfigError } from '../../common/config.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { collection } from '../store/collection.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { connectCoordinator, listNodes, type CoordinatorClient, type NodeSummary, type UnsignableVaults } from './coordinator-client.ts';

/** A shard as configured: its name (kept in vault records) and its coordinator's host:port. */
export interface ShardAddress {
  name: string;
  address: string;
}

export interface Shard extends ShardAddress {
  client: CoordinatorClient;
}

/** What a vault record says about its placement. */
export interface PlacedVault {
  id: string;
  coordinator_shard?: string | undefined;
}

/** The store collection naming every shard that holds a vault: the start check reads it, not every vault. */
export const COORDINATOR_SHARDS = collection<{ name: string }>('coordinator_shards');
/** Its name, for the tests that read it. */
export const SHARDS_IN_USE = COORDINATOR_SHARDS.name;

/** The shard name of a single API_COORDINATOR. */
export const DEFAULT_SHARD = 'default';

export interface ShardState {
  name: string;
  address: string;
  state: 'reachable' | 'unreachable';
  nodes: NodeSummary[];
  /** Asked for (`states(…, { signing: true })`): the shard's active vaults that cannot sign ECDSA now. */
  unsignable?: UnsignableVaults | undefined;
}

export class CoordinatorShards {
  private readonly byName: ReadonlyMap<string, Shard>;

  constructor(private readonly shards: readonly Shard[]) {
    if (!shards.length) throw new CustodyError('bug', 'a shard set holds at least one coordinator');
    this.byName = new Map(shards.map((s) => [s.name, s]));
    if (this.byName.size !== shards.length) throw new CustodyError('bug', 'shard names must be unique');
  }

  /** Connects to every shard's coordinator with the shared mutual-TLS settings. */
  static connect(shards: readonly ShardAddress[], tls: { tlsCa?: string | undefined; tlsCert?: string | undefined; tlsKey?: string | undefined }): CoordinatorShards {
    return new CoordinatorShards(shards.map((s) => ({ ...s, client: connectCoordinator({ address: s.address, ...tls }) })));
  }

  /** A set as given, or one client as the one `default` shard (callers and tests with a single coordinator). */
  static of(coordinator: CoordinatorShards | CoordinatorClient | undefined): CoordinatorShards | undefined {
    if (coordinator === undefined || coordinator instanceof CoordinatorShards) return coordinator;
    return new CoordinatorShards([{ name: DEFAULT_SHARD, address: '', client: coordinator }]);
  }

  all(): readonly Shard[] {
    return this.shards;
  }

  /**
   * The shard a new vault goes to: rendezvous hashing of the vault id over the shard names, so the
   * answer depends on the names configured, not their order, and adding a shard takes only a share of
   * new vaults.
   */
  placement(vaultId: string): string {
    let best = this.shards[0]!;
    let bestScore = -1n;
    for (const s of this.shards) {
      const score = weight(s.name, vaultId);
      if (score > bestScore) [best, bestScore] = [s, score];
    }
    return best.name;
  }

  /** The coordinator that holds `vault`. A shard name this API is not configured with is unavailable, never another shard. */
  forVault(vault: PlacedVault): CoordinatorClient {
    const name = vault.coordinator_shard ?? (this.byName.has(DEFAULT_SHARD) ? DEFAULT_SHARD : this.shards[0]!.name);
    const shard = this.byName.get(name);
    if (!shard) throw new CustodyError('unavailable', `vault ${vault.id} is on coordinator shard ${name}, which this API is not configured with (API_COORDINATORS)`);
    return shard.client;
  }

  /**
   * Runs a call about no vault on the first shard that answers: the next is tried only when one is
   * unavailable, so a refusal is the coordinator's answer and comes back as it is.
   */
  async any<T>(call: (client: CoordinatorClient) => Promise<T>): Promise<T> {
    let last: unknown;
    for (const s of this.shards) {
      try {
        return await call(s.client);
      } catch (err) {
        if (!(err instanceof CustodyError) || err.kind !== 'unavailable') throw err;
        last = err;
      }
    }
    throw last;
  }

  /** Every shard's state and attached nodes, asked at once; with `signing`, also its vaults that cannot sign. */
  states(timeoutMs = 1500, opts: { signing?: boolean } = {}): Promise<ShardState[]> {
    return Promise.all(this.shards.map(({ name, address, client }) => listNodes(client, timeoutMs, opts.signing ?? false).then(
      ({ nodes, unsignable }) => ({ name, address, state: 'reachable' as const, nodes, ...(unsignable ? { unsignable } : {}) }),
      () => ({ name, address, state: 'unreachable' as const, nodes: [] }),
    )));
  }

  /**
   * Refuses to start when the store has vaults on a shard that is not configured (removed or renamed):
   * their calls would have nowhere to go. Reads the short list of shards in use, not the vaults.
   */
  async checkPlacements(store: RecordRepository): Promise<void> {
    const missing: string[] = [];
    for await (const r of COORDINATOR_SHARDS.in(store).all()) if (!this.byName.has(r.name)) missing.push(r.name);
    if (missing.length) {
      throw new ConfigError([`API_COORDINATORS: vaults live on coordinator shard${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, which ${missing.length > 1 ? 'are' : 'is'} not configured; a shard that holds vaults cannot be removed or renamed (docs/operations.md "Coordinator shards")`]);
    }
  }

  close(): void {
    for (const s of this.shards) s.client.close();
  }
}

/** Nodes attached to every shard that answered: only those can take part in any vault's session. */
export function attachedEverywhere(states: readonly ShardState[]): NodeSummary[] {
  const up = states.filter((s) => s.state === 'reachable');
  if (!up.length) return [];
  const ids = up.slice(1).map((s) => new Set(s.nodes.map((n) => n.id)));
  return up[0]!.nodes.filter((n) => ids.every((set) => set.has(n.id)));
}

function weight(shard: string, vaultId: string): bigint {
  const h = sha256(new TextEncoder().encode(`custody/shard/v1\0${shard}\0${vaultId}`));
  return new DataView(h.buffer, h.byteOffset, 8).getBigUint64(0);
}
