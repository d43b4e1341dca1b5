// GET /v1/committees?tier=... (docs/vault-api.md): the committee a new vault of the caller's
// organization would get now, with each member's kind and keys and the roster version, so the customer
// can check it and bind it (`committee`, `customer_node`) in its signed POST /v1/vaults.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { CoordinatorShards } from '../../coordinator/coordinator-shards.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import { WIRE_TIERS } from '../../../core/tier-wire.ts';
import { KIND_NAMES } from '../../../core/link/node-kind.ts';
import { Committee, CommitteeQuery } from '../../../core/api-schemas/committees.ts';

export const committeeRoutes: FastifyPluginAsyncTypebox<{ coordinators: CoordinatorShards | undefined; vaults: VaultService }> = async (app, { coordinators, vaults }) => {
  app.get('/committees', {
    schema: {
      summary: 'The committee a new vault of this tier would get now, to check and bind in the signed POST /v1/vaults',
      tags: ['committees'], security: [{ httpSignature: [] }],
      querystring: CommitteeQuery,
      response: { 200: Committee, 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 503: ErrorBody },
    },
  }, async (req) => {
    if (!coordinators) throw new CustodyError('unavailable', 'no coordinator is configured: no committee can be proposed');
    const tier = req.query.tier;
    // Self and customer_tee: the organization's enrolled node (no_enrolled_node without one).
    if (req.query.customer_node && tier === 'hosted') throw new CustodyError('invalid_request', 'customer_node applies to self and customer_tee vaults only');
    const customer = await vaults.nodes.customerNodeFor(req.caller!.org, tier, req.query.customer_node);
    try {
      // The vault's id, and so its shard, is not known yet: any shard answers, and every shard proposes
      // the same committee (the same signed roster, the same nodes attached to each, a deterministic choice).
      const p = await coordinators.any((c) => c.proposeCommittee({ owner: req.caller!.org, tier: WIRE_TIERS[tier], customerNodeId: customer?.id ?? '' }, { deadline: Date.now() + 5_000 }));
      return {
        tier, threshold: p.threshold, roster_version: Number(p.rosterVersion),
        members: p.members.map((m) => {
          const kind = KIND_NAMES[m.kind];
          if (!kind) throw new CustodyError('unavailable', `the coordinator proposed node ${m.nodeId} of an unknown kind`);
          return { node_id: m.nodeId, kind, signing_key: bytesToHex(m.signingKey), encryption_key: bytesToHex(m.encryptionKey) };
        }),
      };
    } catch (err) {
      // The coordinator client fails with CustodyErrors (core/rpc/rpc-error.ts): an unavailable one (too
      // few nodes attached, no customer node) keeps its code; any other means no proposal now.
      if (err instanceof CustodyError && err.kind !== 'unavailable') throw new CustodyError('unavailable', `no committee can be proposed now: ${err.message}`, { cause: err });
      throw err;
    }
  });
};
