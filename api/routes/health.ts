// GET /healthz: the process is up. GET /readyz: the store reads and every coordinator shard answers,
// with each shard's state, the nodes attached to all of them and the vaults that cannot sign now
// (docs/operations.md "Metrics and health").
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import { attachedEverywhere, type CoordinatorShards, type ShardState } from '../coordinator/coordinator-shards.ts';

const Node = Type.Object({
  id: Type.String(),
  kind: Type.String({ description: 'service, self or tee' }),
  owner: Type.Union([Type.String(), Type.Null()]),
});

const Shard = Type.Object({
  name: Type.String({ description: 'the shard\'s name in API_COORDINATORS (default for API_COORDINATOR)' }),
  state: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable')]),
  node_count: Type.Integer({ description: 'nodes attached to this shard\'s coordinator' }),
});

const Unsignable = Type.Object({
  count: Type.Integer({ description: 'active vaults, over every shard that answers, that no attached signer subset can sign ECDSA for now' }),
  reasons: Type.Record(Type.String(), Type.Integer(), { description: 'how many per reason: members_detached, ot_pairs_missing' }),
  vaults: Type.Array(Type.Object({
    vault_id: Type.String(),
    shard: Type.String(),
    reason: Type.String(),
    detached_members: Type.Array(Type.String()),
    missing_pairs: Type.Array(Type.String()),
  }), { description: 'the first 20 of them (each shard lists at most 20)' }),
});

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  coordinator: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable'), Type.Literal('not_configured')], { description: 'reachable when every shard answers' }),
  coordinators: Type.Array(Shard, { description: 'each coordinator shard, in configured order' }),
  store: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable'), Type.Literal('not_configured')], { description: 'the API\'s record store; not_configured when this API serves neither the vault nor the platform API' }),
  nodes: Type.Array(Node, { description: 'nodes attached to every shard that answers' }),
  node_count: Type.Integer(),
  vaults_unable_to_sign: Type.Union([Unsignable, Type.Null()], { description: 'vaults that cannot sign now, and why (docs/operations.md "Metrics and health"); informative: it does not make the API unready; null when no shard answered' }),
});

export interface HealthOptions {
  coordinators?: CoordinatorShards | undefined;
  /** The record store the APIs serve from (api/store/record-store.ts); its `ping` is one point read. */
  store?: { ping(): Promise<void> } | undefined;
}

/** At most this many vaults are named in /readyz; the count covers them all. */
const UNSIGNABLE_LISTED = 20;

/** The shards' vaults that cannot sign, summed; null when no shard said. A vault that cannot sign does not make the API unready. */
function unableToSign(shards: readonly ShardState[]) {
  const said = shards.filter((s) => s.unsignable);
  if (!said.length) return null;
  const reasons: Record<string, number> = {};
  let count = 0;
  const vaults: { vault_id: string; shard: string; reason: string; detached_members: string[]; missing_pairs: string[] }[] = [];
  for (const s of said) {
    count += s.unsignable!.count;
    for (const [r, n] of Object.entries(s.unsignable!.reasons)) reasons[r] = (reasons[r] ?? 0) + n;
    for (const v of s.unsignable!.vaults) {
      if (vaults.length < UNSIGNABLE_LISTED) vaults.push({ vault_id: v.vaultId, shard: s.name, reason: v.reason, detached_members: v.detached, missing_pairs: v.missingPairs });
    }
  }
  return { count, reasons, vaults };
}

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, opts) => {
  app.get('/healthz', {
    schema: { summary: 'Liveness: the process is up', tags: ['health'], security: [], hide: false, response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: { summary: 'Readiness: the store reads and every coordinator shard answers (503 when one does not), with each shard\'s state and the attached nodes', tags: ['health'], security: [], response: { 200: Ready, 503: Ready } },
  }, async (req, reply) => {
    const [store, shards] = await Promise.all([
      opts.store ? opts.store.ping().then(() => 'reachable' as const, (err: unknown) => {
        req.log.warn({ err: (err as Error).message }, 'store unreachable');
        return 'unreachable' as const;
      }) : 'not_configured' as const,
      opts.coordinators ? opts.coordinators.states(1500, { signing: true }) : [],
    ]);
    for (const s of shards) if (s.state === 'unreachable') req.log.warn({ shard: s.name }, 'coordinator unreachable');
    // A shard that does not answer cannot sign its vaults, so the API is not ready, though the others
    // still serve theirs. Without its store the API can answer nothing else; an API built with no store
    // (health alone) has none to wait for.
    const coordinator = !opts.coordinators ? 'not_configured' as const : shards.every((s) => s.state === 'reachable') ? 'reachable' as const : 'unreachable' as const;
    const nodes = attachedEverywhere(shards);
    const ready = coordinator === 'reachable' && store !== 'unreachable';
    const body = {
      status: ready ? 'ready' as const : 'unavailable' as const, coordinator, coordinators: shards.map((s) => ({ name: s.name, state: s.state, node_count: s.nodes.length })),
      store, nodes, node_count: nodes.length, vaults_unable_to_sign: unableToSign(shards),
    };
    return ready ? body : reply.code(503).send(body);
  });
};
