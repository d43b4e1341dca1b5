// GET /healthz: the process is up. GET /readyz: the coordinator answers, with the attached nodes.
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
  nodes: Type.Array(Node),
  node_count: Type.Integer(),
});

export interface HealthOptions {
  coordinator?: CoordinatorClient | undefined;
}

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, opts) => {
  app.get('/healthz', {
    schema: { summary: 'Liveness: the process is up', tags: ['health'], security: [], hide: false, response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: { summary: 'Readiness: the coordinator answers (503 when not), with the attached nodes', tags: ['health'], security: [], response: { 200: Ready, 503: Ready } },
  }, async (req, reply) => {
    if (!opts.coordinator) {
      return reply.code(503).send({ status: 'unavailable', coordinator: 'not_configured', nodes: [], node_count: 0 });
    }
    try {
      const nodes = await attachedNodes(opts.coordinator);
      return { status: 'ready', coordinator: 'reachable', nodes, node_count: nodes.length };
    } catch (err) {
      req.log.warn({ err: (err as Error).message }, 'coordinator unreachable');
      return reply.code(503).send({ status: 'unavailable', coordinator: 'unreachable', nodes: [], node_count: 0 });
    }
  });
};
