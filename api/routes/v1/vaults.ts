// POST /v1/vaults, GET /v1/vaults/{vaultId}, POST /v1/vaults/{vaultId}/retry, DELETE /v1/vaults/{vaultId},
// POST /v1/vaults/{vaultId}/wallets, GET /v1/wallets/{walletId},
// and the lists GET /v1/vaults and GET /v1/vaults/{vaultId}/wallets (docs/vault-api.md "Lists").
// GET /v1/wallets/{walletId} also takes a workspace bearer key (docs/customers.md "Wallets: one
// resource, one path"); the platform API's other wallet operations are in wallets.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import type { VaultRecord } from '../../vaults/records.ts';
import { CHAINS } from '../../vaults/wallet-address.ts';
import { extendedPublicKey } from '../../vaults/extended-key.ts';
import type { Policy } from '../../../core/api-schemas/policy.ts';
import { CreateVaultBody, ListVaultsQuery, ListWalletsQuery, ReshareVaultBody, Vault, VaultPage, Wallet, WalletPage } from '../../../core/api-schemas/vaults.ts';
import { DEFAULT_LIMIT, indexPage, type CursorCodec } from '../../store/pagination.ts';
import { walletView } from '../../wallets/wallet-view.ts';
import { authenticateBearer, hasBearer } from '../../auth/bearer-auth.ts';
import type { TenancyService } from '../../tenancy/tenancy-service.ts';
import type { CustomerLinks } from '../../customers/customer-links.ts';
import { WALLETS } from '../../vaults/collections.ts';
import { signingReadiness } from '../../vaults/signing-readiness.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import type { CoordinatorShards } from '../../coordinator/coordinator-shards.ts';

const vaultView = (v: VaultRecord, environment: 'sandbox' | 'production') => ({
  id: v.id, name: v.name, tier: v.tier, state: v.state, rotation: v.rotation, public_key: v.public_key,
  xpub: v.public_key && v.chain_code ? extendedPublicKey(v.public_key, v.chain_code, environment) : null, policy: v.policy as Policy | null,
  end_user_subject: v.end_user_subject, end_user_auth: v.end_user_auth ?? false, problem: v.problem ?? null, committee: v.committee ?? null, created_at: v.created_at, updated_at: v.updated_at,
});
const VaultId = Type.Object({ vaultId: Type.String({ minLength: 1, maxLength: 64 }) });

/** With the platform API: how GET /v1/wallets/{walletId} authenticates a bearer key and finds its organization. */
export interface WalletBearer {
  tenancy: TenancyService;
  links: CustomerLinks;
}

export interface VaultRoutesOptions {
  vaults: VaultService;
  cursors: CursorCodec;
  bearer?: WalletBearer | undefined;
  coordinators?: CoordinatorShards | undefined;
  clock?: (() => number) | undefined;
  /** How long an Idempotency-Key's record answers (api/idempotency.ts). */
  idempotencyWindowMs?: number | undefined;
}

