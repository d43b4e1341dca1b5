// The platform API's wallet operations under the vault API's wallet ids (docs/platform/wallets.md):
// GET /v1/wallets/{walletId}/balance, /history and /ledger, POST /v1/wallets/{walletId}/decommission and
// /qr. GET /v1/wallets/{walletId} itself is the vault API's route, which takes a bearer key too
// (vaults.ts). Authentication and permissions are checked by the bearer-auth hook; a wallet of another
// customer is 404.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import { DEFAULT_LIMIT, indexPage, type CursorCodec } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import type { LedgerEntryRecord } from '../../wallets/wallet-ledger.ts';
import { walletView } from '../../wallets/wallet-view.ts';
import { Wallet } from '../../../core/api-schemas/vaults.ts';
import { TransactionPage } from '../../../core/api-schemas/transactions.ts';
import { LedgerPage, LedgerQuery, PaymentRequest, PaymentRequestBody, WalletBalance, WalletHistoryQuery } from '../../../core/api-schemas/wallets.ts';
import { transactionView } from './transactions.ts';

const WalletId = Type.Object({ walletId: Type.String({ minLength: 1, maxLength: 64 }) });
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];

const ledgerView = ({ v: _v, org: _org, ...e }: LedgerEntryRecord) => e;

export interface WalletRoutesOptions {
  wallets: WalletService;
  store: RecordRepository;
  /** The platform API's cursor codec (docs/platform/pagination.md). */
  cursors: CursorCodec;
  clock: () => number;
  /** How long an Idempotency-Key's record answers (api/idempotency.ts). */
  idempotencyWindowMs?: number;
}

export const walletRoutes: FastifyPluginAsyncTypebox<WalletRoutesOptions> = async (app, { wallets, store, cursors, clock, idempotencyWindowMs }) => {
  const idempotent = new IdempotentRequests(store, clock, idempotencyWindowMs);

  app.get('/wallets/:walletId/balance', {
    config: { permission: 'wallet.read' },
    schema: {
      summary: 'A wallet\'s on-chain balance: the native asset and, on EVM chains, the tokens it has sent or its policy names',
      description: 'Read from the chain backend now, in base units; `block_height` and `as_of` say how fresh it is. 502 chain_unavailable when the backend does not answer.',
      tags: ['wallets'], security: read, params: WalletId,
      response: { 200: WalletBalance, ...errors, 409: ErrorBody, 502: ErrorBody },
    },
  }, async (req) => wallets.balance(scopeOf(req), req.params.walletId));

  app.get('/wallets/:walletId/history', {
    config: { permission: 'wallet.read' },
    schema: {
      summary: 'A wallet\'s transactions, newest first, optionally of one state',
      tags: ['wallets'], security: read, params: WalletId, querystring: WalletHistoryQuery,
      response: { 200: TransactionPage, ...errors },
    },
  }, async (req) => {
    const list = await wallets.history(scopeOf(req), req.params.walletId, req.query.state);
    const page = await indexPage(store, cursors, list, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(transactionView) };
  });

  app.get('/wallets/:walletId/ledger', {
    config: { permission: 'wallet.read' },
    schema: {
      summary: 'A wallet\'s ledger: the holds, transfers and fees its transactions moved, by sequence, oldest first',
      description: 'Append-only: entries are written when a transaction is broadcast, final, or fails after broadcast, and never change. Incoming payments are not observed (docs/platform/wallets.md).',
      tags: ['wallets'], security: read, params: WalletId, querystring: LedgerQuery,
      response: { 200: LedgerPage, ...errors },
    },
  }, async (req) => {
    const page = await indexPage(store, cursors, await wallets.ledger(scopeOf(req), req.params.walletId), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(ledgerView) };
  });

  app.post('/wallets/:walletId/decommission', {
    config: { permission: 'wallet.decommission' },
    schema: {
      summary: 'Decommission a wallet: it takes no transaction or payment request afterwards; irreversible',
      description: 'Idempotent: a decommissioned wallet is answered as it is. 409 transactions_in_flight while a transaction of the wallet is not final, failed or rejected. '
        + 'An `Idempotency-Key` names one wallet: the same key for another wallet is 409 idempotency_key_reused.',
      tags: ['wallets'], security: change, params: WalletId,
      body: Type.Optional(Type.Object({}, { additionalProperties: false })),
      response: { 200: Wallet, ...errors, 409: ErrorBody },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = idempotencyKeyOf(req);
    const done = await idempotent.run(scope.workspace, 'decommission_wallet', key, { wallet_id: req.params.walletId, body: req.body ?? {} }, async () => {
      const w = await wallets.decommission(scope, actorOf(req), req.params.walletId);
      return { id: w.id };
    });
    return walletView((await wallets.wallet(scope, done.id)).wallet);
  });

  app.post('/wallets/:walletId/qr', {
    config: { permission: 'wallet.read' },
    schema: {
      summary: 'A payment request to the wallet\'s address: an EIP-681 or BIP-21 URI and its QR code (PNG and SVG)',
      description: 'Changes nothing. EVM: `ethereum:<address>@<chain id>?value=<wei>`, or for a token `ethereum:<token>@<chain id>/transfer?address=<address>&uint256=<units>`; '
        + 'Bitcoin: `bitcoin:<address>?amount=<BTC>&label=..&message=..`, the amount written exactly from satoshis. 409 wallet_decommissioned for a decommissioned wallet.',
      tags: ['wallets'], security: change, params: WalletId,
      body: Type.Optional(PaymentRequestBody),
      response: { 200: PaymentRequest, ...errors, 409: ErrorBody },
    },
  }, async (req) => wallets.paymentRequest(scopeOf(req), req.params.walletId, req.body ?? {}));
};
