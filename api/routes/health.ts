// GET /healthz: the process is up. GET /readyz: the store reads and every coordinator shard answers,
// with each shard's state and the nodes attached to all of them (docs/operations.md "Metrics and health").
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import { attachedEverywhere, type CoordinatorShards } from '../coordinator/coordinator-shards.ts';

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

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  coordinator: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable'), Type.Literal('not_configured')], { description: 'reachable when every shard answers' }),
  coordinators: Type.Array(Shard, { description: 'each coordinator shard, in configured order' }),
  store: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable'), Type.Literal('not_configured')], { description: 'the API\'s record store; not_configured when this API serves neither the vault nor the platform API' }),
  nodes: Type.Array(Node, { description: 'nodes attached to every shard that answers' }),
  node_count: Type.Integer(),
});

export interface HealthOptions {
  coordinators?: CoordinatorShards | undefined;
  /** The record store the APIs serve from (api/store/record-store.ts); its `ping` is one point read. */
  store?: { ping(): Promise<void> } | undefined;
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
      opts.coordinators ? opts.coordinators.states() : [],
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
      store, nodes, node_count: nodes.length,
    };
    return ready ? body : reply.code(503).send(body);
  });
};
