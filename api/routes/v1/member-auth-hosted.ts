// Hosted Auth (platform-api.md "Member-auth operations", "Confidential exchange rules" 11, 12;
// docs/platform/hosted-auth.md): the BFF's three operations under /member-auth/hosted/authorizations,
// the tenant's hosted-member routes under /tenant/member-auth/applications/{id}/members, and the page
// the member's browser uses (api/hosted-page/). The BFF operations need the workspace bearer key of the
// application's BFF principal (bff_key_id) and its X-SVC-Publishable-Key, as the BYO operations do; the
// tenant routes need member_auth.read / member_auth.manage and are audit-logged.
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { createHmac } from 'node:crypto';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { Page, PageQuery, DEFAULT_LIMIT } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import type { Mailer } from '../../email/mailer.ts';
import { resolvePublishableKey } from '../../member-auth/publishable-keys.ts';
import { MemberSessions, type MemberCaller } from '../../member-auth/member-sessions.ts';
import { HostedMembers } from '../../member-auth/hosted-members.ts';
import { HostedAuthorizations } from '../../member-auth/hosted-authorizations.ts';
import { CODE_CHALLENGE, HostedKeys, hostedMemberView, type HostedMemberView } from '../../member-auth/hosted-records.ts';
import { COLLECTIONS, type ApplicationRecord } from '../../member-auth/member-auth-records.ts';
import { hostedPageRoutes } from '../../hosted-page/hosted-page-routes.ts';
import { accountCenterPageRoutes } from '../../hosted-page/account-center-page-routes.ts';
import { pageRateLimit } from '../../hosted-page/page-rate-limit.ts';
import { AccountCenter } from '../../member-auth/account-center.ts';
import type { AccountCenterPasskeySource } from '../../member-auth/account-center-passkeys.ts';
import { accountCenterRoutes } from './account-center.ts';
import { REFUSED_FIELDS, REFUSED_HEADERS } from './member-auth.ts';
import { MAX_URL } from '../../member-auth/exact-urls.ts';

export interface MemberAuthHostedRoutesOptions {
  platform: Platform;
  /** Where sign-in codes go out; without one, beginning an authorization is 503 unavailable. */
  mailer?: Mailer | undefined;
  /** API_PUBLIC_URL: the origin authorization_url is built on; default http://<Host>. */
  publicOrigin?: string | undefined;
  /** Form POSTs per client address per minute on the Hosted Auth and Account Center pages (API_HOSTED_PAGE_RATE_PER_MINUTE). */
  pageRatePerMinute?: number | undefined;
  /** Account Center passkeys: the service's keys and the registrations in force; without, off for every tenant. */
  accountCenterPasskeys?: AccountCenterPasskeySource | undefined;
}

const Grant = Type.Object({
  session_id: Type.String(), refresh_credential: Type.String(), expires_at: Type.String(), refresh_expires_at: Type.String(),
  application_id: Type.String(), member: Type.Object({ id: Type.String(), created: Type.Boolean() }),
});
const Member = Type.Object({
  id: Type.String(), email: Type.String(), status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]), source: Type.Union([Type.Literal('invited'), Type.Literal('open'), Type.Literal('demo')]),
  demo: Type.Boolean(), totp: Type.Boolean(), last_sign_in_at: Type.Union([Type.String(), Type.Null()]), created_at: Type.String(), updated_at: Type.String(),
});
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };
const TAGS = ['member auth'];
const SECURITY: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const READ: Record<string, string[]>[] = [{ bearer: [] }];
const single = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const MemberParams = Type.Object({ id: Type.String({ maxLength: 64 }), member_id: Type.String({ maxLength: 64 }) });

