// Rebuilding the coordinator's vault records from the nodes (docs/operations.md "Rebuilding a
// coordinator's records"): asks every attached node for the keys named, keeps what the members agree on
// (merge-inventories.ts) and writes it through the vault service. Liveness only: every node checks every
// session against its own pinned share and committee, so a wrong record makes sessions fail, never sign.
import type { Logger } from '../../common/logger.ts';
import type { NodeRegistry } from '../nodes/node-registry.ts';
import type { InventoryAnswer, InventoryClient } from '../nodes/inventory-client.ts';
import type { VaultStore } from './vault-store.ts';
import type { VaultService } from './vault-service.ts';
import { mergeInventories, type NodeReport } from './merge-inventories.ts';

export interface RebuiltVaultReport {
  vaultId: string;
  outcome: 'created' | 'forwarded' | 'unchanged' | 'skipped' | 'moved';
  epoch: number;
  reason: string;
}

export interface NodeInventoryReport {
  nodeId: string;
  status: 'answered' | 'unsupported' | 'failed';
  reason: string;
  keys: number;
}

export interface RebuildReport {
  vaults: RebuiltVaultReport[];
  nodes: NodeInventoryReport[];
}

export class VaultRebuild {
  /** Vault ids the lazy path found nothing for lately, and when: a missing id is not asked of every node on every call. */
  private readonly missed = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly store: VaultStore,
    private readonly service: VaultService,
    private readonly registry: NodeRegistry,
    private readonly inventory: InventoryClient,
    private readonly log: Logger,
    private readonly lazyRetryMs = 3_000,
  ) {}

  /**
   * Rebuilds or brings forward `vaultIds`, or, when none are named, every vault this coordinator holds
   * a record of (forward only: a record for a vault it never held is made only when named, since the
   * nodes also hold other shards' vaults).
   */
  async rebuild(vaultIds?: readonly string[], takeOver = false): Promise<RebuildReport> {
    let ids = vaultIds?.length ? [...new Set(vaultIds)] : undefined;
    if (!ids) {
      ids = [];
      for await (const r of this.store.all()) if (!r.movedTo && r.state !== 'failed') ids.push(r.vaultId);
    }
    if (!ids.length) return { vaults: [], nodes: [] };
    return this.merge(ids, await Promise.all(this.registry.list().map((n) => this.inventory.ask(n.nodeId, ids))), takeOver);
  }

  /**
   * Every key any attached node holds, listed page by page (COORDINATOR_REBUILD_ADOPT_ALL): for a
   * coordinator that serves every vault, the only shard. With several shards it would take the other
   * shards' vaults too, so it is off by default.
   */
  async rebuildAll(): Promise<RebuildReport> {
    const answers = await Promise.all(this.registry.list().map((n) => this.inventory.ask(n.nodeId)));
    const ids = [...new Set(answers.flatMap((a) => (a.status === 'answered' ? a.keys.map((k) => k.keyId) : [])))].sort();
    return this.merge(ids, answers, false);
  }

  private async merge(ids: string[], answers: InventoryAnswer[], takeOver: boolean): Promise<RebuildReport> {
    const nodes: NodeInventoryReport[] = answers.map((a) => a.status === 'answered'
      ? { nodeId: a.nodeId, status: a.status, reason: '', keys: a.keys.length }
      : { nodeId: a.nodeId, status: a.status, reason: a.reason, keys: 0 });
    for (const n of nodes) if (n.status !== 'answered') this.log.warn({ nodeId: n.nodeId, status: n.status, reason: n.reason }, 'a node gave no inventory for the rebuild');
    const reports: NodeReport[] = answers.flatMap((a) => a.status === 'answered' ? [{ nodeId: a.nodeId, signingKey: a.signingKey, keys: new Map(a.keys.map((k) => [k.keyId, k])) }] : []);
    const vaults: RebuiltVaultReport[] = [];
    for (const m of mergeInventories(ids, reports)) {
      if ('reason' in m) {
        const held = await this.store.get(m.vaultId);
        this.log.warn({ vaultId: m.vaultId, reason: m.reason }, 'vault record not rebuilt');
        vaults.push({ vaultId: m.vaultId, outcome: held?.movedTo && !takeOver ? 'moved' : 'skipped', epoch: held?.epoch ?? 0, reason: m.reason });
        continue;
      }
      const done = await this.service.adopt(m.rebuilt, takeOver);
      vaults.push({ vaultId: m.vaultId, outcome: done.outcome, epoch: done.record?.epoch ?? m.rebuilt.epoch, reason: done.reason ?? (done.outcome === 'moved' ? `released to shard ${done.record?.movedTo}` : '') });
    }
    return { vaults, nodes };
  }

  /** The lazy path (VaultService.lazyRebuild): one vault, one run at a time, not again within lazyRetryMs of finding nothing. */
  lazy(vaultId: string): Promise<void> {
    const since = this.missed.get(vaultId);
    if (since !== undefined && Date.now() - since < this.lazyRetryMs) return Promise.resolve();
    const running = this.inFlight.get(vaultId);
    if (running) return running;
    const run = this.rebuild([vaultId]).then((r) => {
      if (r.vaults[0]?.outcome === 'created') this.missed.delete(vaultId);
      else {
        this.missed.set(vaultId, Date.now());
        if (this.missed.size > 10_000) this.missed.delete(this.missed.keys().next().value!);
      }
    }).finally(() => this.inFlight.delete(vaultId));
    this.inFlight.set(vaultId, run);
    return run;
  }

  /**
   * At start: every attachment in the first `windowMs` schedules (debounced) a pass that brings this
   * coordinator's records forward, so a store restored from an older copy catches up with reshares it
   * missed as soon as the nodes are back; with `adoptAll`, one that rebuilds every key the nodes hold.
   */
  forwardAtStart(windowMs: number, adoptAll = false, debounceMs = 1_000): () => void {
    const until = Date.now() + windowMs;
    let timer: NodeJS.Timeout | undefined;
    const onChange = () => {
      if (Date.now() > until) return stop();
      clearTimeout(timer);
      timer = setTimeout(() => {
        void (adoptAll ? this.rebuildAll() : this.rebuild()).then((r) => {
          const changed = r.vaults.filter((v) => v.outcome === 'forwarded' || v.outcome === 'created');
          if (changed.length) this.log.info({ changed: changed.map((v) => `${v.vaultId}@${v.epoch} ${v.outcome}`) }, 'records rebuilt from the nodes at start');
        }, (err: unknown) => this.log.warn({ err: (err as Error).message }, 'the rebuild at start failed'));
      }, debounceMs);
    };
    const stop = () => {
      clearTimeout(timer);
      this.registry.off('change', onChange);
    };
    this.registry.on('change', onChange);
    return stop;
  }
}
