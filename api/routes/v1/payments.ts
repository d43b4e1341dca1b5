// Payments (docs/platform/payments.md; docs/platform/fees.md "Quote"): of the `payment` area, POST
// /payments/quote (the fees and compliance checks of a payment, stored for 60 s so the payment can name
// it), and the payments themselves: GET, POST /payments, GET /payments/{id}, POST /payments/{id}/cancel,
// GET /payments/{id}/events and POST /payments/simulate (the dry run of POST /payments).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, requiredIdempotencyKey } from '../../idempotency.ts';
import { paymentEventView, paymentView, type PaymentFilters, type PaymentService } from '../../payments/payments.ts';
import { PAYMENT_FAILURE_REASONS, PAYMENT_STATUSES } from '../../payments/payment-states.ts';
import { TRANSFER_ROLES } from '../../payments/payment-records.ts';
import type { Platform } from '../../platform.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { CustomerLinks } from '../../customers/customer-links.ts';
import { FeeSchedules } from '../../fees/fee-schedules.ts';
import type { PlatformFee } from '../../fees/platform-fee.ts';
import { PaymentQuotes, quoteView } from '../../payments/payment-quotes.ts';
import { CHECK_CODES, CHECKS } from '../../payments/compliance.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['payments'];
// A POST: with a production key it is signed like every production POST, though it changes nothing.
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };
// A union of literals, checked as one; typed as the union of its members.
const Ref = Type.String({ minLength: 1, maxLength: 64 });