export const memberAuthHostedRoutes: FastifyPluginAsyncTypebox<MemberAuthHostedRoutesOptions> = async (app, opts) => {
  const { platform, mailer } = opts;
  const sessions = new MemberSessions(platform.store, platform.audit, platform.clock);
  const members = new HostedMembers(platform.store, platform.audit, platform.cursors, platform.clock);
  const keys = new HostedKeys(createHmac('sha256', platform.keys.cursorKey).update('hosted-auth').digest());
  const authorizations = new HostedAuthorizations({ store: platform.store, audit: platform.audit, sessions, members, keys, clock: platform.clock });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  app.addHook('onClose', async () => mailer?.close());

  const center = new AccountCenter({ store: platform.store, audit: platform.audit, sessions, keys, clock: platform.clock, passkeys: opts.accountCenterPasskeys });
  // One limit for both pages: an address's posts count together, whichever page they go to.
  const rateLimit = pageRateLimit(opts.pageRatePerMinute);
  await app.register(hostedPageRoutes, { platform, authorizations, mailer, rateLimit });
  await app.register(accountCenterPageRoutes, { platform, center, mailer, rateLimit });

  // ── The BFF's operations ──────────────────────────────────────────────────────────────────────────
  await app.register(async (scope) => {
    const bff = scope.withTypeProvider<TypeBoxTypeProvider>();
    bff.addHook('preValidation', async (req) => {
      const named: string[] = REFUSED_HEADERS.filter((h) => req.headers[h] !== undefined);
      const body = req.body;
      if (body && typeof body === 'object' && !Array.isArray(body)) named.push(...REFUSED_FIELDS.filter((f) => Object.hasOwn(body, f)));
      if (named.length) throw new CustodyError('caller_identity_refused', `member calls take the member only from the server-held session or a verified result; refused: ${named.join(', ')}`);
    });

    async function callerOf(req: FastifyRequest): Promise<MemberCaller> {
      const p = principalOf(req);
      const key = single(req.headers['x-svc-publishable-key']);
      const application = await resolvePublishableKey(platform.store, p, key);
      return { tenant: p.tenant, workspace: p.workspace, environment: p.environment, principal: p.keyId, publishable_key: key!, application };
    }

    bff.post('/member-auth/hosted/authorizations', {
      config: { permission: 'member_auth.session' },
      schema: {
        summary: 'Begin a Hosted Auth ceremony: the page URL to send the member\'s browser to',
        description: 'Needs the bearer key of the application\'s BFF principal (bff_key_id) and its X-SVC-Publishable-Key. `redirect_uri` must be exactly the registered result callback; PKCE S256 only. The result comes back to the callback as `code` and `state`. docs/platform/hosted-auth.md',
        tags: TAGS, security: SECURITY,
        body: Type.Object({
          redirect_uri: Type.String({ minLength: 1, maxLength: MAX_URL }),
          state: Type.String({ minLength: 1, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' }),
          code_challenge: Type.String({ pattern: CODE_CHALLENGE.source }),
          code_challenge_method: Type.String({ minLength: 1, maxLength: 16 }),
        }, { additionalProperties: false }),
        response: { 201: Type.Object({ id: Type.String(), authorization_url: Type.String(), expires_at: Type.String(), application_id: Type.String() }), ...errors },
      },
    }, async (req, reply) => {
      const caller = await callerOf(req);
      if (!mailer) throw new CustodyError('unavailable', 'Hosted Auth sends sign-in codes by email and no SMTP server is configured (API_SMTP_URL)');
      const origin = opts.publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
      return reply.code(201).send(await authorizations.begin(caller, actorOf(req), req.body, origin));
    });

    bff.post('/member-auth/hosted/authorizations/exchange', {
      config: { permission: 'member_auth.session' },
      schema: {
        summary: 'Exchange the one-time Hosted Auth result for a member session',
        description: 'Body: the `code` the callback received, the PKCE `code_verifier`, and the same `redirect_uri`. A result is exchanged once; a second exchange is 409 hosted_result_replayed and revokes the session the first one made.',
        tags: TAGS, security: SECURITY,
        body: Type.Object({
          code: Type.String({ minLength: 1, maxLength: 128 }),
          code_verifier: Type.String({ minLength: 43, maxLength: 128, pattern: '^[A-Za-z0-9._~-]+$' }),
          redirect_uri: Type.String({ minLength: 1, maxLength: MAX_URL }),
        }, { additionalProperties: false }),
        response: { 201: Grant, ...errors },
      },
    }, async (req, reply) => reply.code(201).send(await authorizations.exchange(await callerOf(req), actorOf(req), req.body)));

    // The Account Center's handoff and exchange (docs/platform/account-center.md), under this scope's hook.
    await bff.register(accountCenterRoutes, { center, callerOf, publicOrigin: opts.publicOrigin, canMail: mailer !== undefined });

    bff.post('/member-auth/hosted/authorizations/sandbox-demo', {
      config: { permission: 'member_auth.session' },
      schema: {
        summary: 'Sandbox only: a member session for the application\'s demo persona, without the ceremony',
        description: 'The demo persona is one hosted member per application, marked demo, made on first use. A production workspace is 403 sandbox_only.',
        tags: TAGS, security: SECURITY,
        body: Type.Optional(Type.Object({}, { additionalProperties: false })),
        response: { 201: Grant, ...errors },
      },
    }, async (req, reply) => reply.code(201).send(await authorizations.sandboxDemo(await callerOf(req), actorOf(req))));
  });

  // ── The tenant's hosted members ───────────────────────────────────────────────────────────────────
  /** A Hosted application of the caller's workspace; anything else (malformed, another tenant's, BYO) is 404. */
  async function hostedApp(req: FastifyRequest, id: string): Promise<ApplicationRecord> {
    const p = principalOf(req);
    const a = /^maa_[0-9a-f]{26}$/.test(id) ? await COLLECTIONS.applications.in(platform.store).get(id) : undefined;
    if (!a || a.kind !== 'hosted' || a.tenant !== p.tenant || a.workspace !== p.workspace) throw new CustodyError('not_found', `no Hosted application ${id}`);
    return a;
  }

  app.get('/tenant/member-auth/applications/:id/members', {
    config: { permission: 'member_auth.read' },
    schema: { summary: 'The hosted members of a Hosted application, a page at a time', tags: TAGS, security: READ, params: IdParam, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Member), ...errors } },
  }, async (req) => members.list(await hostedApp(req, req.params.id), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/tenant/member-auth/applications/:id/members', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Invite an email address to a Hosted application',
      description: 'The member may then sign in with a code sent to the address (invite_only applications admit no one else). An address already a member is 409 conflict. `Idempotency-Key` replays the first answer.',
      tags: TAGS, security: SECURITY, params: IdParam,
      body: Type.Object({ email: Type.String({ minLength: 3, maxLength: 254 }) }, { additionalProperties: false }),
      response: { 201: Member, ...errors },
    },
  }, async (req, reply) => {
    const made = await idempotent.run(principalOf(req).workspace, `member_auth_hosted_invite:${req.params.id}`, idempotencyKeyOf(req), req.body, async (): Promise<HostedMemberView> => hostedMemberView(await members.invite(await hostedApp(req, req.params.id), actorOf(req), req.body.email)));
    return reply.code(201).send(made);
  });

  app.delete('/tenant/member-auth/applications/:id/members/:member_id', {
    config: { permission: 'member_auth.manage' },
    schema: { summary: 'Disable a hosted member: no sign-in, and its sessions stop at their next use', tags: TAGS, security: SECURITY, params: MemberParams, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    const a = await hostedApp(req, req.params.id);
    await members.disable(a, actorOf(req), req.params.member_id);
    return reply.code(204).send(null);
  });
};
