// Customer-run signer nodes on the vault API (docs/vault-api.md "Nodes"): enrolment, listing and
// revocation, and what a node operator needs to configure a node. The routes (api/routes/v1/nodes.ts)
// validate and document with them; the SDK sends and reads them.
import { Type } from '@sinclair/typebox';

export const NodeIdT = Type.String({ pattern: '^n[0-9a-f]{20}$', description: 'n + 20 hex characters, derived from the signing key' });
export const KeyHexT = Type.String({ pattern: '^[0-9a-fA-F]{64}$' });

/** Node kinds a customer enrols: `self` seats in self vaults, `tee` (with an attestation) in customer_tee vaults. */
export const EnrolledKindSchema = Type.Union([Type.Literal('self'), Type.Literal('tee')]);

/** POST /v1/nodes: the node's identity as `npm run node-identity` prints it. */
export const EnrolNodeBody = Type.Object({
  kind: EnrolledKindSchema,
  node_id: NodeIdT,
  signing_key: Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'hex of the node\'s Ed25519 identity key' }),
  encryption_key: Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'hex of the node\'s X25519 key' }),
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
  attestation: Type.Optional(Type.String({
    minLength: 1, maxLength: 32768, pattern: '^[A-Za-z0-9+/]+={0,2}$',
    description: 'tee: base64 of the enclave\'s attestation document whose user_data binds these keys (docs/tee.md)',
  })),
}, { additionalProperties: false });

export const Node = Type.Object({
  id: Type.String({ description: 'the node id' }),
  kind: EnrolledKindSchema,
  signing_key: Type.String(),
  encryption_key: Type.String(),
  label: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  /** tee: the measurements the attestation showed. */
  pcrs: Type.Union([Type.Record(Type.String({ pattern: '^[0-9]+$' }), Type.String()), Type.Null()]),
  attached: Type.Boolean({ description: 'whether the node is attached to the coordinator now' }),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

export const NodeList = Type.Object({ nodes: Type.Array(Node) });

/** PUT /v1/tee/measurements: the enclave builds the organization allows, versioned (docs/tee.md). */
export const TeeMeasurementsBody = Type.Object({
  version: Type.Integer({ minimum: 1, maximum: 2 ** 32 - 1, description: 'higher than the version in force' }),
  allowed: Type.Array(Type.Record(Type.String({ pattern: '^(0|1|2|3|4|8)$' }), Type.String({ pattern: '^[0-9a-fA-F]{96}$' }), {
    description: 'one entry per allowed build: PCR index -> 48-byte SHA-384 value, hex; every PCR named must match',
  }), { minItems: 1, maxItems: 16 }),
}, { additionalProperties: false });

export const TeeMeasurements = Type.Object({
  version: Type.Integer(),
  allowed: Type.Array(Type.Record(Type.String(), Type.String())),
  updated_at: Type.String({ format: 'date-time' }),
});

/** GET /v1/node-config: what a customer's node needs to join the service. */
export const NodeSetup = Type.Object({
  coordinator_address: Type.Union([Type.String({ description: 'NODE_COORDINATOR: host:port the node dials, or every coordinator shard\'s host:port separated by commas' }), Type.Null()]),
  coordinator_addresses: Type.Array(Type.String({ description: 'host:port' }), { description: 'every coordinator the node attaches to (one per shard); empty when the service has not published them' }),
  operator_keys: Type.Array(Type.String({ description: 'Ed25519 public key, hex: NODE_OPERATOR_KEYS' })),
  organization: Type.String({ description: 'NODE_OWNER' }),
});
