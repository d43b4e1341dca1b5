// POST /v1/transactions and GET /v1/transactions/{txId} (docs/transactions.md), the list GET /v1/transactions
// (docs/vault-api.md "Lists"), and GET /v1/wallets/{walletId}/utxos, what a Bitcoin intent names as its
// inputs (docs/vault-api.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import type { TransactionService } from '../../transactions/transaction-service.ts';
import type { TransactionRecord } from '../../transactions/records.ts';
import { ListTransactionsQuery, SubmitBody, Transaction, TransactionPage, Utxo } from '../../../core/api-schemas/transactions.ts';
import { DEFAULT_LIMIT, indexPage, type CursorCodec } from '../../store/pagination.ts';

export const transactionView = (t: TransactionRecord) => ({
  id: t.id, wallet_id: t.wallet_id, vault_id: t.vault_id, chain: t.chain, state: t.state, idempotency_key: t.idempotency_key, intent_sha256: t.intent_sha256,
  transfers: t.transfers, tx_hash: t.tx_hash, reason: t.reason, fee: t.fee,
  ...(t.nonce !== undefined ? { nonce: t.nonce } : {}), ...(t.block_number !== undefined ? { block_number: t.block_number } : {}),
  ...(t.confirmations !== undefined ? { confirmations: t.confirmations } : {}), created_at: t.created_at, updated_at: t.updated_at,
});

export const transactionRoutes: FastifyPluginAsyncTypebox<{ transactions: TransactionService; cursors: CursorCodec }> = async (app, { transactions, cursors }) => {
  app.get('/transactions', {
    schema: {
      summary: 'The organization\'s transactions, oldest first, filtered by vault, wallet and state', tags: ['transactions'], security: [{ httpSignature: [] }], querystring: ListTransactionsQuery,
      response: { 200: TransactionPage, 400: ErrorBody, 401: ErrorBody },
    },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
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
