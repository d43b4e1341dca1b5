// Payment requests (docs/platform/payment-requests.md): of the `payment` area, GET and POST
// /payment-requests, GET /payment-requests/{id}, and POST /payment-requests/{id}/approve, /cancel,
// /decline, /remind, with a workspace bearer key (payment.read, payment.manage). POST /payment-requests
// and approve need an Idempotency-Key: the same key and body answer the same request (the same payment),
// another body is 409 idempotency_key_reused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, requiredIdempotencyKey } from '../../idempotency.ts';
import { CustomerLinks } from '../../customers/customer-links.ts';
import { paymentView, type PaymentService } from '../../payments/payments.ts';
import { PAYMENT_STATUSES } from '../../payments/payment-states.ts';
import { DECLINE_REASONS, PAYMENT_REQUEST_STATUSES, type DeclineReason } from '../../payments/payment-request-records.ts';
import { MEMO_MAX, PaymentRequestService, ReminderLimitError, type PaymentRequestFilters } from '../../payments/payment-requests.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['payments'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };
// A union of literals, checked as one; typed as the union of its members.
const Ref = Type.String({ minLength: 1, maxLength: 64 });
const IsoTime = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$', description: 'an ISO 8601 UTC time' });

const CreateBody = Type.Object({
  requester_account_holder_id: Ref,
  payer_account_holder_id: Ref,
  amount: Type.String({ minLength: 1, maxLength: 100, description: 'base units of the asset: decimal digits, no leading zeros' }),
  asset: Type.String({ minLength: 1, maxLength: 100, description: '<chain>:0x<token contract>: an ERC-20 token of an EVM chain the requester has a wallet on' }),
  memo: Type.Optional(Type.String({ maxLength: 4 * MEMO_MAX, description: `plain text for the payer: 1 to ${MEMO_MAX} characters, one line, no control or format characters; never in a webhook event` })),
  expires_at: Type.Optional(Type.String({ maxLength: 40, description: 'an ISO 8601 UTC time 1 minute to 30 days ahead; default 7 days' })),
}, { additionalProperties: false });
const ApproveBody = Type.Object({
  source_wallet_id: Ref,
  quote_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'a quote of this workspace for exactly this payment (kind payment_request), not expired' })),
  accept_review: Type.Optional(Type.Boolean({ description: 'go ahead although a compliance check asks for review' })),
}, { additionalProperties: false });
const DeclineBody = Type.Object({ reason: Type.Optional(literals(DECLINE_REASONS)) }, { additionalProperties: false });

const PaymentRequest = Type.Object({
  id: Type.String(), status: literals(PAYMENT_REQUEST_STATUSES),
  requester: Type.Object({ account_holder_id: Type.String(), wallet_id: Type.String(), address: Type.String() }),
  payer: Type.Object({ account_holder_id: Type.String() }),
  chain: Type.String(), asset: Type.String(), amount: Type.String(), memo: Nullable(Type.String()), expires_at: Type.String(),
  payment_id: Nullable(Type.String()), decline_reason: Nullable(literals(DECLINE_REASONS)),
  reminders: Type.Object({ count: Type.Integer(), last_at: Nullable(Type.String()) }),
  created_at: Type.String(), updated_at: Type.String(), completed_at: Nullable(Type.String()),
});
// The payment as GET /payments/{id} answers it (api/routes/v1/payments.ts); its main fields are named
// here and the rest passed through as they are.
const Payment = Type.Object({
  id: Type.String(), status: literals(PAYMENT_STATUSES), kind: Type.String(), amount: Type.String(), asset: Type.String(),
  reference: Nullable(Type.Object({ type: Type.Literal('payment_request'), id: Type.String() })),
}, { additionalProperties: true, description: 'the payment, as GET /payments/{id} answers it; next_action says what the payer\'s member approves' });
const Approval = Type.Object({ ...PaymentRequest.properties, payment: Payment });
const ListQuery = Type.Object({
  ...PageQuery, status: Type.Optional(literals(PAYMENT_REQUEST_STATUSES)),
  account_holder_id: Type.Optional(Type.String({ pattern: '^ah_[0-9a-f]{26}$', description: 'as requester or payer' })),
  created_after: Type.Optional(IsoTime), created_before: Type.Optional(IsoTime),
}, { additionalProperties: false });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

export interface PaymentRequestRoutesOptions {
  platform: Platform;
  /** The store the vault API's wallets are in (the one store of server.ts); the platform's when absent. */
  walletStore?: RecordRepository | undefined;
  payments: PaymentService;
}