const QuoteBody = Type.Object({
  kind: Type.Union([Type.Literal('transfer'), Type.Literal('payment_request'), Type.Literal('escrow')], { description: 'only transfer is quoted for now (others: 422)' }),
  source_wallet_id: Ref,
  destination: Type.Union([
    Type.Object({ account_holder_id: Ref }, { additionalProperties: false }),
    Type.Object({ address: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
  ]),
  amount: Type.String({ minLength: 1, maxLength: 100, description: 'base units of the asset: decimal digits, no leading zeros' }),
  asset: Type.String({ minLength: 1, maxLength: 100, description: '<chain>:native or <chain>:0x<token contract>, of the source wallet\'s chain' }),
}, { additionalProperties: false });

const Quote = Type.Object({
  id: Type.String(), kind: Type.Union([Type.Literal('transfer'), Type.Literal('payment_request'), Type.Literal('escrow')]), source_wallet_id: Type.String(),
  destination: Type.Union([
    Type.Object({ account_holder_id: Type.String(), wallet_id: Nullable(Type.String()), address: Nullable(Type.String()) }),
    Type.Object({ address: Type.String() }),
  ]),
  amount: Type.String(), asset: Type.String(),
  fees: Type.Object({ tenant: Type.String(), platform: Type.String(), total: Type.String() }),
  total_debit: Type.String(), fee_schedule_id: Nullable(Type.String()),
  compliance: Type.Object({
    status: Type.Union([Type.Literal('pass'), Type.Literal('review'), Type.Literal('block')]),
    checks: Type.Array(Type.Object({
      name: Type.String({ description: Object.keys(CHECKS).join(', ') }), result: Type.Union([Type.Literal('pass'), Type.Literal('fail')]),
      code: Nullable(Type.String({ description: `null when the check passed, else one of ${CHECK_CODES.join(', ')}` })),
    })),
  }),
  expires_at: Type.String(), created_at: Type.String(),
});

const Destination = Type.Union([
  Type.Object({ account_holder_id: Ref }, { additionalProperties: false }),
  Type.Object({ address: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
]);
const Units = Type.String({ minLength: 1, maxLength: 100, description: 'base units of the asset: decimal digits, no leading zeros' });
const CreatePayment = Type.Object({
  source_wallet_id: Ref, destination: Destination, amount: Units,
  asset: Type.String({ minLength: 1, maxLength: 100, description: '<chain>:0x<token contract> (an ERC-20 token) of the source wallet\'s chain' }),
  quote_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'a quote of this workspace for exactly this payment, not expired: its fees are the payment\'s' })),
  accept_review: Type.Optional(Type.Boolean({ description: 'go ahead although a compliance check asks for review' })),
}, { additionalProperties: false });
const Transfer = Type.Object({ role: literals(TRANSFER_ROLES), to: Type.String(), amount: Type.String(), asset: Type.String() });
const Compliance = Quote.properties.compliance;
const paymentFields = {
  kind: Type.String(),
  payer: Type.Object({ account_holder_id: Type.String(), wallet_id: Type.String(), address: Type.String() }),
  payee: Type.Object({ account_holder_id: Nullable(Type.String()), wallet_id: Nullable(Type.String()), address: Type.String() }),
  chain: Type.String(), asset: Type.String(), amount: Type.String(),
  fees: Type.Object({ tenant: Type.String(), platform: Type.String(), total: Type.String() }),
  total_debit: Type.String(), fee_schedule_id: Nullable(Type.String()), quote_id: Nullable(Type.String()), compliance: Compliance, review_accepted: Type.Boolean(),
  member_action_id: Nullable(Type.String()),
  transactions: Type.Array(Type.Object({ role: literals(TRANSFER_ROLES), transaction_id: Type.String(), intent_sha256: Type.String(), state: Type.String(), tx_hash: Nullable(Type.String()) })),
  failure_reason: Nullable(literals(PAYMENT_FAILURE_REASONS)),
  reference: Nullable(Type.Object({ type: Type.Literal('payment_request'), id: Type.String() })),
  created_at: Type.String(), updated_at: Type.String(), completed_at: Nullable(Type.String()),
};
const Payment = Type.Object({
  id: Type.String(), status: literals(PAYMENT_STATUSES), ...paymentFields,
  transfers: Type.Array(Type.Object({ ...Transfer.properties, idempotency_key: Type.String() })),
  next_action: Nullable(Type.Object({
    type: Type.Literal('member_action'),
    member_action: Type.Object({ kind: Type.Literal('transaction.sign_batch'), wallet_id: Type.String(), purpose: Type.Object({ type: Type.Literal('payment'), id: Type.String() }) }),
    intents: Type.Array(Type.Object({ role: literals(TRANSFER_ROLES), from: Type.String(), to: Type.String(), asset: Type.String(), amount: Type.String(), idempotency_key: Type.String() })),
  }, { description: 'while requires_authorization: build one intent per entry, in order (an ERC-20 transfer from the payer\'s wallet, with that idempotency key), and have the member approve them as one batch member action with this purpose' })),
});
const Simulation = Type.Object({
  would_refuse: Type.Boolean(),
  refusal: Nullable(Type.Object({ status: Type.Integer(), code: Type.String(), error: Type.String() })),
  payment: Type.Object({ ...paymentFields, transfers: Type.Array(Transfer) }),
});
const PaymentEvent = Type.Object({
  id: Type.String(), payment_id: Type.String(), type: Type.String(), from_status: Nullable(literals(PAYMENT_STATUSES)), to_status: literals(PAYMENT_STATUSES),
  reason: Nullable(Type.String()), member_action_id: Nullable(Type.String()), transaction_ids: Type.Array(Type.String()),
  actor: Type.Object({ type: Type.String(), id: Type.String() }), created_at: Type.String(),
});
const IsoTime = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$', description: 'an ISO 8601 UTC time' });
const ListQuery = Type.Object({
  ...PageQuery, status: Type.Optional(literals(PAYMENT_STATUSES)), account_holder_id: Type.Optional(Type.String({ pattern: '^ah_[0-9a-f]{26}$', description: 'as payer or payee' })),
  created_after: Type.Optional(IsoTime), created_before: Type.Optional(IsoTime),
}, { additionalProperties: false });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

export interface PaymentRoutesOptions {
  platform: Platform;
  /** The store the vault API's wallets are in (the one store of server.ts); the platform's when absent. */
  walletStore?: RecordRepository | undefined;
  platformFee: PlatformFee;
  /** The payments (api/payments/payment-setup.ts); without them only the quote is served. */
  payments?: PaymentService | undefined;
}

export const paymentRoutes: FastifyPluginAsyncTypebox<PaymentRoutesOptions> = async (app, { platform, walletStore, platformFee, payments }) => {
  const store = walletStore ?? platform.store;
  const schedules = new FeeSchedules({ store: platform.store, audit: platform.audit, cursors: platform.cursors, clock: platform.clock });
  const quotes = new PaymentQuotes({ store, links: new CustomerLinks(store), schedules, platformFee, clock: platform.clock });

  app.post('/payments/quote', {
    config: { permission: 'payment.read' },
    schema: {
      summary: 'Quote a payment: its tenant and platform fees, the total debit, and its compliance checks; valid 60 s',
      description: 'Moves nothing and changes nothing else; the quote is kept so a payment can name it. A source wallet not of the workspace\'s organization is 404, a decommissioned one 409 wallet_decommissioned; '
        + 'an unknown destination holder 404; an address not of the wallet\'s chain 422. compliance.status is block when a check makes the payment impossible (docs/platform/fees.md).',
      tags: TAGS, security: change, body: QuoteBody, response: { 201: Quote, ...errors },
    },
  }, async (req, reply) => reply.code(201).send(quoteView(await quotes.quote(scopeOf(req), req.body))));

  if (!payments) return;
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const time = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

  app.get('/payments', {
    config: { permission: 'payment.read' },
    schema: { summary: 'List payments, oldest first, by status, account holder (payer or payee) and creation time', tags: TAGS, security: read, querystring: ListQuery, response: { 200: Page(Payment), ...errors } },
  }, async (req) => {
    const { cursor, limit, created_after, created_before, ...rest } = req.query;
    const filters = { ...rest, created_after: time(created_after), created_before: time(created_before) } as PaymentFilters;
    const page = await payments.list(scopeOf(req), filters, cursor, limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(paymentView) };
  });

  app.post('/payments', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Make a payment: an ERC-20 amount from an account holder\'s wallet to another holder or an address, with its fees as transfers of their own; answered requires_authorization',
      description: 'Idempotency-Key required. Priced and checked as a quote; a compliance block (or a review without accept_review) is 403 forbidden, a balance below the amount and fees 403 insufficient_funds. '
        + 'next_action says what the member approves: one intent per transfer, as one batch member action with purpose {type: "payment", id}. docs/platform/payments.md.',
      tags: TAGS, security: change, body: CreatePayment, response: { 201: Payment, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'payment');
    const made = await idempotent.run(scope.workspace, 'create_payment', key, req.body, async () => ({ id: (await payments.create(scope, actorOf(req), req.body, key)).id }));
    return reply.code(201).send(paymentView(await payments.get(scope, made.id)));
  });

  app.post('/payments/simulate', {
    config: { permission: 'payment.read' },
    schema: {
      summary: 'Dry-run a payment: what POST /payments would make of this body and whether it would refuse it; changes nothing',
      description: 'The same validation (errors as POST /payments), fees, compliance checks, fee collectors and balance check; a refusal is reported in `refusal` with the status and code POST /payments would answer. Nothing is stored.',
      tags: TAGS, security: change, body: CreatePayment, response: { 200: Simulation, ...errors },
    },
  }, async (req) => payments.simulate(scopeOf(req), req.body));

  app.get('/payments/:id', {
    config: { permission: 'payment.read' },
    schema: { summary: 'Read a payment', tags: TAGS, security: read, params: IdParam, response: { 200: Payment, ...errors } },
  }, async (req) => paymentView(await payments.get(scopeOf(req), req.params.id)));

  app.post('/payments/:id/cancel', {
    config: { permission: 'payment.manage' },
    schema: {
      summary: 'Cancel a payment before any of its transactions exists (requires_authorization or authorizing); revokes its member action',
      description: 'A payment with a transaction, or final, is 409 invalid_transition; so is a cancel that loses the race with the member\'s signing.',
      tags: TAGS, security: change, params: IdParam, response: { 200: Payment, ...errors },
    },
  }, async (req) => paymentView(await payments.cancel(scopeOf(req), actorOf(req), req.params.id)));

  app.get('/payments/:id/events', {
    config: { permission: 'payment.read' },
    schema: { summary: 'The payment\'s own history of state changes, oldest first', tags: TAGS, security: read, params: IdParam, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(PaymentEvent), ...errors } },
  }, async (req) => {
    const page = await payments.events(scopeOf(req), req.params.id, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(paymentEventView) };
  });
};
