// Account holders (docs/platform/account-holders.md): the staff operations with a workspace bearer key
// (search, create, read, patch, history) and the member self calls a BFF makes with the member's
// server-held session (rule 5: bearer key + X-SVC-Publishable-Key + X-Member-Session-Id, validated as
// GET /v1/member-auth/session validates; the member is never named by the caller).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { MemberSessions } from '../../member-auth/member-sessions.ts';
import { AccountHolderService, holderView, type HolderFilters } from '../../account-holders/account-holder-service.ts';
import { AccountHolderConsents } from '../../account-holders/account-holder-consents.ts';
import type { AccountHolderRecord } from '../../account-holders/account-holder-records.ts';
import { memberSelfCalls } from './member-self.ts';
import { roleAllows } from '../../tenancy/permissions.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import { CustomerLinks } from '../../customers/customer-links.ts';
import { HolderWallets } from '../../account-holders/holder-wallets.ts';
import { walletView } from '../../wallets/wallet-view.ts';
import { indexPage } from '../../store/pagination.ts';
import { Wallet } from '../../../core/api-schemas/vaults.ts';
import { CHAINS } from '../../vaults/wallet-address.ts';
import { Nullable } from './schema-helpers.ts';

const TAGS = ['account holders'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };

const HolderType = Type.Union([Type.Literal('individual'), Type.Literal('business')]);
const Status = Type.Union([Type.Literal('pending_verification'), Type.Literal('active'), Type.Literal('suspended'), Type.Literal('closed')]);
const VStatus = Type.Union([Type.Literal('unverified'), Type.Literal('pending'), Type.Literal('verified'), Type.Literal('rejected'), Type.Literal('expired')]);
const Name = Type.String({ minLength: 1, maxLength: 140 });
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$' });
const Timestamp = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,3})?Z$' });
const MemberRef = Type.String({ pattern: '^(mem|hsub)_[0-9a-f]{26}$' });

const Holder = Type.Object({
  id: Type.String(), type: HolderType, status: Status, verification_status: VStatus,
  given_name: Nullable(Type.String()), family_name: Nullable(Type.String()), legal_name: Nullable(Type.String()),
  email: Nullable(Type.String()), email_hash: Nullable(Type.String()), phone: Nullable(Type.String()), phone_hash: Nullable(Type.String()),
  reference: Nullable(Type.String()), member_id: Nullable(Type.String()), member_kind: Nullable(Type.Union([Type.Literal('byo_oidc'), Type.Literal('hosted')])),
  version: Type.Integer(), created_at: Type.String(), updated_at: Type.String(), closed_at: Nullable(Type.String()),
});
const CreateBody = Type.Object({
  type: HolderType,
  given_name: Type.Optional(Name), family_name: Type.Optional(Name), legal_name: Type.Optional(Name),
  email: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })), phone: Type.Optional(Type.String({ minLength: 1, maxLength: 20 })),
  reference: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })), member_id: Type.Optional(MemberRef),
}, { additionalProperties: false });
const PatchBody = Type.Object({
  given_name: Type.Optional(Name), family_name: Type.Optional(Name), legal_name: Type.Optional(Name),
  email: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 320 }))), phone: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 20 }))),
  reference: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))), member_id: Type.Optional(Nullable(MemberRef)),
  status: Type.Optional(Status), verification_status: Type.Optional(VStatus),
}, { additionalProperties: false });
const ListQuery = Type.Object({
  ...PageQuery, status: Type.Optional(Status), type: Type.Optional(HolderType),
  verification_status: Type.Optional(VStatus), email_hash: Type.Optional(Hash), phone_hash: Type.Optional(Hash),
  member_id: Type.Optional(MemberRef), created_gte: Type.Optional(Timestamp), created_lt: Type.Optional(Timestamp),
}, { additionalProperties: false });
const HistoryEntry = Type.Object({
  id: Type.String(), account_holder_id: Type.String(), version: Type.Integer(), action: Type.Union([Type.Literal('created'), Type.Literal('updated')]),
  actor: Type.Object({ type: Type.String(), id: Type.String() }), at: Type.String(),
  changes: Type.Record(Type.String(), Type.Object({ from: Type.Unknown(), to: Type.Unknown() })),
});
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Policy = Type.Object({ policy: Type.Union([Type.Literal('terms'), Type.Literal('privacy')]), url: Type.String(), version: Type.String() });
const Consents = Type.Object({
  account_holder_id: Type.String(),
  policies: Type.Array(Type.Intersect([Policy, Type.Object({ accepted_version: Nullable(Type.String()), accepted_at: Nullable(Type.String()), current: Type.Boolean() })])),
  all_current: Type.Boolean(),
});
const Verification = Type.Object({ account_holder_id: Type.String(), status: Status, verification_status: VStatus, updated_at: Type.String() });

