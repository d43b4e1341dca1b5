// Distributions and corporate actions of a token (docs/platform/rwa.md "Distributions and corporate actions"):
// 6 operations under /v1/rwa/tokens/{id}, with a workspace bearer key (tokenization.read to read,
// tokenization.manage to change). Creating POSTs need an Idempotency-Key: the same key and body answer the same
// record, another body is 409 idempotency_key_reused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import { idempotencyKeyOf, requiredIdempotencyKey } from '../../idempotency.ts';
import { MAX_BATCH_SIZE, type ActionService } from '../../rwa/actions/action-service.ts';
import { ACTION_STATES, DISTRIBUTION_STATES, type ActionState } from '../../rwa/actions/action-states.ts';
import { ACTION_TYPES, type CorporateActionRecord, type DistributionRecord } from '../../rwa/actions/records.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 502: ErrorBody, 503: ErrorBody };
const DOCS = 'docs/platform/rwa.md#distributions-and-corporate-actions';

const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: 'an EVM address' });
const Uint = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: 'a non-negative integer as a decimal string' });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const DistParams = Type.Object({ id: Type.String({ maxLength: 64 }), distId: Type.String({ maxLength: 64 }) });
const ActionParams = Type.Object({ id: Type.String({ maxLength: 64 }), caId: Type.String({ maxLength: 64 }) });
const BatchSize = Type.Integer({ minimum: 1, maximum: MAX_BATCH_SIZE, description: `holders per Safe transaction (default 50, at most ${MAX_BATCH_SIZE})` });
const RecordBlock = Type.String({ ...Uint, description: 'the block whose closing balances count (inclusive)' });

const Batch = Type.Object({
  index: Type.Integer(),
  entries: Type.Array(Type.Object({ holder: Type.String(), units: Type.String({ description: 'the holder\'s units at the record block' }), amount: Type.String({ description: 'what it gets: payout base units, or units minted by a split' }) })),
  calls: Type.Array(Type.Object({ to: Type.String(), data: Type.String() }), { description: 'the calls the MultiSendCallOnly batch makes from the admin Safe' }),
  state: literals(['planned', 'proposed', 'confirmed'] as const),
  attempt: Type.Integer({ description: 'how many earlier operations of this batch failed (never executed)' }),
  operation_id: Nullable(Type.String({ description: 'the admin Safe operation (GET /v1/tokenization/tokens/{id}/operations/{opId}) owners sign' })),
  tx_hash: Nullable(Type.String()),
  failures: Type.Array(Type.Object({ operation_id: Type.String(), message: Type.String(), at: Type.String() })),
  waiting: Nullable(Type.String({ description: 'why the batch cannot go on yet: its failed operation could still execute at its Safe nonce' })),
  logged: Type.Integer({ description: 'how many entries are appended to the token\'s log as payouts' }),
});
const Plan = Type.Object({
  record_block: Type.String(), supply: Type.String({ description: 'the units counted at the record block, the admin Safe\'s own left out' }), holders: Type.Integer(),
  total: Type.String({ description: 'paid (or minted) in all: the sum of the floors' }), remainder: Type.String({ description: 'what the floors leave: never sent, it stays in the admin Safe' }),
  batches: Type.Array(Batch),
});
const Distribution = Type.Object({
  id: Type.String(), token_id: Type.String(), asset: Type.String(), amount: Type.String(), record_block: Type.String(), batch_size: Type.Integer(), state: literals(DISTRIBUTION_STATES), plan: Plan,
  created_at: Type.String(), updated_at: Type.String(), completed_at: Nullable(Type.String()),
});
const CorporateAction = Type.Object({
  id: Type.String(), token_id: Type.String(), type: literals(ACTION_TYPES),
  params: Type.Object({ numerator: Nullable(Type.String()), denominator: Nullable(Type.String()), asset: Nullable(Type.String()), amount: Nullable(Type.String()), price_per_unit: Nullable(Type.String()) }),
  record_block: Type.String(), batch_size: Type.Integer(), state: literals(ACTION_STATES), plan: Nullable(Plan),
  transitions: Type.Array(Type.Object({ from: Nullable(literals(ACTION_STATES)), to: literals(ACTION_STATES), at: Type.String(), by: Type.String() })),
  created_at: Type.String(), updated_at: Type.String(),
});
const DistributionBody = Type.Object({
  asset: Type.String({ ...Address, description: 'the ERC-20 paid, held by the token\'s admin Safe' }), amount: Type.String({ ...Uint, description: 'the total paid, in the asset\'s base units' }),
  record_block: RecordBlock, batch_size: Type.Optional(BatchSize),
}, { additionalProperties: false });
const ActionBody = Type.Object({
  type: literals(ACTION_TYPES), record_block: RecordBlock,
  ratio: Type.Optional(Type.String({ maxLength: 40, description: 'split: "n:d" new units per old, n above d (e.g. "2:1")' })),
  asset: Type.Optional(Type.String({ ...Address, description: 'dividend, redemption: the ERC-20 paid from the admin Safe' })),
  amount: Type.Optional(Type.String({ ...Uint, description: 'dividend: the total paid pro rata' })),
  price_per_unit: Type.Optional(Type.String({ ...Uint, description: 'redemption: asset base units paid per unit redeemed' })),
  batch_size: Type.Optional(BatchSize),
}, { additionalProperties: false });
const AdvanceBody = Type.Object({ to: literals(ACTION_STATES.filter((s) => s !== 'draft')) }, { additionalProperties: false });

