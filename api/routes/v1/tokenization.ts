// Tokenization (docs/platform/tokenization.md): authorities (6 operations) and token deployments (6), with
// a workspace bearer key (tokenization.read, tokenization.manage). Every creating POST needs an
// Idempotency-Key: the same key and body answer the same record, another body is 409 idempotency_key_reused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TUnsafe } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf, requiredIdempotencyKey } from '../../idempotency.ts';
import { authorityView } from '../../tokenization/authority-service.ts';
import { tokenView, type TokenFilters } from '../../tokenization/token-service.ts';
import { TOKEN_STATUSES } from '../../tokenization/token-states.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';

const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 502: ErrorBody, 503: ErrorBody };

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const literals = <T extends string>(xs: readonly T[]) => Type.Union(xs.map((x) => Type.Literal(x))) as unknown as TUnsafe<T>;
const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: 'an EVM address' });
const Chain = Type.String({ pattern: '^[a-z0-9-]{1,40}$', description: 'a chain name of GET /v1/chains/available, e.g. evm-local' });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const KINDS = ['erc20', 'erc721', 'erc1155'] as const;

const Authority = Type.Object({
  id: Type.String(), name: Type.String(),
  addresses: Type.Array(Type.Object({ address: Type.String(), chain: Type.String(), kind: literals(['eoa', 'contract'] as const), proven_at: Type.String() })),
  control_safes: Type.Array(Type.Object({ address: Type.String(), chain: Type.String(), owners: Type.Array(Type.String()), threshold: Type.Integer(), origin: literals(['deployed', 'registered'] as const), added_at: Type.String() })),
  created_at: Type.String(), updated_at: Type.String(),
});
const Challenge = Type.Object({
  challenge_id: Type.String(), authority_id: Type.String(), address: Type.String(), chain: Type.String(),
  message: Type.String({ description: 'the exact text to sign with EIP-191 personal_sign (an EOA), or for the contract account\'s ERC-1271 isValidSignature over its EIP-191 hash' }),
  expires_at: Type.String(),
});
const Owner = Type.Object({ address: Type.String(), kind: literals(['vault', 'outside'] as const), wallet_id: Nullable(Type.String()) });
const Token = Type.Object({
  id: Type.String(), kind: literals(KINDS), chain: Type.String(), chain_id: Type.Integer(), name: Nullable(Type.String()), symbol: Nullable(Type.String()), decimals: Nullable(Type.Integer()),
  base_uri: Nullable(Type.String()), uri: Nullable(Type.String()), authority_id: Nullable(Type.String()),
  admin: Type.Object({ owners: Type.Array(Owner), threshold: Type.Integer() }, { description: 'the admin Safe\'s owners and threshold' }),
  address: Type.String({ description: 'the token, CREATE2: known before it is deployed' }), safe: Type.String({ description: 'the admin Safe, CREATE2 through the proxy factory' }), forwarder: Type.String({ description: 'the chain\'s ERC2771Forwarder the token trusts' }),
  status: literals(TOKEN_STATUSES),
  steps: Type.Array(Type.Object({ name: Type.String(), address: Type.String(), status: literals(['pending', 'sent', 'done'] as const) })),
  failure: Nullable(Type.Object({ reason: literals(['revert', 'engine'] as const), step: Type.String(), message: Type.String(), error_name: Nullable(Type.String()), at: Type.String() })),
  deploy_attempts: Type.Integer(), created_at: Type.String(), updated_at: Type.String(), deployed_at: Nullable(Type.String()),
});
const OwnerInput = Type.Union([
  Type.Object({ wallet_id: Type.String({ minLength: 1, maxLength: 64, description: 'an EVM wallet of one of the customer\'s vaults on the token\'s chain' }) }, { additionalProperties: false }),
  Type.Object({ address: Address }, { additionalProperties: false, description: 'an outside signer' }),
]);
const Admin = Type.Object({ owners: Type.Array(OwnerInput, { minItems: 1, maxItems: 20 }), threshold: Type.Integer({ minimum: 1, maximum: 20 }) }, { additionalProperties: false });
const Common = { chain: Chain, authority_id: Type.Optional(Type.String({ maxLength: 64 })), admin: Admin };
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Symbol = Type.String({ minLength: 1, maxLength: 16, pattern: '^[A-Za-z0-9._-]+$' });
const Uri = Type.String({ minLength: 1, maxLength: 512 });
const DeployErc20 = Type.Object({ ...Common, name: Name, symbol: Symbol, decimals: Type.Optional(Type.Integer({ minimum: 0, maximum: 36 })) }, { additionalProperties: false });
const DeployErc721 = Type.Object({ ...Common, name: Name, symbol: Symbol, base_uri: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: false });
const DeployErc1155 = Type.Object({ ...Common, uri: Uri }, { additionalProperties: false });
const TokenQuery = Type.Object({
  ...PageQuery, status: Type.Optional(literals(TOKEN_STATUSES)), kind: Type.Optional(literals(KINDS)), chain: Type.Optional(Chain), authority_id: Type.Optional(Type.String({ maxLength: 64 })),
}, { additionalProperties: false });

