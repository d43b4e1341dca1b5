// POST /v1/vaults, GET /v1/vaults/{vaultId}, POST /v1/vaults/{vaultId}/wallets, GET /v1/wallets/{walletId}
// (docs/vault-api.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ApiError, ErrorBody } from '../../errors.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import type { VaultRecord, WalletRecord } from '../../vaults/records.ts';
import { CHAINS } from '../../vaults/wallet-address.ts';
import { PolicySchema, type Policy } from '../../policy/policy.ts';

const TierT = Type.Union([Type.Literal('hosted'), Type.Literal('self'), Type.Literal('customer_tee')]);
const NodeIdT = Type.String({ pattern: '^n[0-9a-f]{20}$' });
const KeyHexT = Type.String({ pattern: '^[0-9a-fA-F]{64}$' });
// What the customer binds of the committee in its signed request (docs/trust.md "Committees").
const committeeFields = {
  committee: Type.Optional(Type.Array(NodeIdT, { minItems: 1, maxItems: 16, description: 'the node ids the customer was shown (GET /v1/committees); nodes join only this committee' })),
  customer_node: Type.Optional(Type.Object({ node_id: NodeIdT, signing_key: KeyHexT, encryption_key: KeyHexT }, {
    additionalProperties: false, description: 'self and customer_tee: the customer\'s own node (npm run node-identity), the only node seated as the customer member',
  })),
};

export const Vault = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  tier: TierT,
  state: Type.Union([Type.Literal('creating'), Type.Literal('active'), Type.Literal('resharing'), Type.Literal('reshare_pending'), Type.Literal('frozen')]),
  rotation: Type.Integer({ description: 'increments at each share rotation; public key and addresses stay' }),
  public_key: Type.Union([Type.String({ description: 'compressed secp256k1 key, hex' }), Type.Null()]),
  policy: Type.Union([PolicySchema, Type.Null()]),
  end_user_subject: Type.Union([Type.String(), Type.Null()]),
  end_user_auth: Type.Boolean({ description: 'hosted: each transaction needs an end-user token' }),
  problem: Type.Union([Type.String({ description: 'why a reshare needs attention (reshare_pending), or why the nodes refused to generate the key (creating)' }), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const Wallet = Type.Object({
  id: Type.String(),
  vault_id: Type.String(),
  chain: Type.String(),
  address_type: Type.Union([Type.Literal('evm'), Type.Literal('p2wpkh'), Type.Literal('p2tr')]),
  account_index: Type.Integer(),
  address: Type.String(),
  derivation_path: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

const vaultView = (v: VaultRecord) => ({
  id: v.id, name: v.name, tier: v.tier, state: v.state, rotation: v.rotation, public_key: v.public_key, policy: v.policy as Policy | null,
  end_user_subject: v.end_user_subject, end_user_auth: v.end_user_auth ?? false, problem: v.problem ?? null, created_at: v.created_at, updated_at: v.updated_at,
});
const walletView = ({ org: _o, ...w }: WalletRecord) => w;
const VaultId = Type.Object({ vaultId: Type.String({ minLength: 1, maxLength: 64 }) });

export const vaultRoutes: FastifyPluginAsyncTypebox<{ vaults: VaultService }> = async (app, { vaults }) => {
  app.post('/vaults', {
    schema: {
      body: Type.Object({
        tier: TierT,
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
        policy: Type.Optional(PolicySchema),
        end_user_subject: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
        ...committeeFields,
      }, { additionalProperties: false }),
      response: { 202: Vault, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (req, reply) => reply.code(202).send(vaultView(await vaults.createVault(req.caller!.org, req.body, req.caller!.entry()))));

  app.get('/vaults/:vaultId', { schema: { params: VaultId, response: { 200: Vault, 401: ErrorBody, 404: ErrorBody } } }, async (req) =>
    vaultView(await vaults.vault(req.caller!.org, req.params.vaultId)));

  app.post('/vaults/:vaultId/reshare', {
    schema: {
      params: VaultId,
      body: Type.Optional(Type.Object({ target_tier: Type.Optional(TierT), ...committeeFields }, { additionalProperties: false })),
      response: { 202: Type.Object({ id: Type.String(), status: Type.Literal('accepted') }), 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
    // The signed request goes to the nodes, which seat a customer node only when the customer named it.
  }, async (req, reply) => reply.code(202).send(await vaults.reshare(req.caller!.org, req.params.vaultId, req.body?.target_tier, req.body ?? {}, req.caller!.entry())));

  app.post('/vaults/:vaultId/wallets', {
    schema: {
      params: VaultId,
      body: Type.Object({
        chain: Type.Union(CHAINS.map((c) => Type.Literal(c.chain))),
        account_index: Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647 })),
        address_type: Type.Optional(Type.Union([Type.Literal('p2wpkh'), Type.Literal('p2tr')])),
      }, { additionalProperties: false }),
      response: { 200: Wallet, 201: Wallet, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (req, reply) => {
    const { wallet, created } = await vaults.createWallet(req.caller!.org, req.params.vaultId, req.body.chain, req.body.account_index ?? 0, req.body.address_type);
    return reply.code(created ? 201 : 200).send(walletView(wallet));
  });

  // A wallet's fields (chain, address) are what a client needs to build the intent it signs.
  app.get('/wallets/:walletId', {
    schema: { params: Type.Object({ walletId: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: Wallet, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody } },
  }, async (req) => {
    const w = await vaults.store.get<WalletRecord>('wallets', req.params.walletId);
    if (!w || w.org !== req.caller!.org) throw new ApiError(404, 'not_found', 'no such wallet');
    return walletView(w);
  });
};
