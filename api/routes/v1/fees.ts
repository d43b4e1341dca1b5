// Fee schedules and the platform fee (docs/platform/fees.md): the `tenant` area's GET, POST /fee-schedules,
// GET /fee-schedules/{id} and GET /fee-schedules/platform-fee. A schedule is immutable; the one created
// last is in force.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, requiredIdempotencyKey } from '../../idempotency.ts';
import { FeeSchedules, feeScheduleView } from '../../fees/fee-schedules.ts';
import { MAX_RULES } from '../../fees/fee-rule.ts';
import { platformFeeView, type PlatformFee } from '../../fees/platform-fee.ts';
import { Nullable } from './schema-helpers.ts';

const TAGS = ['fees'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };
// Amounts are checked by the service (422 naming the field); the schema bounds their size only.
const Units = Type.String({ maxLength: 100, description: 'base units of the asset: decimal digits, no leading zeros' });
const Rule = Type.Object({
  payment_kind: Type.String({ maxLength: 32, description: 'transfer, payment_request, escrow or *' }),
  asset: Type.String({ maxLength: 100, description: '<chain>:native, <chain>:0x<token contract> or *' }),
  basis_points: Type.Integer({ description: '0 to 10000' }),
  fixed: Units, min: Units, max: Nullable(Units),
}, { additionalProperties: false });
// Checked by the service (a known EVM chain, a non-zero address; 422 naming `collectors.<chain>`).
const Collectors = Type.Record(Type.String({ maxLength: 40 }), Type.String({ maxLength: 64 }), { description: '<chain> → 0x address: where the tenant fee of a payment on that chain is transferred' });
const Schedule = Type.Object({
  id: Type.String(), name: Type.String(), status: Type.Literal('active'), in_force: Type.Boolean(),
  rules: Type.Array(Rule), collectors: Collectors, created_at: Type.String(),
});
const PlatformFeeBody = Type.Object({ basis_points: Type.Integer(), fixed: Type.String(), min: Type.String(), max: Nullable(Type.String()), asset: Type.Literal('*') });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const feeRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; platformFee: PlatformFee }> = async (app, { platform, platformFee }) => {
  const schedules = new FeeSchedules({ store: platform.store, audit: platform.audit, cursors: platform.cursors, clock: platform.clock });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);

  app.get('/fee-schedules', {
    config: { permission: 'fee_schedule.read' },
    schema: {
      summary: 'The workspace\'s fee schedules, oldest first; the one in force says so',
      tags: TAGS, security: read, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(Schedule), ...errors },
    },
  }, async (req) => schedules.list(scopeOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/fee-schedules', {
    config: { permission: 'fee_schedule.manage' },
    schema: {
      summary: 'Create a fee schedule; it is in force from now until a newer one is created, and never changes',
      description: 'Idempotency-Key required: the same body returns the same schedule; another body, 409 idempotency_key_reused. '
        + 'A rule\'s fee is clamp(fixed + floor(amount × basis_points / 10000), min, max); the most specific rule matching a payment\'s kind and asset applies; two rules equally specific for one payment are refused (docs/platform/fees.md). '
        + '`collectors` maps an EVM chain to the address the tenant fee of a payment on that chain is transferred to; a payment with a tenant fee on a chain the schedule names no collector for is refused (409).',
      tags: TAGS, security: change,
      body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 120 }), rules: Type.Array(Rule, { minItems: 1, maxItems: MAX_RULES }), collectors: Type.Optional(Collectors) }, { additionalProperties: false }),
      response: { 201: Schedule, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req);
    const made = await idempotent.run(scope.workspace, 'create_fee_schedule', key, req.body, async () => ({ id: (await schedules.create(scope, actorOf(req), req.body)).id }));
    const s = await schedules.get(scope, made.id);
    return reply.code(201).send(feeScheduleView(s, (await schedules.inForce(scope))?.id === s.id));
  });

  // Registered before /fee-schedules/:id; a static path wins over a parameter in any case.
  app.get('/fee-schedules/platform-fee', {
    config: { permission: 'fee_schedule.read' },
    schema: {
      summary: 'The platform\'s fee on every payment, added to the tenant\'s: set by the operator, read-only here',
      description: 'fee = clamp(fixed + floor(amount × basis_points / 10000), min, max) in the payment\'s asset; max null is no maximum.',
      tags: TAGS, security: read, response: { 200: PlatformFeeBody, ...errors },
    },
  }, async () => platformFeeView(platformFee));

  app.get('/fee-schedules/:id', {
    config: { permission: 'fee_schedule.read' },
    schema: { summary: 'Read a fee schedule, in force or not: schedules stay readable forever', tags: TAGS, security: read, params: IdParam, response: { 200: Schedule, ...errors } },
  }, async (req) => {
    const scope = scopeOf(req);
    const s = await schedules.get(scope, req.params.id);
    return feeScheduleView(s, (await schedules.inForce(scope))?.id === s.id);
  });
};
