// POST /v1/nodes, GET /v1/nodes, POST /v1/nodes/{nodeId}/revoke, PUT and GET /v1/tee/measurements,
// GET /v1/node-config (docs/vault-api.md "Nodes"). Each change is the customer's signed request, which
// goes into its trust log for the signer nodes to verify.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import type { NodeRecord, TeeMeasurementsRecord } from '../../vaults/records.ts';
import { attachedEverywhere, type CoordinatorShards } from '../../coordinator/coordinator-shards.ts';
import { EnrolNodeBody, Node, NodeIdT, NodeList, NodeSetup, TeeMeasurements, TeeMeasurementsBody } from '../../../core/api-schemas/nodes.ts';

export interface NodeRouteOptions {
  vaults: VaultService;
  coordinators: CoordinatorShards | undefined;
  /** What GET /v1/node-config tells a customer's node: every coordinator address it attaches to. */
  setup: { coordinatorAddresses: readonly string[]; operatorKeys: readonly string[] };
}

/**
 * Node ids attached now to every coordinator shard that answers (a node off one shard cannot sign that
 * shard's vaults); empty when none can say.
 */
async function attachedIds(coordinators: CoordinatorShards | undefined): Promise<Set<string>> {
  if (!coordinators) return new Set();
  return new Set(attachedEverywhere(await coordinators.states(2_000)).map((n) => n.id));
}

const view = (n: NodeRecord, attached: Set<string>) => ({
  id: n.id, kind: n.kind, signing_key: n.signing_key, encryption_key: n.encryption_key, label: n.label, state: n.state, pcrs: n.pcrs,
  attached: attached.has(n.id), created_at: n.created_at, revoked_at: n.revoked_at,
});
const measurementsView = (m: TeeMeasurementsRecord) => ({ version: m.version, allowed: m.allowed, updated_at: m.updated_at });

export const nodeRoutes: FastifyPluginAsyncTypebox<NodeRouteOptions> = async (app, { vaults, coordinators, setup }) => {
  app.post('/nodes', {
    schema: {
      summary: 'Enrol a node the organization runs (self) or runs in its enclave (tee, with its attestation)',
      tags: ['nodes'], security: [{ httpSignature: [] }],
      body: EnrolNodeBody,
      response: { 200: Node, 201: Node, 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 429: ErrorBody, 503: ErrorBody },
    },
  }, async (req, reply) => {
    const { node, created } = await vaults.nodes.enrol(req.caller!.org, req.body, req.caller!.entry());
    return reply.code(created ? 201 : 200).send(view(node, await attachedIds(coordinators)));
  });

  app.get('/nodes', { schema: { summary: 'The organization\'s enrolled nodes, active and revoked, oldest first, with whether each is attached now', tags: ['nodes'], security: [{ httpSignature: [] }], response: { 200: NodeList, 401: ErrorBody } } }, async (req) => {
    const attached = await attachedIds(coordinators);
    return { nodes: (await vaults.nodes.list(req.caller!.org)).map((n) => view(n, attached)) };
  });

  app.post('/nodes/:nodeId/revoke', {
    schema: { summary: 'Revoke a node for good: never seated again, and no signature includes it', tags: ['nodes'], security: [{ httpSignature: [] }], params: Type.Object({ nodeId: NodeIdT }), response: { 200: Node, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody } },
  }, async (req) => view(await vaults.nodes.revoke(req.caller!.org, req.params.nodeId, req.caller!.entry()), await attachedIds(coordinators)));

  app.put('/tee/measurements', {
    schema: {
      summary: 'Replace the enclave builds the organization allows (a higher version)',
      tags: ['nodes'], security: [{ httpSignature: [] }],
      body: TeeMeasurementsBody,
      response: { 200: TeeMeasurements, 400: ErrorBody, 401: ErrorBody, 409: ErrorBody },
    },
  }, async (req) => measurementsView(await vaults.nodes.putMeasurements(req.caller!.org, req.body.version, req.body.allowed, req.caller!.entry())));

  app.get('/tee/measurements', { schema: { summary: 'The enclave measurements the organization allows now', tags: ['nodes'], security: [{ httpSignature: [] }], response: { 200: TeeMeasurements, 401: ErrorBody, 404: ErrorBody } } }, async (req) => {
    const m = await vaults.nodes.measurements(req.caller!.org);
    if (!m) throw new CustodyError('not_found', 'no measurements are pinned yet (PUT /v1/tee/measurements)');
    return measurementsView(m);
  });

  app.get('/node-config', {
    schema: { summary: 'What a customer node is configured with: the coordinators it dials and the operator keys it trusts', tags: ['nodes'], security: [{ httpSignature: [] }], response: { 200: NodeSetup, 401: ErrorBody } },
  }, async (req) => ({
    // `coordinator_address` is NODE_COORDINATOR as the node takes it: one host:port, or the list with commas.
    coordinator_address: setup.coordinatorAddresses.length ? setup.coordinatorAddresses.join(',') : null,
    coordinator_addresses: [...setup.coordinatorAddresses], operator_keys: [...setup.operatorKeys], organization: req.caller!.org,
  }));
};
