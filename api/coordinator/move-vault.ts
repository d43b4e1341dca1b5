// Moving a vault from one coordinator shard to another (docs/operations.md "Moving a vault"), and
// asking a shard to rebuild its vaults' records from the nodes. The order of a move: the new shard
// rebuilds the record from the nodes (they attach to every shard) and must hold the epoch the old shard
// holds; only then does the vault's record name the new shard; then the old shard releases it and
// refuses it from there on (vault_moved). A signing the old shard had already started may finish there;
// one asked after the switch goes to the new shard. A second signature of one intent is impossible
// either way: each node records, before it releases anything, what it signed for each intent.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { VAULTS } from '../vaults/collections.ts';
import type { VaultRecord } from '../vaults/records.ts';
import { COORDINATOR_SHARDS, DEFAULT_SHARD, type CoordinatorShards } from './coordinator-shards.ts';

export interface MoveVaultParameters {
  store: RecordRepository;
  /** The record's write op, with its indexes (VaultService.vaultOp). */
  vaultOp: (v: VaultRecord) => Op;
  shards: CoordinatorShards;
  vaultId: string;
  /** The shard's name, as API_COORDINATORS names it. */
  to: string;
  /** Audit entries written with the switch. */
  extra?: (before: VaultRecord, after: VaultRecord) => Op[];
  now?: () => Date;
}

export interface MoveVaultReturnType {
  vault: string;
  from: string;
  to: string;
  epoch: number;
  /** Whether the old shard confirmed it refuses the vault now; false: run the move again to finish. */
  released: boolean;
  problem?: string | undefined;
}

const MOVABLE: ReadonlySet<string> = new Set(['active', 'frozen', 'reshare_pending']);

export async function moveVault(p: MoveVaultParameters): Promise<MoveVaultReturnType> {
  const names = p.shards.all().map((s) => s.name);
  if (!names.includes(p.to)) throw new CustodyError('invalid_request', `no coordinator shard ${p.to} is configured (API_COORDINATORS: ${names.join(', ')})`);
  const v = await VAULTS.in(p.store).get(p.vaultId);
  if (!v) throw new CustodyError('not_found', 'no such vault');
  const from = v.coordinator_shard ?? (names.includes(DEFAULT_SHARD) ? DEFAULT_SHARD : names[0]!);
  if (from === p.to) {
    // Already switched (a move whose release did not finish): every other shard releases it.
    const released = await releaseElsewhere(p.shards, p.vaultId, p.to);
    const { vault } = await p.shards.forVault(v).getVault({ vaultId: p.vaultId });
    return { vault: v.id, from, to: p.to, epoch: vault?.epoch ?? 0, released: released.ok, ...(released.problem ? { problem: released.problem } : {}) };
  }
  if (!MOVABLE.has(v.state)) throw new CustodyError('conflict', `a ${v.state} vault cannot move; wait until it settles`);
  const target = p.shards.forVault({ id: v.id, coordinator_shard: p.to });
  const source = p.shards.forVault(v);
  // The epoch the old shard holds, when it answers: the new shard must not hold less.
  const before = await source.getVault({ vaultId: v.id }).then((r) => r.vault, (err: unknown) => {
    if (err instanceof CustodyError && (err.code === 'unknown_vault' || err.kind === 'unavailable')) return undefined;
    throw err;
  });
  const rebuilt = await target.rebuildVaults({ vaultIds: [v.id], takeOver: true });
  const r = rebuilt.vaults[0];
  if (!r || !['created', 'forwarded', 'unchanged'].includes(r.outcome)) {
    throw new CustodyError('conflict', `shard ${p.to} could not rebuild the vault's record from the nodes: ${r?.reason || r?.outcome || 'no answer'}`);
  }
  const { vault: after } = await target.getVault({ vaultId: v.id });
  if (!after || (before && (after.epoch < before.epoch || Buffer.compare(Buffer.from(after.publicKey), Buffer.from(before.publicKey)) !== 0))) {
    throw new CustodyError('conflict', `shard ${p.to} holds epoch ${after?.epoch ?? 'none'} of the vault, shard ${from} epoch ${before?.epoch}: not moved`);
  }
  const t = (p.now?.() ?? new Date()).toISOString();
  const next: VaultRecord = { ...v, coordinator_shard: p.to, updated_at: t };
  // The record and the list of shards in use change together: the API's start check then knows the new shard holds vaults.
  await p.store.batch([p.vaultOp(next), COORDINATOR_SHARDS.putOp(p.to, { name: p.to }), ...(p.extra?.(v, next) ?? [])]);
  const released = await source.releaseVault({ vaultId: v.id, movedTo: p.to }).then(() => ({ ok: true, problem: undefined }), (err: unknown) => ({ ok: false, problem: `shard ${from} did not confirm the release: ${(err as Error).message}` }));
  return { vault: v.id, from, to: p.to, epoch: after.epoch, released: released.ok, ...(released.problem ? { problem: released.problem } : {}) };
}

/** Every shard but `keep` releases the vault; one that never held it has nothing to release. */
async function releaseElsewhere(shards: CoordinatorShards, vaultId: string, keep: string): Promise<{ ok: boolean; problem?: string }> {
  const problems: string[] = [];
  for (const s of shards.all()) {
    if (s.name === keep) continue;
    await s.client.releaseVault({ vaultId, movedTo: keep }).catch((err: unknown) => {
      if (!(err instanceof CustodyError && err.code === 'unknown_vault')) problems.push(`shard ${s.name}: ${(err as Error).message}`);
    });
  }
  return problems.length ? { ok: false, problem: problems.join('; ') } : { ok: true };
}

export interface RebuildShardReturnType {
  shard: string;
  vaults: number;
  outcomes: Record<string, number>;
  skipped: { vault: string; reason: string }[];
  nodes: { node_id: string; status: string; reason: string }[];
}

/** Asks shard `name` to rebuild, or bring forward, the record of every vault the API places on it. */
export async function rebuildShard(store: RecordRepository, shards: CoordinatorShards, name: string): Promise<RebuildShardReturnType> {
  const names = shards.all().map((s) => s.name);
  if (!names.includes(name)) throw new CustodyError('invalid_request', `no coordinator shard ${name} is configured (API_COORDINATORS: ${names.join(', ')})`);
  const home = (v: VaultRecord) => v.coordinator_shard ?? (names.includes(DEFAULT_SHARD) ? DEFAULT_SHARD : names[0]!);
  const ids: string[] = [];
  for await (const v of VAULTS.in(store).all()) if (home(v) === name && v.state !== 'creating' && v.state !== 'failed') ids.push(v.id);
  const client = shards.forVault({ id: '', coordinator_shard: name });
  const out: RebuildShardReturnType = { shard: name, vaults: ids.length, outcomes: {}, skipped: [], nodes: [] };
  for (let i = 0; i < ids.length; i += 1000) {
    const r = await client.rebuildVaults({ vaultIds: ids.slice(i, i + 1000) });
    for (const v of r.vaults) {
      out.outcomes[v.outcome] = (out.outcomes[v.outcome] ?? 0) + 1;
      if (v.outcome === 'skipped' || v.outcome === 'moved') out.skipped.push({ vault: v.vaultId, reason: v.reason });
    }
    out.nodes = r.nodes.map((n) => ({ node_id: n.nodeId, status: n.status, reason: n.reason }));
  }
  return out;
}
