// Funding and off-ramp requests (docs/platform/funding.md): the `funding` area's 7 operations, with a
// workspace bearer key (funding.read, funding.manage). Both POSTs need an Idempotency-Key; the same key
// and body answer the same request, another body is 409 idempotency_key_reused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, requiredIdempotencyKey } from '../../idempotency.ts';
import { fundingView, offRampView, type FundingService, type RequestFilters } from '../../funding/funding-service.ts';
import { FUNDING_FAILURE_REASONS, FUNDING_STATUSES, OFF_RAMP_FAILURE_REASONS, OFF_RAMP_STATUSES } from '../../funding/funding-states.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['funding'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };

// A union of literals, checked as one; typed as the union of its members.
const HolderRef = Type.String({ minLength: 1, maxLength: 64 });
const WalletRef = Type.String({ minLength: 1, maxLength: 64 });
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217' });
/** Base units as decimal digits, positive, without leading zeros. */
const Cents = Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'minor units (cents), a positive integer as a string' });
const Units = Type.String({ pattern: '^[1-9][0-9]{0,77}$', description: 'token base units, a positive integer as a string' });

const FundingRequest = Type.Object({
  id: Type.String(), account_holder_id: Type.String(), wallet_id: Type.String(), chain: Type.String(), address: Type.String(), asset: Type.String(),
  status: literals(FUNDING_STATUSES), fiat_amount: Type.String(), currency: Type.String(), stablecoin_amount: Type.String(), rail: Type.String(),
  rail_transfer_id: Nullable(Type.String()), failure_reason: Nullable(literals(FUNDING_FAILURE_REASONS)), return_reason: Nullable(Type.String()),
  mint_tx_hash: Nullable(Type.String()), created_at: Type.String(), updated_at: Type.String(), completed_at: Nullable(Type.String()),
});
const OffRampRequest = Type.Object({
  id: Type.String(), account_holder_id: Type.String(), wallet_id: Type.String(), chain: Type.String(), address: Type.String(), asset: Type.String(),
  burn_address: Type.String(), status: literals(OFF_RAMP_STATUSES), stablecoin_amount: Type.String(), fiat_amount: Type.String(), currency: Type.String(),
  transaction_id: Nullable(Type.String()), tx_hash: Nullable(Type.String()), block_number: Nullable(Type.Integer()), rail: Type.String(),
  rail_transfer_id: Nullable(Type.String()), failure_reason: Nullable(literals(OFF_RAMP_FAILURE_REASONS)), return_reason: Nullable(Type.String()),
  expires_at: Type.String(), created_at: Type.String(), updated_at: Type.String(), completed_at: Nullable(Type.String()),
});
const CreateFunding = Type.Object({ account_holder_id: HolderRef, wallet_id: WalletRef, fiat_amount: Cents, currency: Currency }, { additionalProperties: false });
const CreateOffRamp = Type.Object({ account_holder_id: HolderRef, wallet_id: WalletRef, stablecoin_amount: Units, currency: Currency }, { additionalProperties: false });
const listQuery = (statuses: readonly string[]) => Type.Object({
  ...PageQuery, account_holder_id: Type.Optional(Type.String({ pattern: '^ah_[0-9a-f]{26}$' })), status: Type.Optional(literals(statuses)),
}, { additionalProperties: false });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const BurnAddresses = Type.Object({ data: Type.Array(Type.Object({ chain: Type.String(), asset: Type.String(), address: Type.String() })) });

export const fundingRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; funding: FundingService }> = async (app, { platform, funding }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const scoped = (req: FastifyRequest) => ({ ...scopeOf(req), environment: principalOf(req).environment });

  app.get('/funding-requests', {
    config: { permission: 'funding.read' },
    schema: { summary: 'List funding requests, oldest first, by account holder or status', tags: TAGS, security: read, querystring: listQuery(FUNDING_STATUSES), response: { 200: Page(FundingRequest), ...errors } },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return funding.listFunding(scopeOf(req), filters as RequestFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.post('/funding-requests', {
    config: { permission: 'funding.manage' },
    schema: {
      summary: 'Fund an account holder\'s wallet: pull fiat through the rail, then mint the stablecoin to the wallet',
      description: '`fiat_amount` in cents; the stablecoin amount is fiat_amount × 10^16 units (18 decimals). The holder must be active and the wallet one of its linked EVM wallets. Idempotency-Key required. docs/platform/funding.md.',
      tags: TAGS, security: change, body: CreateFunding, response: { 201: FundingRequest, ...errors },
    },
  }, async (req, reply) => {
    const scope = scoped(req);
    const key = requiredIdempotencyKey(req);
    const made = await idempotent.run(scope.workspace, 'create_funding_request', key, req.body, async () => ({ id: (await funding.createFunding(scope, actorOf(req), req.body, key)).id }));
    return reply.code(201).send(fundingView(await funding.getFunding(scope, made.id)));
  });

  app.get('/funding-requests/:id', {
    config: { permission: 'funding.read' },
    schema: { summary: 'Read a funding request', tags: TAGS, security: read, params: IdParam, response: { 200: FundingRequest, ...errors } },
  }, async (req) => fundingView(await funding.getFunding(scopeOf(req), req.params.id)));

  app.get('/off-ramp-requests', {
    config: { permission: 'funding.read' },
    schema: { summary: 'List off-ramp requests, oldest first, by account holder or status', tags: TAGS, security: read, querystring: listQuery(OFF_RAMP_STATUSES), response: { 200: Page(OffRampRequest), ...errors } },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return funding.listOffRamp(scopeOf(req), filters as RequestFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.get('/off-ramp-requests/burn-address', {
    config: { permission: 'funding.read' },
    schema: {
      summary: 'Where a holder sends stablecoin to redeem it for fiat: the rail\'s redemption address, per chain and asset',
      tags: TAGS, security: read, querystring: Type.Object({ chain: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{1,40}$' })) }, { additionalProperties: false }),
      response: { 200: BurnAddresses, ...errors },
    },
  }, async (req) => ({ data: await funding.burnAddresses(scoped(req), req.query.chain) }));

  app.post('/off-ramp-requests', {
    config: { permission: 'funding.manage' },
    schema: {
      summary: 'Redeem an account holder\'s stablecoin for fiat: expects its transfer of exactly the amount to the burn address, then pays out through the rail',
      description: 'The transfer is an ordinary vault-API transaction of the holder\'s wallet (for a hosted vault, authorized by the member like any other). `stablecoin_amount` in token units, a whole number of cents. Idempotency-Key required. docs/platform/funding.md.',
      tags: TAGS, security: change, body: CreateOffRamp, response: { 201: OffRampRequest, ...errors },
    },
  }, async (req, reply) => {
    const scope = scoped(req);
    const key = requiredIdempotencyKey(req);
    const made = await idempotent.run(scope.workspace, 'create_off_ramp_request', key, req.body, async () => ({ id: (await funding.createOffRamp(scope, actorOf(req), req.body, key)).id }));
    return reply.code(201).send(offRampView(await funding.getOffRamp(scope, made.id)));
  });

  app.get('/off-ramp-requests/:id', {
    config: { permission: 'funding.read' },
    schema: { summary: 'Read an off-ramp request', tags: TAGS, security: read, params: IdParam, response: { 200: OffRampRequest, ...errors } },
  }, async (req) => offRampView(await funding.getOffRamp(scopeOf(req), req.params.id)));
};
