// GET /healthz: the process is up. GET /readyz: the store reads and the coordinator answers, with the
// attached nodes (docs/operations.md "Metrics and health").
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import { attachedNodes, type CoordinatorClient } from '../coordinator/coordinator-client.ts';

const Node = Type.Object({
  id: Type.String(),
  kind: Type.String({ description: 'service, self or tee' }),
  owner: Type.Union([Type.String(), Type.Null()]),
});

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  coordinator: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable'), Type.Literal('not_configured')]),
  store: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable'), Type.Literal('not_configured')], { description: 'the API\'s record store; not_configured when this API serves neither the vault nor the platform API' }),
  nodes: Type.Array(Node),
  node_count: Type.Integer(),
});

export interface HealthOptions {
  coordinator?: CoordinatorClient | undefined;
  /** The record store the APIs serve from (api/store/record-store.ts); its `ping` is one point read. */
  store?: { ping(): Promise<void> } | undefined;
}

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, opts) => {
  app.get('/healthz', {
    schema: { summary: 'Liveness: the process is up', tags: ['health'], security: [], hide: false, response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: { summary: 'Readiness: the store reads and the coordinator answers (503 when either does not), with the attached nodes', tags: ['health'], security: [], response: { 200: Ready, 503: Ready } },
  }, async (req, reply) => {
    const [store, coordinator] = await Promise.all([
      opts.store ? opts.store.ping().then(() => 'reachable' as const, (err: unknown) => {
        req.log.warn({ err: (err as Error).message }, 'store unreachable');
        return 'unreachable' as const;
      }) : 'not_configured' as const,
      opts.coordinator ? attachedNodes(opts.coordinator).then((nodes) => ({ state: 'reachable' as const, nodes }), (err: unknown) => {
        req.log.warn({ err: (err as Error).message }, 'coordinator unreachable');
        return { state: 'unreachable' as const, nodes: [] };
      }) : { state: 'not_configured' as const, nodes: [] },
    ]);
    // Without a coordinator nothing can be signed; without its store the API can answer nothing else.
    // An API built with no store (health alone) has none to wait for.
    const ready = coordinator.state === 'reachable' && store !== 'unreachable';
    const body = { status: ready ? 'ready' as const : 'unavailable' as const, coordinator: coordinator.state, store, nodes: coordinator.nodes, node_count: coordinator.nodes.length };
    return ready ? body : reply.code(503).send(body);
  });
};