const Readiness = Type.Object({
  account_holder_id: Type.String(),
  status: Type.Union([Type.Literal('not_provisioned'), Type.Literal('vault_creating'), Type.Literal('wallets_pending'), Type.Literal('ready'), Type.Literal('vault_failed')]),
  vault_id: Nullable(Type.String()),
  wallets: Type.Array(Type.Object({ chain: Type.String(), wallet_id: Type.String(), address: Type.String() })),
  missing: Type.Array(Type.String()),
});
const ProvisionBody = Type.Object({
  vault_id: Type.String({ minLength: 1, maxLength: 64 }),
  chains: Type.Array(Type.Union(CHAINS.map((c) => Type.Literal(c.chain))), { minItems: 1, maxItems: CHAINS.length }),
}, { additionalProperties: false });

const etag = (h: AccountHolderRecord) => `"${h.version}"`;
const single = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

/** If-Match `"<version>"` (a weak validator is not accepted: the version must match exactly). */
export function ifMatchOf(req: FastifyRequest, what = 'account holder'): number {
  const v = single(req.headers['if-match']);
  if (v === undefined) throw new CustodyError('precondition_required', `If-Match is required: send the ETag of the ${what} you read ("<version>")`);
  const m = /^"([1-9][0-9]{0,9})"$/.exec(v.trim());
  if (!m) throw new CustodyError('invalid_request', `If-Match must be the ETag of the ${what}, "<version>"`);
  return Number(m[1]);
}

