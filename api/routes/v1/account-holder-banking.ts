// The member's money (docs/platform/account-holders.md "Balance" and "Sandbox bank"): six member self
// calls of the account_holders area, with the credentials of every self call (api/routes/v1/member-self.ts:
// bearer key with member_auth.session, X-SVC-Publishable-Key, X-Member-Session-Id; the member is the
// session's, never the caller's choice). The holder must be active. The sandbox bank is a double: a
// production workspace is 403 sandbox_only on its five operations, checked before the session.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Hex } from 'viem';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { MemberSessions } from '../../member-auth/member-sessions.ts';
import { AccountHolderService } from '../../account-holders/account-holder-service.ts';
import type { AccountHolderRecord } from '../../account-holders/account-holder-records.ts';
import { CustomerLinks } from '../../customers/customer-links.ts';
import { PlatformLedger } from '../../ledger/platform-ledger.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import type { Chains } from '../../transactions/transaction-worker.ts';
import { BANK_CURRENCY, HolderBanking, SANDBOX_BANK, accountLast4, railMagicAmounts } from '../../account-holders/holder-banking.ts';
import { readHolderBalance } from '../../account-holders/holder-balance.ts';
import { HolderActivity } from '../../account-holders/holder-activity.ts';
import { memberSelfCalls } from './member-self.ts';
import { Nullable } from './schema-helpers.ts';

const TAGS = ['account holders'];
const selfSecurity: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };

const Account = Type.Union([Type.Literal('savings'), Type.Literal('checking')]);
const Money = Type.Object({ balance: Type.String({ description: 'cents, a decimal integer string' }), currency: Type.String() });
const BankBalances = Type.Object({ savings: Money, checking: Money });
const AssetAmount = Type.Object({ asset: Type.String(), amount: Nullable(Type.String()), unconfirmed_amount: Type.Optional(Type.String()) });
const Balance = Type.Object({
  account_holder_id: Type.String(),
  wallets: Type.Array(Type.Object({
    wallet_id: Type.String(), chain: Type.String(), address: Type.String(),
    status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
    reason: Nullable(Type.Union([Type.Literal('chain_unavailable'), Type.Literal('no_backend')])),
    block_height: Nullable(Type.Integer()), as_of: Nullable(Type.String()), balances: Type.Array(AssetAmount),
  })),
  fiat: Type.Array(Type.Object({ currency: Type.String(), amount: Type.String() })),
  bank: Nullable(BankBalances),
});
const Transaction = Type.Object({
  id: Type.String(), account: Account, direction: Type.Union([Type.Literal('credit'), Type.Literal('debit')]), amount: Type.String(), currency: Type.String(),
  kind: Type.Union([Type.Literal('opening_deposit'), Type.Literal('transfer')]),
  counterparty_account: Type.Union([Type.Literal('savings'), Type.Literal('checking'), Type.Literal('sandbox_bank')]), created_at: Type.String(),
});
const TransferBody = Type.Object({
  from: Account, to: Account,
  amount: Type.String({ maxLength: 32, description: 'cents: a positive integer string without leading zeros' }),
  currency: Type.String({ maxLength: 8 }),
}, { additionalProperties: false });
const Transfer = Type.Object({
  id: Type.String(), from: Account, to: Account, amount: Type.String(), currency: Type.String(), status: Type.Literal('completed'), created_at: Type.String(),
});
const Context = Type.Object({
  account_holder_id: Type.String(),
  bank: Type.Object({ name: Type.String(), routing_number: Type.String(), sandbox: Type.Literal(true) }),
  accounts: Type.Array(Type.Object({ account: Account, account_number_masked: Type.String(), currency: Type.String() })),
  opening_deposit: Type.Object({ savings: Type.String(), checking: Type.String(), currency: Type.String() }),
  funding_rail_magic_amounts: Type.Array(Type.Object({ amount: Type.String(), currency: Type.String(), outcome: Type.String(), reason: Type.String() })),
});

const Kind = Type.Union([Type.Literal('funding'), Type.Literal('off_ramp'), Type.Literal('wallet_transaction'), Type.Literal('bank_transfer')]);
const Activity = Type.Object({
  id: Type.String(), kind: Kind, status: Type.String(),
  amount: Type.String({ description: 'base units, a decimal integer string' }), asset: Nullable(Type.String()), currency: Nullable(Type.String()),
  fiat: Nullable(Type.Object({ amount: Type.String(), currency: Type.String() })),
  direction: Type.Union([Type.Literal('in'), Type.Literal('out'), Type.Literal('internal')]), wallet_id: Type.Optional(Type.String()),
  created_at: Type.String(), updated_at: Type.String(), reference: Type.Record(Type.String(), Type.String()),
});
const ActivityQuery = Type.Object({ ...PageQuery, kind: Type.Optional(Kind) }, { additionalProperties: false });

