// Payments (docs/platform/fees.md "Quote"): of the `payment` area, POST /payments/quote: the fees and
// compliance checks of a payment, stored for 60 s so the payment can name it. It moves nothing.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { CustomerLinks } from '../../customers/customer-links.ts';
import { FeeSchedules } from '../../fees/fee-schedules.ts';
import type { PlatformFee } from '../../fees/platform-fee.ts';
import { PaymentQuotes, quoteView } from '../../payments/payment-quotes.ts';
import { CHECK_CODES, CHECKS } from '../../payments/compliance.ts';

const TAGS = ['payments'];
// A POST: with a production key it is signed like every production POST, though it changes nothing.
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
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
  id: Type.String(), kind: Type.Literal('transfer'), source_wallet_id: Type.String(),
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

export interface PaymentRoutesOptions {
  platform: Platform;
  /** The store the vault API's wallets are in (the one store of server.ts); the platform's when absent. */
  walletStore?: RecordRepository | undefined;
  platformFee: PlatformFee;
}

export const paymentRoutes: FastifyPluginAsyncTypebox<PaymentRoutesOptions> = async (app, { platform, walletStore, platformFee }) => {
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
};
