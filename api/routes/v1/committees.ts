// GET /v1/committees?tier=... (docs/vault-api.md): the committee a new vault of the caller's
// organization would get now, with each member's kind and keys and the roster version, so the customer
// can check it and bind it (`committee`, `customer_node`) in its signed POST /v1/vaults.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type * as grpc from '@grpc/grpc-js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Type } from '@sinclair/typebox';
import { ApiError, ErrorBody } from '../../errors.ts';
import type { CoordinatorClient } from '../../coordinator/coordinator-client.ts';
import { WIRE_TIERS } from '../../../core/tier-wire.ts';
import { KIND_NAMES } from '../../../core/link/node-kind.ts';

export const Committee = Type.Object({
  tier: Type.Union([Type.Literal('hosted'), Type.Literal('self'), Type.Literal('customer_tee')]),
  threshold: Type.Integer({ description: 'members needed to sign' }),
  roster_version: Type.Integer({ description: 'version of the operator-signed roster the service members come from' }),
  members: Type.Array(Type.Object({
    node_id: Type.String(),
    kind: Type.Union([Type.Literal('service'), Type.Literal('self'), Type.Literal('tee')]),
    signing_key: Type.String({ description: 'Ed25519, hex' }),
    encryption_key: Type.String({ description: 'X25519, hex' }),
  })),
});

export const committeeRoutes: FastifyPluginAsyncTypebox<{ coordinator: CoordinatorClient | undefined }> = async (app, { coordinator }) => {
  app.get('/committees', {
    schema: {
      summary: 'The committee a new vault of this tier would get now, to check and bind in the signed POST /v1/vaults',
      querystring: Type.Object({ tier: Type.Union([Type.Literal('hosted'), Type.Literal('self'), Type.Literal('customer_tee')]) }, { additionalProperties: false }),
      response: { 200: Committee, 400: ErrorBody, 401: ErrorBody, 503: ErrorBody },
    },
  }, async (req) => {
    if (!coordinator) throw new ApiError(503, 'unavailable', 'no coordinator is configured: no committee can be proposed');
    const tier = req.query.tier;
    try {
      const p = await coordinator.proposeCommittee({ owner: req.caller!.org, tier: WIRE_TIERS[tier] }, { deadline: Date.now() + 5_000 });
      return {
        tier, threshold: p.threshold, roster_version: Number(p.rosterVersion),
        members: p.members.map((m) => {
          const kind = KIND_NAMES[m.kind];
          if (!kind) throw new ApiError(503, 'unavailable', `the coordinator proposed node ${m.nodeId} of an unknown kind`);
          return { node_id: m.nodeId, kind, signing_key: bytesToHex(m.signingKey), encryption_key: bytesToHex(m.encryptionKey) };
        }),
      };
    } catch (err) {
      const e = err as grpc.ServiceError;
      if (typeof e.code === 'number') throw new ApiError(503, 'unavailable', `no committee can be proposed now: ${e.details ?? e.message}`);
      throw err;
    }
  });
};