export interface AccountHolderBankingOptions {
  platform: Platform;
  vaults?: VaultService | undefined;
  /** The chain backends, as for GET /v1/wallets/{id}/balance. */
  chains?: Chains | undefined;
  /** The stablecoin contract configured on a chain (API_FUNDING_STABLECOINS, through the funding service). */
  stablecoin: (chain: string) => Hex | undefined;
}

export const accountHolderBankingRoutes: FastifyPluginAsyncTypebox<AccountHolderBankingOptions> = async (app, { platform, vaults, chains, stablecoin }) => {
  const holders = new AccountHolderService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, clock: platform.clock });
  const sessions = new MemberSessions(platform.store, platform.audit, platform.clock);
  const { refuseCallerIdentity, memberOfSession, authenticateMember } = memberSelfCalls(platform.store, holders, sessions);
  const ledger = new PlatformLedger(platform.store, platform.clock);
  const banking = new HolderBanking({ store: platform.store, ledger, audit: platform.audit, cursors: platform.cursors, clock: platform.clock });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const walletStore = vaults?.store ?? platform.store;
  const balanceOptions = { store: walletStore, ledger, links: new CustomerLinks(walletStore), chains, stablecoin, now: () => new Date(platform.clock()) };
  const activity = new HolderActivity({ store: walletStore, links: balanceOptions.links, cursors: platform.cursors });

  /** The session's holder, active; `bank`: the sandbox bank's calls, refused in production before the session is read. */
  async function activeHolder(req: FastifyRequest, bank: boolean): Promise<AccountHolderRecord> {
    if (bank) HolderBanking.refuseProduction(principalOf(req).environment);
    const { holder } = await memberOfSession(req);
    if (holder.status !== 'active') throw new CustodyError('account_holder_not_active', `the account holder is ${holder.status}; money is shown and moved for active (verified) holders only`);
    return holder;
  }
  // The member session is authentication, read before the body (api/routes/v1/member-self.ts). The sandbox
  // bank's calls with a production key never read it: they are 403 sandbox_only (after the production
  // signature), whatever the session.
  const BANK_ROUTES = new Set(['/account-holders/self/bank-balance', '/account-holders/self/checking-balance', '/account-holders/self/bank-transactions', '/account-holders/self/bank-transfers', '/account-holders/self/sandbox-banking-context']);
  const onRequest = async (req: FastifyRequest) => {
    if (BANK_ROUTES.has((req.routeOptions.url ?? '').replace(/^\/v1/, '')) && principalOf(req).environment === 'production') return;
    await authenticateMember(req);
  };
  const self = { config: { permission: 'member_auth.session' as const }, onRequest, preValidation: refuseCallerIdentity };
  const needs = 'Needs X-SVC-Publishable-Key and X-Member-Session-Id; the holder is the session member\'s and must be active (409 account_holder_not_active).';

  app.get('/account-holders/self/balance', {
    ...self,
    schema: {
      summary: 'The session member\'s money in one view: its wallets\' on-chain balances, its fiat on the platform ledger and its sandbox bank accounts',
      description: `${needs} Each linked wallet: the native asset and the chain's configured stablecoin, in base units. A chain that does not answer leaves that wallet's amounts null with status unavailable (never a 502 for the whole answer). bank is null in production. docs/platform/account-holders.md "Balance".`,
      tags: TAGS, security: selfSecurity, response: { 200: Balance, ...errors },
    },
  }, async (req) => {
    const holder = await activeHolder(req, false);
    const scope = scopeOf(req);
    const bank = principalOf(req).environment === 'sandbox' ? await banking.balances(scope, holder) : null;
    return readHolderBalance(balanceOptions, scope, holder, bank);
  });

  app.get('/account-holders/self/transactions', {
    ...self,
    schema: {
      summary: 'Every money movement of the session member\'s holder, oldest first: funding and off-ramp requests, its wallets\' vault-API transactions, sandbox bank entries',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id; the holder is the session member\'s (any open status). Optional kind filter. Paginated (docs/platform/pagination.md); '
        + 'the cursor keeps one position per source, so a walk repeats nothing and misses nothing that existed when it began. docs/platform/account-holders.md "Transactions".',
      tags: TAGS, security: selfSecurity, querystring: ActivityQuery, response: { 200: Page(Activity), ...errors },
    },
  }, async (req) => {
    const { holder } = await memberOfSession(req);
    return activity.page(scopeOf(req), holder, req.query.kind, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT);
  });

  app.get('/account-holders/self/bank-balance', {
    ...self,
    schema: {
      summary: 'Sandbox bank: the session member\'s savings and checking balances, in cents',
      description: `${needs} Opens the accounts (with the sandbox opening deposit) on the holder's first banking call. Sandbox workspaces only (403 sandbox_only).`,
      tags: TAGS, security: selfSecurity, response: { 200: BankBalances, ...errors },
    },
  }, async (req) => banking.balances(scopeOf(req), await activeHolder(req, true)));

  app.get('/account-holders/self/checking-balance', {
    ...self,
    schema: {
      summary: 'Sandbox bank: the session member\'s checking balance, in cents',
      description: `${needs} Sandbox workspaces only (403 sandbox_only).`,
      tags: TAGS, security: selfSecurity, response: { 200: Money, ...errors },
    },
  }, async (req) => (await banking.balances(scopeOf(req), await activeHolder(req, true))).checking);

  app.get('/account-holders/self/bank-transactions', {
    ...self,
    schema: {
      summary: 'Sandbox bank: the lines of the session member\'s savings and checking accounts, oldest first',
      description: `${needs} One line per account an entry touches (a transfer has two: the debited account's first). Paginated (docs/platform/pagination.md). Sandbox workspaces only (403 sandbox_only).`,
      tags: TAGS, security: selfSecurity, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Transaction), ...errors },
    },
  }, async (req) => banking.transactions(scopeOf(req), await activeHolder(req, true), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/account-holders/self/bank-transfers', {
    ...self,
    schema: {
      summary: 'Sandbox bank: move USD between the session member\'s own savings and checking accounts',
      description: `${needs} Body { from, to, amount (cents), currency: "USD" }. Idempotency-Key required: the same key and body answer the same transfer, another body is 409 idempotency_key_reused. `
        + '409 insufficient_balance when the from account holds less than the amount. Sandbox workspaces only (403 sandbox_only).',
      tags: TAGS, security: change, body: TransferBody, response: { 201: Transfer, ...errors },
    },
  }, async (req, reply) => {
    const key = idempotencyKeyOf(req);
    if (key === undefined) throw new CustodyError('invalid_request', 'Idempotency-Key is required: a retry under the same key answers the same transfer');
    const holder = await activeHolder(req, true);
    const scope = scopeOf(req);
    HolderBanking.check(req.body);
    // Keys are the holder's own: one member's key never answers another's transfer.
    const out = await idempotent.run(scope.workspace, `create_bank_transfer:${holder.id}`, key, req.body, () => banking.transfer(scope, actorOf(req), holder, req.body, key));
    return reply.code(201).send(out);
  });

  app.get('/account-holders/self/sandbox-banking-context', {
    ...self,
    schema: {
      summary: 'Sandbox bank: what a sandbox UI shows: the bank, the member\'s accounts (masked), the opening deposit and the funding rail\'s magic amounts',
      description: `${needs} Account numbers are derived from the holder id (last 4 digits shown); the routing number is a fixed test number. Sandbox workspaces only (403 sandbox_only).`,
      tags: TAGS, security: selfSecurity, response: { 200: Context, ...errors },
    },
  }, async (req) => {
    const holder = await activeHolder(req, true);
    await banking.open(scopeOf(req), holder);
    return {
      account_holder_id: holder.id,
      bank: { name: SANDBOX_BANK.name, routing_number: SANDBOX_BANK.routing_number, sandbox: true as const },
      accounts: (['savings', 'checking'] as const).map((account) => ({ account, account_number_masked: `******${accountLast4(holder.id, account)}`, currency: BANK_CURRENCY })),
      opening_deposit: { savings: SANDBOX_BANK.opening_deposit.savings.toString(), checking: SANDBOX_BANK.opening_deposit.checking.toString(), currency: BANK_CURRENCY },
      funding_rail_magic_amounts: railMagicAmounts(),
    };
  });
};