export const tokenizationRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; tokenization: Tokenization }> = async (app, { platform, tokenization }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock);
  const { authorities, tokens } = tokenization;

  // ── Authorities ────────────────────────────────────────────────────────────────────────────────────
  app.get('/tokenization/authorities', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'List the workspace\'s token authorities, oldest first', tags: TAGS, security: read, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(Authority), ...errors } },
  }, async (req) => authorities.list(scopeOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/tokenization/authorities', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Create a token authority (an issuer) that then proves control of its addresses',
      description: 'Idempotency-Key required. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change, body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 120 }) }, { additionalProperties: false }), response: { 201: Authority, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const r = await authorities.create(scope, actorOf(req), req.body, requiredIdempotencyKey(req, 'authority'));
    return reply.code(201).send(authorityView(r));
  });

  app.get('/tokenization/authorities/:id', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a token authority with its proven addresses and control Safes', tags: TAGS, security: read, params: IdParam, response: { 200: Authority, ...errors } },
  }, async (req) => authorityView(await authorities.get(scopeOf(req), req.params.id)));

  app.post('/tokenization/authorities/:id/proof-challenge', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'A one-use, expiring challenge an address signs to prove the authority controls it',
      description: 'Bound to the authority, the address and the chain; expires after API_TOKENIZATION_CHALLENGE_TTL_SEC. Idempotency-Key required. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change, params: IdParam, body: Type.Object({ address: Address, chain: Chain }, { additionalProperties: false }), response: { 201: Challenge, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'challenge');
    const c = await idempotent.run(scope.workspace, `authority_challenge:${req.params.id}`, key, req.body, async () => {
      const made = await authorities.challenge(scope, req.params.id, req.body);
      return { challenge_id: made.id, authority_id: made.authority_id, address: made.address, chain: made.chain, message: made.message, expires_at: made.expires_at };
    });
    return reply.code(201).send(c);
  });

  app.post('/tokenization/authorities/:id/proof', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Prove control of the challenged address: EIP-191 for an EOA, ERC-1271 for a contract account',
      description: 'Verified against the chain with viem\'s verifyMessage; a proof that does not verify is 422 address_proof_invalid and leaves the challenge unused; a used challenge is 409 challenge_used, an expired one 409 challenge_expired. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ challenge_id: Type.String({ maxLength: 64 }), signature: Type.String({ pattern: '^0x[0-9a-fA-F]{2,}$', maxLength: 20_000 }) }, { additionalProperties: false }),
      response: { 200: Authority, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    idempotencyKeyOf(req);
    return authorityView(await authorities.prove(scope, actorOf(req), req.params.id, req.body));
  });

  app.post('/tokenization/authorities/control-safes', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Add a control Safe owned by an authority\'s proven addresses: deploy a new one, or register an existing one',
      description: '`address`: an existing Safe, registered after getOwners/getThreshold are read on chain. `owners` and `threshold`: a new Safe deployed through the chain layer (the service deployer pays). Every owner must be an address the authority proved on the chain. Idempotency-Key required. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change,
      body: Type.Object({
        authority_id: Type.String({ maxLength: 64 }), chain: Chain, address: Type.Optional(Address),
        owners: Type.Optional(Type.Array(Address, { minItems: 1, maxItems: 20 })), threshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
      }, { additionalProperties: false }),
      response: { 201: Authority, ...errors },
    },
  }, async (req, reply) => {
    const { authority_id, ...input } = req.body;
    const r = await authorities.controlSafe(scopeOf(req), actorOf(req), authority_id, input, requiredIdempotencyKey(req, 'control Safe'));
    return reply.code(201).send(authorityView(r));
  });

  // ── Deploy ─────────────────────────────────────────────────────────────────────────────────────────
  const deployRoute = (kind: (typeof KINDS)[number], body: typeof DeployErc20 | typeof DeployErc721 | typeof DeployErc1155, what: string) => {
    app.post(`/tokenization/${kind}`, {
      config: { permission: 'tokenization.manage' },
      schema: {
        summary: `Deploy ${what} governed by an m-of-n admin Safe of the customer's vault wallets (and outside signers)`,
        description: 'Every address (token, Safe) is computed before anything is sent and answered at once with status `deploying`; the deployment then runs step by step, each step recorded before it is sent, to `deployed` or `failed_resumable`. The service deployer account pays. Idempotency-Key required. docs/platform/tokenization.md#deploying.',
        tags: TAGS, security: change, body, response: { 201: Token, ...errors },
      },
    }, async (req, reply) => {
      const r = await tokens.deploy(scopeOf(req), actorOf(req), kind, req.body as Parameters<typeof tokens.deploy>[3], requiredIdempotencyKey(req, 'token'));
      return reply.code(201).send(tokenView(r));
    });
  };
  deployRoute('erc20', DeployErc20, 'an ERC-20 token');
  deployRoute('erc721', DeployErc721, 'an ERC-721 token');
  deployRoute('erc1155', DeployErc1155, 'an ERC-1155 token');

  app.get('/tokenization/tokens', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'List the workspace\'s tokens, oldest first, by status, kind, chain or authority', tags: TAGS, security: read, querystring: TokenQuery, response: { 200: Page(Token), ...errors } },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return tokens.list(scopeOf(req), filters as TokenFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.get('/tokenization/tokens/:id', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a token: its addresses, admin Safe and deployment', tags: TAGS, security: read, params: IdParam, response: { 200: Token, ...errors } },
  }, async (req) => tokenView(await tokens.get(scopeOf(req), req.params.id)));

  app.post('/tokenization/tokens/:id/deploy/resume', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Continue a failed_resumable deployment where it stopped; nothing already on chain is sent again',
      description: 'Answers the token in `deploying`; a deployed token is 409 conflict. Idempotency-Key required. docs/platform/tokenization.md#deploying.',
      tags: TAGS, security: change, params: IdParam, response: { 200: Token, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'resume');
    const done = await idempotent.run(scope.workspace, `token_resume:${req.params.id}`, key, {}, async () => ({ id: (await tokens.resume(scope, actorOf(req), req.params.id)).id }));
    return tokenView(await tokens.get(scope, done.id));
  });
};
