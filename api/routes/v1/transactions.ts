// POST /v1/transactions and GET /v1/transactions/{txId} (docs/transactions.md), the list GET /v1/transactions
// (docs/vault-api.md "Lists"), POST /v1/transactions/prepare, the nonce an EVM intent names, and GET
// /v1/wallets/{walletId}/utxos, what a Bitcoin intent names as its
// inputs (docs/vault-api.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import type { TransactionService } from '../../transactions/transaction-service.ts';
import type { TransactionRecord } from '../../transactions/records.ts';
import { ListTransactionsQuery, PrepareBody, Prepared, SubmitBody, Transaction, TransactionPage, Utxo } from '../../../core/api-schemas/transactions.ts';
import { DEFAULT_LIMIT, Page, indexPage, type CursorCodec } from '../../store/pagination.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { authenticateBearer, hasBearer, scopeOf } from '../../auth/bearer-auth.ts';
import type { TenancyService } from '../../tenancy/tenancy-service.ts';
import type { PaymentFlowKind, PaymentFlows } from '../../payments/payment-flows.ts';
import { Nullable } from './schema-helpers.ts';

export const transactionView = (t: TransactionRecord) => ({
  id: t.id, wallet_id: t.wallet_id, vault_id: t.vault_id, chain: t.chain, state: t.state, idempotency_key: t.idempotency_key, intent_sha256: t.intent_sha256,
  transfers: t.transfers, tx_hash: t.tx_hash, reason: t.reason, fee: t.fee,
  ...(t.nonce !== undefined ? { nonce: t.nonce } : {}), ...(t.waiting && (t.state === 'awaiting_approval' || t.state === 'created' || t.state === 'checks') ? { waiting: t.waiting } : {}), ...(t.block_number !== undefined ? { block_number: t.block_number } : {}),
  ...(t.confirmations !== undefined ? { confirmations: t.confirmations } : {}), ...(t.adopted ? { adopted: t.adopted } : {}),
  ...(t.kind ? { kind: t.kind } : {}), ...(t.safe_tx ? { safe_tx: t.safe_tx } : {}), ...(t.signature ? { signature: t.signature } : {}),
  ...(t.policy ? { policy: { ...t.policy, intent: t.intent } } : {}), created_at: t.created_at, updated_at: t.updated_at,
});

/** With the platform API: how GET /v1/transactions authenticates a bearer key and lists the workspace's payment flows. */
export interface PaymentFlowBearer {
  tenancy: TenancyService;
  flows: PaymentFlows;
}

const FlowKind = Type.Union([Type.Literal('funding'), Type.Literal('off_ramp'), Type.Literal('payment')]) satisfies { static: PaymentFlowKind };
const PaymentFlowItem = Type.Object({
  id: Type.String(), kind: FlowKind, status: Type.String(), account_holder_id: Type.String(),
  amount: Type.String({ description: 'token base units, a decimal integer string' }), asset: Nullable(Type.String()), currency: Nullable(Type.String()),
  fiat: Nullable(Type.Object({ amount: Type.String(), currency: Type.String() })),
  direction: Type.Union([Type.Literal('in'), Type.Literal('out'), Type.Literal('internal')]), wallet_id: Type.Optional(Type.String()),
  created_at: Type.String(), updated_at: Type.String(), reference: Type.Record(Type.String(), Type.String()),
}, { additionalProperties: false });
/** The query of both lists: the vault list's filters and the payment-flow list's; each credential takes its own. */
const TransactionsQuery = Type.Object({
  ...ListTransactionsQuery.properties,
  kind: Type.Optional(FlowKind), account_holder_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
}, { additionalProperties: false });