export const accountHolderRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; vaults?: VaultService | undefined }> = async (app, { platform, vaults }) => {
  const holders = new AccountHolderService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, clock: platform.clock });
  const consents = new AccountHolderConsents(platform.store, platform.branding, platform.deliveries, platform.clock);
  const sessions = new MemberSessions(platform.store, platform.audit, platform.clock);
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const holderWallets = new HolderWallets({ store: platform.store, vaults, links: new CustomerLinks(vaults?.store ?? platform.store), audit: platform.audit, clock: platform.clock });
  const send = (reply: FastifyReply, h: AccountHolderRecord, code = 200) => reply.code(code).header('etag', etag(h)).send(holderView(h));

  app.get('/tenant/policies', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'The workspace\'s current policies (terms, privacy) at their current versions: what POST /account-holders/self/consents accepts',
      description: 'The documents the branding theme links to (`terms_url`, `privacy_url`); a version is the first 16 hex digits of SHA-256 of the URL (docs/platform/account-holders.md "Consents"). A policy the theme does not link is absent.',
      tags: TAGS, security: read, response: { 200: Type.Object({ data: Type.Array(Policy) }), ...errors },
    },
  }, async (req) => ({ data: await consents.current(scopeOf(req)) }));

  app.get('/account-holders', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'Search the workspace\'s account holders, oldest first, by status, type, verification status, email or phone hash, member or creation time',
      description: 'email_hash and phone_hash are SHA-256 (lower-case hex) of the normalized value (docs/platform/account-holders.md "Search hashes"). created_gte and created_lt bound created_at.',
      tags: TAGS, security: read, querystring: ListQuery, response: { 200: Page(Holder), ...errors },
    },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return holders.list(scopeOf(req), filters as HolderFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.post('/account-holders', {
    config: { permission: 'account_holder.manage' },
    schema: {
      summary: 'Create an account holder (an individual or a business), pending verification',
      description: 'An `Idempotency-Key` with the same body returns the same holder; with another body, 409 idempotency_key_reused. `member_id` links a member of this workspace (BYO `mem_…` or hosted `hsub_…`); a member has at most one holder.',
      tags: TAGS, security: change, body: CreateBody, response: { 201: Holder, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const made = await idempotent.run(scope.workspace, 'create_account_holder', idempotencyKeyOf(req), req.body, async () => ({ id: (await holders.create(scope, actorOf(req), req.body)).id }));
    return send(reply, await holders.get(scope, made.id), 201);
  });

  // The member self calls, registered before /account-holders/:id so `self` is never read as an id.
  // Rule 5: after the bearer key and permission, before validation: a caller naming the member or the holder is refused.
  const { refuseCallerIdentity, memberOfSession, authenticateMember } = memberSelfCalls(platform.store, holders, sessions);

  /** The holder linked to the session's member, after the session is validated exactly as GET /member-auth/session does. */
  async function holderOfSession(req: FastifyRequest): Promise<AccountHolderRecord> {
    return (await memberOfSession(req)).holder;
  }
  const selfSecurity: Record<string, string[]>[] = [{ bearer: [] }];

  app.get('/account-holders/self/verification', {
    config: { permission: 'member_auth.session' }, onRequest: authenticateMember, preValidation: refuseCallerIdentity,
    schema: {
      summary: 'The session member\'s account holder: its status and verification status (ids and states only)',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id. 404 account_holder_not_linked when the member has no open holder.',
      tags: TAGS, security: selfSecurity, response: { 200: Verification, ...errors },
    },
  }, async (req) => {
    const h = await holderOfSession(req);
    return { account_holder_id: h.id, status: h.status, verification_status: h.verification_status, updated_at: h.updated_at };
  });

  app.get('/account-holders/self/consents', {
    config: { permission: 'member_auth.session' }, onRequest: authenticateMember, preValidation: refuseCallerIdentity,
    schema: {
      summary: 'The workspace\'s current policies (terms, privacy) and what the session member\'s holder accepted',
      tags: TAGS, security: selfSecurity, response: { 200: Consents, ...errors },
    },
  }, async (req) => {
    const h = await holderOfSession(req);
    return { account_holder_id: h.id, ...(await consents.view(scopeOf(req), h)) };
  });

  app.post('/account-holders/self/consents', {
    config: { permission: 'member_auth.session' }, onRequest: authenticateMember, preValidation: refuseCallerIdentity,
    schema: {
      summary: 'Accept the current versions of the workspace\'s policies for the session member\'s holder',
      description: 'Body `{ accepted: [{ policy, version }] }` naming every current policy at its current version; otherwise 409 consent_version_mismatch and nothing is recorded.',
      tags: TAGS, security: change,
      body: Type.Object({ accepted: Type.Array(Type.Object({ policy: Type.String({ maxLength: 20 }), version: Type.String({ maxLength: 64 }) }, { additionalProperties: false }), { minItems: 1, maxItems: 10 }) }, { additionalProperties: false }),
      response: { 201: Type.Object({ id: Type.String(), account_holder_id: Type.String(), member_id: Type.String(), policies: Type.Array(Policy), accepted_at: Type.String() }), ...errors },
    },
  }, async (req, reply) => {
    const h = await holderOfSession(req);
    return reply.code(201).send(await consents.accept(scopeOf(req), actorOf(req), h, req.body.accepted));
  });

  const walletPage = async (req: FastifyRequest, h: AccountHolderRecord) => {
    const q = req.query as { cursor?: string | undefined; limit?: number | undefined };
    const page = await indexPage(vaults?.store ?? platform.store, platform.cursors, await holderWallets.walletList(scopeOf(req), h), q.cursor, q.limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map(walletView) };
  };

  app.get('/account-holders/self/wallets', {
    config: { permission: 'member_auth.session' }, onRequest: authenticateMember, preValidation: refuseCallerIdentity,
    schema: {
      summary: 'The session member\'s holder\'s wallets: the wallets of its linked hosted vault, oldest first',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id. Empty until a vault is linked (POST /account-holders/self/wallet-provision). The wallet view is GET /wallets/{walletId}\'s.',
      tags: TAGS, security: selfSecurity, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Wallet), ...errors },
    },
  }, async (req) => walletPage(req, await holderOfSession(req)));

  app.get('/account-holders/self/wallet-readiness', {
    config: { permission: 'member_auth.session' }, onRequest: authenticateMember, preValidation: refuseCallerIdentity,
    schema: {
      summary: 'Whether the session member\'s holder has its wallets: its vault, the wallet of each chain asked for, and the chains still missing',
      description: 'status: not_provisioned (no vault linked), vault_creating (the vault has no key yet), wallets_pending (the vault has its key; call wallet-provision again to derive the missing chains), ready, vault_failed (key generation failed or the vault was deleted). docs/platform/account-holders.md "Wallets".',
      tags: TAGS, security: selfSecurity, response: { 200: Readiness, ...errors },
    },
  }, async (req) => holderWallets.readiness(await holderOfSession(req)));

  app.post('/account-holders/self/wallet-provision', {
    config: { permission: 'member_auth.session' }, onRequest: authenticateMember, preValidation: refuseCallerIdentity,
    schema: {
      summary: 'Link a hosted vault the customer created for the session member to its holder, and derive its wallets on the chains asked for',
      description: 'The platform API never creates a vault: the customer\'s backend creates it with a signed POST /v1/vaults (tier hosted, end_user_subject = the member\'s provider subject). '
        + 'The vault must be the linked organization\'s (404 otherwise), hosted, created with end-user auth and for this member\'s subject, and no other holder\'s; the holder pending_verification or active; the member a BYO OIDC member. '
        + '200 with the readiness when the wallets exist; 202 when the vault has no key yet (call again once it is active). Idempotent per chain; an `Idempotency-Key` with the same body replays the answer.',
      tags: TAGS, security: change, body: ProvisionBody, response: { 200: Readiness, 202: Readiness, ...errors },
    },
  }, async (req, reply) => {
    const { holder, session } = await memberOfSession(req);
    const scope = scopeOf(req);
    const p = principalOf(req);
    // The member is part of the request: one member's key never replays another's answer.
    const out = await idempotent.run(scope.workspace, 'provision_holder_wallets', idempotencyKeyOf(req), { account_holder_id: holder.id, ...req.body },
      () => holderWallets.provision({ ...scope, environment: p.environment }, actorOf(req), holder, session, req.body.vault_id, req.body.chains));
    return reply.code(out.status === 'vault_creating' || out.status === 'wallets_pending' ? 202 : 200).send(out);
  });

  app.get('/account-holders/:id', {
    config: { permission: 'account_holder.read' },
    schema: { summary: 'Read an account holder; the ETag is its version', tags: TAGS, security: read, params: IdParam, response: { 200: Holder, ...errors } },
  }, async (req, reply) => send(reply, await holders.get(scopeOf(req), req.params.id)));

  app.get('/account-holders/:id/wallets', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'An account holder\'s wallets: the wallets of its linked hosted vault, oldest first (needs wallet.read too)',
      tags: TAGS, security: read, params: IdParam, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Wallet), ...errors },
    },
  }, async (req) => {
    const role = principalOf(req).role;
    if (!roleAllows(role, 'wallet.read')) throw new CustodyError('role_denied', `this key's role (${role}) lacks the wallet.read permission`);
    return walletPage(req, await holders.get(scopeOf(req), req.params.id));
  });

  app.patch('/account-holders/:id', {
    config: { permission: 'account_holder.manage' },
    schema: {
      summary: 'Change an account holder\'s names, contact details, member link, status or verification status; needs If-Match',
      description: 'If-Match: the ETag of the version read (`"<version>"`); 428 without it, 412 precondition_failed when the holder changed since. Transitions: docs/platform/account-holders.md "States"; others are 409 invalid_transition.',
      tags: TAGS, security: change, params: IdParam, body: PatchBody, response: { 200: Holder, ...errors, 412: ErrorBody, 428: ErrorBody },
    },
  }, async (req, reply) => send(reply, await holders.patch(scopeOf(req), actorOf(req), req.params.id, ifMatchOf(req), req.body)));

  app.get('/account-holders/:id/history', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'An account holder\'s change history, oldest first: who changed which field from what to what (email and phone as hashes)',
      tags: TAGS, security: read, params: IdParam, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(HistoryEntry), ...errors },
    },
  }, async (req) => holders.history(scopeOf(req), req.params.id, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));
};
