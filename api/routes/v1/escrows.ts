// Escrows (docs/platform/escrows.md): the payment area's 5 escrow operations, with a workspace bearer key
// (escrow.read, escrow.manage). POST /escrows and the cancel need an Idempotency-Key; the same key and
// body answer the same escrow, another body is 409 idempotency_key_reused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, requiredIdempotencyKey } from '../../idempotency.ts';
import { escrowView, type EscrowFilters, type EscrowService } from '../../escrow/escrow-service.ts';
import { ESCROW_STATUSES } from '../../escrow/escrow-states.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['escrows'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };

const HolderRef = Type.String({ minLength: 1, maxLength: 64 });
const WalletRef = Type.String({ minLength: 1, maxLength: 64 });
const Units = Type.String({ pattern: '^[1-9][0-9]{0,77}$', description: 'token base units, a positive integer as a string' });
const Instant = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.0{1,3})?Z$', description: 'UTC date-time in whole seconds, e.g. 2030-01-08T00:00:00Z' });
const Call = Type.Object({ function: Type.String(), to: Type.String(), value: Type.String(), data: Type.String() });

const Escrow = Type.Object({
  id: Type.String(), chain: Type.String(), contract: Type.String(), escrow_id: Type.String({ description: 'the id the contract keys the escrow by: keccak256("custody/escrow/v1:" ‖ id)' }),
  asset: Type.String(), token: Type.String(), payer_account_holder_id: Type.String(), payer_wallet_id: Type.String(), payer_address: Type.String(),
  payee_account_holder_id: Type.String(), payee_wallet_id: Type.String(), payee_address: Type.String(), amount: Type.String(), refundable_after: Type.String(),
  funding_deadline: Type.String(), status: literals(ESCROW_STATUSES), deposit_tx_hash: Nullable(Type.String()), deposit_block: Nullable(Type.Integer()),
  settlement_tx_hash: Nullable(Type.String()), settlement_block: Nullable(Type.Integer()), refunded_by: Nullable(literals(['payee', 'payer'] as const)),
  description: Nullable(Type.String()), created_at: Type.String(), updated_at: Type.String(), funded_at: Nullable(Type.String()), completed_at: Nullable(Type.String()),
  calls: Type.Object({ funding: Type.Array(Call), release: Call }, { description: 'the exact calls the payer\'s wallet makes: each an EVM intent of the native asset, amount 0, to `to` with `data` as calldata' }),
});
const EscrowEvent = Type.Object({
  id: Type.String(), escrow_id: Type.String(), type: Type.String(), status: literals(ESCROW_STATUSES), actor: Type.Object({ type: Type.String(), id: Type.String() }),
  tx_hash: Nullable(Type.String()), block_number: Nullable(Type.Integer()), member_action_id: Nullable(Type.String()), at: Type.String(),
});
const CreateEscrow = Type.Object({
  payer_account_holder_id: HolderRef, payer_wallet_id: WalletRef, payee_account_holder_id: HolderRef, payee_wallet_id: Type.Optional(WalletRef),
  amount: Units, refundable_after: Instant, description: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
}, { additionalProperties: false });
const ListQuery = Type.Object({
  ...PageQuery, status: Type.Optional(literals(ESCROW_STATUSES)),
  payer_account_holder_id: Type.Optional(Type.String({ pattern: '^ah_[0-9a-f]{26}$' })), payee_account_holder_id: Type.Optional(Type.String({ pattern: '^ah_[0-9a-f]{26}$' })),
}, { additionalProperties: false });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const escrowRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; escrows: EscrowService }> = async (app, { platform, escrows }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);

  app.get('/escrows', {
    config: { permission: 'escrow.read' },
    schema: { summary: 'List escrows, oldest first, by status, payer or payee', tags: TAGS, security: read, querystring: ListQuery, response: { 200: Page(Escrow), ...errors } },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return escrows.list(scopeOf(req), filters as EscrowFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.post('/escrows', {
    config: { permission: 'escrow.manage' },
    schema: {
      summary: 'Open an escrow between two account holders: the payer\'s wallet deposits the amount into the escrow contract',
      description: '`amount` in base units of the chain\'s stablecoin. Answers `awaiting_funding` with the exact calls (approve, deposit) the payer\'s wallet makes; the chain drives the rest. Idempotency-Key required. docs/platform/escrows.md.',
      tags: TAGS, security: change, body: CreateEscrow, response: { 201: Escrow, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'escrow');
    const made = await idempotent.run(scope.workspace, 'create_escrow', key, req.body, async () => ({ id: (await escrows.create(scope, actorOf(req), req.body, key)).id }));
    return reply.code(201).send(escrowView(await escrows.get(scope, made.id)));
  });

  app.get('/escrows/:id', {
    config: { permission: 'escrow.read' },
    schema: { summary: 'Read an escrow', tags: TAGS, security: read, params: IdParam, response: { 200: Escrow, ...errors } },
  }, async (req) => escrowView(await escrows.get(scopeOf(req), req.params.id)));

  app.post('/escrows/:id/cancel', {
    config: { permission: 'escrow.manage' },
    schema: {
      summary: 'Cancel an escrow that is still awaiting its deposit',
      description: 'Readiness: only `awaiting_funding`, with no deposit on chain and none submitted; a funded escrow is 409 (it is refunded on chain instead). Unused member approvals of its funding are revoked. Idempotency-Key required. docs/platform/escrows.md.',
      tags: TAGS, security: change, params: IdParam, response: { 200: Escrow, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'escrow');
    const done = await idempotent.run(scope.workspace, `cancel_escrow:${req.params.id}`, key, {}, async () => ({ id: (await escrows.cancel(scope, actorOf(req), req.params.id)).id }));
    return escrowView(await escrows.get(scope, done.id));
  });

  app.get('/escrows/:id/events', {
    config: { permission: 'escrow.read' },
    schema: { summary: 'An escrow\'s history, oldest first', tags: TAGS, security: read, params: IdParam, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(EscrowEvent), ...errors } },
  }, async (req) => escrows.events(scopeOf(req), req.params.id, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));
};