export const paymentRequestRoutes: FastifyPluginAsyncTypebox<PaymentRequestRoutesOptions> = async (app, { platform, walletStore, payments }) => {
  const store = walletStore ?? platform.store;
  const requests = new PaymentRequestService({
    store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links: new CustomerLinks(store), payments, clock: platform.clock,
  });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const time = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

  app.get('/payment-requests', {
    config: { permission: 'payment.read' },
    schema: { summary: 'List payment requests, oldest first, by status, account holder (requester or payer) and creation time', tags: TAGS, security: read, querystring: ListQuery, response: { 200: Page(PaymentRequest), ...errors } },
  }, async (req) => {
    const { cursor, limit, created_after, created_before, ...rest } = req.query;
    const filters = { ...rest, created_after: time(created_after), created_before: time(created_before) } as PaymentRequestFilters;
    const page = await requests.list(scopeOf(req), filters, cursor, limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map((r) => requests.view(r)) };
  });

  app.post('/payment-requests', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Ask an account holder (the payer) to pay another (the requester) an amount of an ERC-20 asset; answered pending',
      description: 'Idempotency-Key required. Both holders of this workspace and different; the requester active, with an active wallet on the asset\'s chain; the payer not closed. '
        + 'Expires at expires_at (default 7 days, at most 30). docs/platform/payment-requests.md.',
      tags: TAGS, security: change, body: CreateBody, response: { 201: PaymentRequest, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'result');
    const made = await idempotent.run(scope.workspace, 'create_payment_request', key, req.body, async () => ({ id: (await requests.create(scope, actorOf(req), req.body, key)).id }));
    return reply.code(201).send(requests.view(await requests.get(scope, made.id)));
  });

  app.get('/payment-requests/:id', {
    config: { permission: 'payment.read' },
    schema: { summary: 'Read a payment request', tags: TAGS, security: read, params: IdParam, response: { 200: PaymentRequest, ...errors } },
  }, async (req) => requests.view(await requests.get(scopeOf(req), req.params.id)));

  app.post('/payment-requests/:id/approve', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Approve a pending payment request: makes its payment from the payer\'s wallet (kind payment_request), answered with the payment to authorize',
      description: 'Idempotency-Key required; a retry under the same key answers the same payment, and a request makes one payment at most. source_wallet_id must be one of the payer\'s wallets (422). '
        + 'A request not pending (approved, declined, canceled, expired) is 409 invalid_transition. A payment refused at creation (403 forbidden or insufficient_funds, 409, 422, 503) is answered as POST /payments answers it, and the request stays pending.',
      tags: TAGS, security: change, params: IdParam, body: ApproveBody, response: { 200: Approval, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'result');
    const done = await idempotent.run(scope.workspace, 'approve_payment_request', key, { id: req.params.id, ...req.body }, async () => ({ id: (await requests.approve(scope, actorOf(req), req.params.id, req.body, key)).request.id }));
    const r = await requests.get(scope, done.id);
    return { ...requests.view(r), payment: paymentView(await payments.get(scope, r.payment_id!)) };
  });

  app.post('/payment-requests/:id/cancel', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Cancel a pending payment request (the requester withdraws it)',
      description: 'A request not pending is 409 invalid_transition, naming its state.',
      tags: TAGS, security: change, params: IdParam, response: { 200: PaymentRequest, ...errors },
    },
  }, async (req) => requests.view(await requests.cancel(scopeOf(req), actorOf(req), req.params.id)));

  app.post('/payment-requests/:id/decline', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Decline a pending payment request (the payer refuses it), with an optional reason',
      description: `reason: one of ${DECLINE_REASONS.join(', ')}. A request not pending is 409 invalid_transition, naming its state.`,
      tags: TAGS, security: change, params: IdParam, body: Type.Optional(DeclineBody), response: { 200: PaymentRequest, ...errors },
    },
  }, async (req) => requests.view(await requests.decline(scopeOf(req), actorOf(req), req.params.id, (req.body as { reason?: DeclineReason } | undefined)?.reason ?? null)));

  app.post('/payment-requests/:id/remind', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Remind the payer of a pending payment request: emits payment_request.reminded',
      description: 'At most one reminder per 24 hours (429 rate_limited with Retry-After) and 3 in all (409 conflict); a request not pending is 409 invalid_transition.',
      tags: TAGS, security: change, params: IdParam, response: { 200: PaymentRequest, 429: ErrorBody, ...errors },
    },
  }, async (req, reply) => {
    try {
      return requests.view(await requests.remind(scopeOf(req), actorOf(req), req.params.id));
    } catch (err) {
      if (err instanceof ReminderLimitError) reply.header('retry-after', String(err.retryAfter));
      throw err;
    }
  });
};