const distributionView = (r: DistributionRecord) => r;
const actionView = (r: CorporateActionRecord) => r;

export const rwaActionRoutes: FastifyPluginAsyncTypebox<{ actions: ActionService }> = async (app, { actions }) => {
  app.post('/rwa/tokens/:id/distributions', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Create a distribution: an ERC-20 of the admin Safe paid pro rata to the holders at a record block',
      description: `The cap table at record_block is read and the plan recorded: each holder gets floor(amount × units / supply), the remainder stays in the admin Safe. A record block the chain has not reached, a zero amount or an asset that is no ERC-20 is 422 validation_failed, nothing stored. Idempotency-Key required. ${DOCS}.`,
      tags: TAGS, security: change, params: IdParam, body: DistributionBody, response: { 201: Distribution, ...errors },
    },
  }, async (req, reply) => {
    const rec = await actions.createDistribution(scopeOf(req), actorOf(req), req.params.id, req.body, requiredIdempotencyKey(req, 'distribution'));
    return reply.code(201).send(distributionView(rec));
  });

  app.get('/rwa/tokens/:id/distributions/:distId', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a distribution: its plan, batches, their operations and what is paid', tags: TAGS, security: read, params: DistParams, response: { 200: Distribution, ...errors } },
  }, async (req) => distributionView(await actions.getDistribution(scopeOf(req), req.params.id, req.params.distId)));

  app.post('/rwa/tokens/:id/distributions/:distId/execute', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Execute a distribution: propose its batches as admin Safe operations, record the confirmed ones',
      description: `Each batch is one MultiSendCallOnly operation of the admin Safe (owners sign it at /v1/tokenization/tokens/{id}/operations/{opId}/signatures). Call again to record confirmed batches (each payout appended to the token's log once) and to propose again a batch whose operation failed; completed when every batch is confirmed. Never pays a batch twice. ${DOCS}.`,
      tags: TAGS, security: change, params: DistParams, response: { 200: Distribution, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return distributionView(await actions.executeDistribution(scopeOf(req), actorOf(req), req.params.id, req.params.distId));
  });

  app.post('/rwa/tokens/:id/corporate-actions', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Create a corporate action in draft: a split {ratio}, a dividend {asset, amount} or a redemption {asset, price_per_unit}',
      description: `Moved on by advance: draft → approved → record_taken → executing → completed, or cancelled before executing. Idempotency-Key required. ${DOCS}.`,
      tags: TAGS, security: change, params: IdParam, body: ActionBody, response: { 201: CorporateAction, ...errors },
    },
  }, async (req, reply) => {
    const rec = await actions.createAction(scopeOf(req), actorOf(req), req.params.id, req.body, requiredIdempotencyKey(req, 'corporate action'));
    return reply.code(201).send(actionView(rec));
  });

  app.get('/rwa/tokens/:id/corporate-actions/:caId', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a corporate action: its state, transitions, plan and batches', tags: TAGS, security: read, params: ActionParams, response: { 200: CorporateAction, ...errors } },
  }, async (req) => actionView(await actions.getAction(scopeOf(req), req.params.id, req.params.caId)));

  app.post('/rwa/tokens/:id/corporate-actions/:caId/advance', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Advance a corporate action to its next state (or cancel it)',
      description: `record_taken reads the cap table at the record block (409 before the chain reaches it); executing proposes the batches as admin Safe operations; completed records the confirmed batches and is 409 while one is not. A move the state machine does not allow is 409 conflict, nothing changed. ${DOCS}.`,
      tags: TAGS, security: change, params: ActionParams, body: AdvanceBody, response: { 200: CorporateAction, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return actionView(await actions.advance(scopeOf(req), actorOf(req), req.params.id, req.params.caId, req.body.to as ActionState));
  });
};
