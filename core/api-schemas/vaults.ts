// Vaults and wallets on the vault API (docs/vault-api.md): the request bodies the SDK sends and the
// shapes the API answers with. The routes (api/routes/v1/vaults.ts) validate and document with them.
import { Type, type TLiteral, type TUnion } from '@sinclair/typebox';
import { PolicySchema } from './policy.ts';
import { TierSchema } from './tier.ts';
import { Page, PageQuery } from './page.ts';
import { EVM_NETWORKS } from '../chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../chains/bitcoin/bitcoin-networks.ts';

export const VaultStateSchema = Type.Union([
  Type.Literal('creating'), Type.Literal('active'), Type.Literal('resharing'), Type.Literal('reshare_pending'), Type.Literal('frozen'), Type.Literal('failed'),
]);

/** Every chain the service knows, sandbox and production (each environment serves its own: docs/vault-api.md). */
export const CHAIN_NAMES: readonly string[] = [...EVM_NETWORKS.map((n) => n.chain), ...BITCOIN_NETWORKS.map((n) => n.chain)];
// Typed as one string member, as TierSchema is (a union over a mapped array decodes to never).
export const ChainSchema = Type.Union(CHAIN_NAMES.map((c) => Type.Literal(c))) as unknown as TUnion<[TLiteral<string>]>;

const NodeIdT = Type.String({ pattern: '^n[0-9a-f]{20}$' });
const KeyHexT = Type.String({ pattern: '^[0-9a-fA-F]{64}$' });
// What the customer binds of the committee in its signed request (docs/trust.md "Committees").
const committeeFields = {
  committee: Type.Optional(Type.Array(NodeIdT, { minItems: 1, maxItems: 16, description: 'the node ids the customer was shown (GET /v1/committees); nodes join only this committee' })),
  customer_node: Type.Optional(Type.Object({ node_id: NodeIdT, signing_key: KeyHexT, encryption_key: KeyHexT }, {
    additionalProperties: false, description: 'self and customer_tee: pins one of the organization\'s enrolled nodes (POST /v1/nodes) as the customer member; without it the earliest active enrolled node of the tier\'s kind is seated',
  })),
};

/** POST /v1/vaults. */
export const CreateVaultBody = Type.Object({
  tier: TierSchema,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
  policy: Type.Optional(PolicySchema),
  end_user_subject: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  ...committeeFields,
}, { additionalProperties: false });

/** POST /v1/vaults/{vaultId}/reshare (the body is optional). */
export const ReshareVaultBody = Type.Object({
  target_tier: Type.Optional(TierSchema),
  rotation: Type.Optional(Type.Integer({
    minimum: 0, maximum: 4294967295,
    description: 'the vault\'s current rotation, which the signed request binds: the nodes refuse a request of another rotation (a replay). '
      + 'Needed, with target_tier and committee, for a move to or from hosted and for a committee change of a self or customer_tee vault; the SDK and CLI fill it in',
  })),
  ...committeeFields,
}, { additionalProperties: false });

/** Whether an active vault can sign now, as its coordinator sees it (docs/vault-api.md "Signing readiness"). */
function SigningReadiness() {
  return Type.Object({
    ecdsa: Type.Union([Type.Literal('ready'), Type.Literal('unavailable'), Type.Literal('unknown')], {
      description: 'ready: some threshold of attached committee members hold ECDSA OT material on every pair among them; unavailable: none does now; unknown: the coordinator did not answer',
    }),
    reason: Type.Union([Type.Literal('members_detached'), Type.Literal('ot_pairs_missing'), Type.Literal('coordinator_unreachable'), Type.Null()]),
    detached_members: Type.Array(Type.String(), { description: 'committee nodes not attached to the coordinator now' }),
    missing_pairs: Type.Array(Type.String(), { description: 'pairs of attached members ("i-j", committee positions from 1) whose OT setup has not completed; the coordinator sets them up on its own' }),
    message: Type.Union([Type.String(), Type.Null()]),
  });
}

export const Vault = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  tier: TierSchema,
  state: VaultStateSchema,
  rotation: Type.Integer({ description: 'increments at each share rotation; public key and addresses stay' }),
  public_key: Type.Union([Type.String({ description: 'compressed secp256k1 key, hex' }), Type.Null()]),
  xpub: Type.Union([Type.String({
    description: 'the BIP-32 extended public key the wallets derive from (public_key with the chain code, depth 0): tpub in sandbox, xpub in production; '
      + 'a wallet\'s address is its derivation_path from here (docs/derivation.md)',
  }), Type.Null()]),
  policy: Type.Union([PolicySchema, Type.Null()]),
  end_user_subject: Type.Union([Type.String(), Type.Null()]),
  end_user_auth: Type.Boolean({ description: 'hosted: each transaction needs an end-user token' }),
  problem: Type.Union([Type.String({ description: 'why a reshare needs attention (reshare_pending), why key generation failed (failed), or what it waits for (creating)' }), Type.Null()]),
  committee: Type.Union([Type.Array(Type.Object({ node_id: Type.String(), kind: Type.Union([Type.Literal('service'), Type.Literal('self'), Type.Literal('tee')]) })), Type.Null()], {
    description: 'the nodes holding the shares (null until the key is generated)',
  }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  signing: Type.Optional(Type.Union([SigningReadiness(), Type.Null()], {
    description: 'GET /v1/vaults/{vaultId} only: whether the vault can sign now, and why not (docs/vault-api.md "Signing readiness"); null unless active',
  })),
});

export const Wallet = Type.Object({
  id: Type.String(),
  vault_id: Type.String(),
  chain: Type.String(),
  address_type: Type.Union([Type.Literal('evm'), Type.Literal('p2wpkh'), Type.Literal('p2tr')]),
  account_index: Type.Integer(),
  address: Type.String(),
  derivation_path: Type.String({ description: 'the non-hardened BIP-32 path from the vault\'s xpub to this address\'s key, e.g. m/44/60/0/0/0' }),
  created_at: Type.String({ format: 'date-time' }),
  state: Type.Union([Type.Literal('active'), Type.Literal('decommissioned')], { description: 'a decommissioned wallet takes no new transaction (docs/platform/wallets.md)' }),
  decommissioned_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/** GET /v1/vaults: the organization's vaults, oldest first (docs/vault-api.md "Lists"). */
export const ListVaultsQuery = Type.Object({ ...PageQuery, state: Type.Optional(VaultStateSchema), tier: Type.Optional(TierSchema) }, { additionalProperties: false });
export const VaultPage = Page(Vault);

/** GET /v1/vaults/{vaultId}/wallets: the vault's wallets, oldest first. */
export const ListWalletsQuery = Type.Object({ ...PageQuery, chain: Type.Optional(ChainSchema) }, { additionalProperties: false });
export const WalletPage = Page(Wallet);