export const vaultRoutes: FastifyPluginAsyncTypebox<VaultRoutesOptions> = async (app, { vaults, cursors, bearer, coordinators, clock, idempotencyWindowMs }) => {
  const idempotent = new IdempotentRequests(vaults.store, clock, idempotencyWindowMs);
  app.get('/vaults', {
    schema: { summary: 'The organization\'s vaults, oldest first, filtered by state and tier', tags: ['vaults'], security: [{ httpSignature: [] }], querystring: ListVaultsQuery, response: { 200: VaultPage, 400: ErrorBody, 401: ErrorBody } },
  }, async (req) => {
    const { cursor, limit, state, tier } = req.query;
    const page = await indexPage(vaults.store, cursors, vaults.vaultList(req.caller!.org, { state, tier }), cursor, limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map((v) => vaultView(v, vaults.environment)) };
  });

  app.get('/vaults/:vaultId/wallets', {
    schema: {
      summary: 'A vault\'s wallets, oldest first, filtered by chain', tags: ['wallets'], security: [{ httpSignature: [] }], params: VaultId, querystring: ListWalletsQuery,
      response: { 200: WalletPage, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (req) => {
    const { cursor, limit, chain } = req.query;
    const page = await indexPage(vaults.store, cursors, await vaults.walletList(req.caller!.org, req.params.vaultId, { chain }), cursor, limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(walletView) };
  });

  app.post('/vaults', {
    schema: {
      summary: 'Create a vault: answers 202 in creating while the nodes generate its key',
      description: 'Key generation runs from a durable job; poll GET /v1/vaults/{vaultId} until active. `committee` and `customer_node`, from GET /v1/committees, bind the signer nodes (docs/vault-api.md "Vaults and wallets"). '
        + 'An `Idempotency-Key` makes a retry safe: the same key and body again answer the vault it created, as it is now (header `idempotent-replayed: true`); the same key with another body is 409 idempotency_key_reused.',
      tags: ['vaults'], security: [{ httpSignature: [] }],
      body: CreateVaultBody,
      response: { 202: Vault, 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (req, reply) => {
    const org = req.caller!.org;
    // The record keeps the vault's id; a replay reads the vault as it is now.
    const { id } = await idempotent.run(org, 'create_vault', idempotencyKeyOf(req), req.body, async () => ({ id: (await vaults.createVault(org, req.body, req.caller!.entry())).id }));
    return reply.code(202).send(vaultView(await vaults.vault(org, id), vaults.environment));
  });

  app.get('/vaults/:vaultId', { schema: { summary: 'Read a vault: its state, public key, policy, committee and whether it can sign now', tags: ['vaults'], security: [{ httpSignature: [] }], params: VaultId, response: { 200: Vault, 401: ErrorBody, 404: ErrorBody } } }, async (req) => {
    const v = await vaults.vault(req.caller!.org, req.params.vaultId);
    return { ...vaultView(v, vaults.environment), signing: await signingReadiness(coordinators, v) };
  });

  app.post('/vaults/:vaultId/reshare', {
    schema: {
      summary: 'Rotate the vault\'s key shares, optionally to another tier; the public key stays the same',
      tags: ['vaults'], security: [{ httpSignature: [] }],
      params: VaultId,
      body: Type.Optional(ReshareVaultBody),
      response: { 202: Type.Object({ id: Type.String(), status: Type.Literal('accepted') }), 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
    // The signed request goes to the nodes, which seat a customer node only when the customer named it.
  }, async (req, reply) => reply.code(202).send(await vaults.reshare(req.caller!.org, req.params.vaultId, req.body?.target_tier, req.body ?? {}, req.caller!.entry())));

  app.post('/vaults/:vaultId/retry', {
    schema: {
      summary: 'Generate a failed vault\'s key afresh (idempotent: a vault already creating is answered as it is)',
      tags: ['vaults'], security: [{ httpSignature: [] }],
      params: VaultId,
      response: { 202: Vault, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req, reply) => reply.code(202).send(vaultView(await vaults.retryVault(req.caller!.org, req.params.vaultId), vaults.environment)));

  app.delete('/vaults/:vaultId', {
    schema: {
      summary: 'Delete a vault that never got a key (failed, or creating between attempts); a vault with a key is never deleted',
      tags: ['vaults'], security: [{ httpSignature: [] }],
      params: VaultId,
      response: { 204: Type.Null(), 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req, reply) => {
    await vaults.deleteVault(req.caller!.org, req.params.vaultId);
    return reply.code(204).send(null);
  });

  app.post('/vaults/:vaultId/wallets', {
    schema: {
      summary: 'Derive a wallet (chain address) under the vault: 201 when new, 200 when derived before',
      tags: ['wallets'], security: [{ httpSignature: [] }],
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

  // A wallet's fields (chain, address) are what a client needs to build the intent it signs. One route,
  // either credential: a request signature answers for the signing organization; a bearer key, checked
  // here before the signature hook (which then leaves the request alone), for the organization linked to
  // its workspace. Any other wallet is 404, the same answer as for a wallet that does not exist.
  const walletReadSecurity: Record<string, string[]>[] = bearer ? [{ httpSignature: [] }, { bearer: [] }] : [{ httpSignature: [] }];
  app.get('/wallets/:walletId', {
    config: { bearer: bearer !== undefined, permission: 'wallet.read' as const },
    onRequest: async (req) => {
      if (bearer && hasBearer(req)) await authenticateBearer(req, bearer.tenancy);
    },
    schema: {
      summary: 'Read a wallet: its chain, address and state, what an intent needs',
      description: bearer ? 'Takes either credential: an RFC 9421 request signature (the vault API), or a workspace bearer key with `wallet.read` (the platform API), which reads the wallets of the organization linked to its workspace (docs/customers.md).' : 'Request-signed.',
      tags: ['wallets'], security: walletReadSecurity,
      params: Type.Object({ walletId: Type.String({ minLength: 1, maxLength: 64 }) }),
      response: { 200: Wallet, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    },
  }, async (req) => {
    const org = req.caller ? req.caller.org : req.principal && bearer ? await bearer.links.orgOfWorkspace(req.principal) : undefined;
    const w = await WALLETS.in(vaults.store).get(req.params.walletId);
    if (!org || !w || w.org !== org) throw new CustodyError('not_found', 'no such wallet');
    return walletView(w);
  });
};
