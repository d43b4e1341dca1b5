// GET /v1/committees (docs/vault-api.md): the committee a new vault of a tier would get now, which the
// customer checks and binds in its signed POST /v1/vaults. The route (api/routes/v1/committees.ts)
// validates and documents with these; the SDK reads the proposal.
import { Type } from '@sinclair/typebox';
import { TierSchema } from './tier.ts';

export const CommitteeQuery = Type.Object({
  tier: TierSchema,
  customer_node: Type.Optional(Type.String({ pattern: '^n[0-9a-f]{20}$', description: 'self and customer_tee: the enrolled node to seat (default: the earliest active one of the tier\'s kind)' })),
}, { additionalProperties: false });

export const Committee = Type.Object({
  tier: TierSchema,
  threshold: Type.Integer({ description: 'members needed to sign' }),
  roster_version: Type.Integer({ description: 'version of the operator-signed roster the service members come from' }),
  members: Type.Array(Type.Object({
    node_id: Type.String(),
    kind: Type.Union([Type.Literal('service'), Type.Literal('self'), Type.Literal('tee')]),
    signing_key: Type.String({ description: 'Ed25519, hex' }),
    encryption_key: Type.String({ description: 'X25519, hex' }),
  })),
});