export const transactionRoutes: FastifyPluginAsyncTypebox<{ transactions: TransactionService; cursors: CursorCodec; bearer?: PaymentFlowBearer | undefined }> = async (app, { transactions, cursors, bearer }) => {
  // One path, two lists (docs/platform/payments.md "GET /v1/transactions"): a request signature lists the
  // organization's vault-API transactions; a workspace bearer key with payment.read lists the workspace's
  // payment flows. The bearer key is checked here, before the signature hook, which then leaves it alone.
  const listSecurity: Record<string, string[]>[] = bearer ? [{ httpSignature: [] }, { bearer: [] }] : [{ httpSignature: [] }];
  app.get('/transactions', {
    config: { bearer: bearer !== undefined, permission: 'payment.read' as const },
    onRequest: async (req) => {
      if (bearer && hasBearer(req)) await authenticateBearer(req, bearer.tenancy);
    },
    schema: {
      summary: bearer ? 'Request-signed: the organization\'s transactions; with a bearer key: the workspace\'s payment flows' : 'The organization\'s transactions, oldest first, filtered by vault, wallet and state',
      description: 'With an RFC 9421 request signature (the vault API): the organization\'s transactions, oldest first, filtered by `vault_id`, `wallet_id` and `state`. '
        + (bearer ? 'With a workspace bearer key and `payment.read` (the platform API): the workspace\'s payment flows of every kind built (funding and off-ramp requests, payments), oldest first, filtered by `kind` and `account_holder_id`. A filter of the other list is 400 invalid_request. ' : '')
        + 'Paginated (cursor, limit).',
      tags: ['transactions'], security: listSecurity, querystring: TransactionsQuery,
      response: { 200: Type.Union([TransactionPage, Page(PaymentFlowItem)]), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
    },
  }, async (req) => {
    const { cursor, limit, kind, account_holder_id, ...filters } = req.query;
    if (req.principal && bearer) {
      const other = Object.keys(filters);
      if (other.length) throw new CustodyError('invalid_request', `${other.join(', ')} filters the request-signed transaction list; the payment-flow list takes kind and account_holder_id`);
      return bearer.flows.page(scopeOf(req), { kind, account_holder_id }, cursor, limit ?? DEFAULT_LIMIT);
    }
    if (kind !== undefined || account_holder_id !== undefined) throw new CustodyError('invalid_request', 'kind and account_holder_id filter the payment-flow list (a workspace bearer key); the request-signed list takes vault_id, wallet_id and state');
    const list = await transactions.transactionList(req.caller!.org, filters);
    const page = await indexPage(transactions.store, cursors, list, cursor, limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(transactionView) };
  });

  app.post('/transactions', {
    schema: {
      summary: 'Submit a transaction whose intent the API key signed; answers 202 in an early state',
      description: 'The same idempotency key with the same body returns the same transaction (header `idempotent-replayed: true`); with another body, 409. '
        + 'A hosted vault with end-user authentication also needs `end_user_token` in the body: a JWT from the organization\'s identity provider naming the SHA-256 of these intent bytes (docs/end-user-auth.md), or `member_signing_session`: the single-use signing session of a completed member action for this wallet and these exact bytes (docs/platform/member-actions.md). '
        + 'It is a body field, not a security scheme, so it appears in the body schema only.',
      tags: ['transactions'], security: [{ httpSignature: [] }],
      body: SubmitBody, response: { 202: Transaction, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody } },
  }, async (req, reply) => {
    const { tx, created } = await transactions.submit(req.caller!.org, req.caller!.keyId, req.body);
    if (!created) reply.header('idempotent-replayed', 'true');
    return reply.code(202).send(transactionView(tx));
  });

  app.post('/transactions/prepare', {
    schema: {
      summary: 'Reserve the nonce an EVM intent names, for its idempotency key',
      description: 'Nodes sign an EVM intent only at the nonce it names (intent version 3, docs/intents.md). This answers the chain id, the address and the lowest nonce of the wallet '
        + 'that is at or above the chain\'s next one and that no reservation or transaction of the wallet holds, reserved for `idempotency_key` until `not_after`. '
        + 'The same key again answers the same nonce and not_after (also once a transaction names it), so a retry signs the same bytes. A Bitcoin wallet is 400: its intents name the outputs they spend (GET /v1/wallets/{walletId}/utxos).',
      tags: ['transactions'], security: [{ httpSignature: [] }],
      body: PrepareBody, response: { 200: Prepared, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (req) => transactions.prepare(req.caller!.org, req.body));

  app.get('/wallets/:walletId/utxos', {
    schema: {
      summary: 'Unspent outputs of a Bitcoin wallet, with amounts, for the inputs a version-2 intent names',
      tags: ['wallets'], security: [{ httpSignature: [] }],
      params: Type.Object({ walletId: Type.String({ minLength: 1, maxLength: 64 }) }),
      response: { 200: Type.Object({ utxos: Type.Array(Utxo) }), 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req) => ({ utxos: await transactions.walletUtxos(req.caller!.org, req.params.walletId) }));

  app.get('/transactions/:txId', {
    schema: { summary: 'Read a transaction: its state, hash and fee', tags: ['transactions'], security: [{ httpSignature: [] }], params: Type.Object({ txId: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: Transaction, 401: ErrorBody, 404: ErrorBody } },
  }, async (req) => transactionView(await transactions.get(req.caller!.org, req.params.txId)));
};
