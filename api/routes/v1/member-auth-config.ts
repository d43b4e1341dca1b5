// The tenant area's member-auth configuration (platform-api.md "tenant": allowed origins, redirect URLs,
// BYO OIDC and Hosted Auth applications; docs/platform/member-auth.md). Authentication and permissions
// are checked by the bearer-auth hook; reads need member_auth.read, changes member_auth.manage.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { Page, PageQuery, DEFAULT_LIMIT } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { OutboundHttp } from '../../webhooks/outbound-http.ts';
import { MemberAuthConfig, type WorkspaceScope } from '../../member-auth/member-auth-config.ts';
import { MAX_DISCOVERY_BYTES } from '../../member-auth/oidc-discovery.ts';
import { MAX_URL } from '../../member-auth/exact-urls.ts';
import { COLLECTIONS, applicationView, originView, redirectUrlView, type ApplicationRecord } from '../../member-auth/member-auth-records.ts';
import { MemberBindings } from '../../member-auth/member-bindings.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { Nullable } from './schema-helpers.ts';
import type { AccountCenterKeys } from '../../member-auth/account-center-keys.ts';
import type { AccountCenterOptIn } from '../../../core/auth/member-credential.ts';

const Origin = Type.Object({ id: Type.String(), origin: Type.String(), created_at: Type.String() });
const RedirectUrl = Type.Object({ id: Type.String(), url: Type.String(), origin: Type.String(), created_at: Type.String() });
const ByoOidc = Type.Object({
  issuer: Type.String(), audience: Type.String(), provider_namespace: Type.String(), jwks_uri: Type.String(), jwks_thumbprints: Type.Array(Type.String()),
  discovered_at: Type.String(), max_proof_age_sec: Type.Integer(), required_acr: Type.Array(Type.String()), required_amr: Type.Array(Type.String()),
});
const Enrollment = Type.Union([Type.Literal('invite_only'), Type.Literal('open')]);
const Hosted = Type.Object({ enrollment: Enrollment, origin: Type.String(), result_callback_url: Type.String(), bff_key_id: Type.String(), require_totp: Type.Boolean(), account_center_passkeys: Type.Boolean() });
const Application = Type.Object({
  id: Type.String(), environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')]), kind: Type.Union([Type.Literal('byo_oidc'), Type.Literal('hosted')]),
  version: Type.Integer(), publishable_key: Type.String(), byo_oidc: Nullable(ByoOidc), hosted: Nullable(Hosted), created_at: Type.String(), updated_at: Type.String(),
});

const Url = Type.String({ minLength: 1, maxLength: MAX_URL });
const Values = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 10 });
const ByoFields = {
  audience: Type.String({ minLength: 1, maxLength: 255 }),
  provider_namespace: Type.String({ minLength: 1, maxLength: 63 }),
  max_proof_age_sec: Type.Integer({ minimum: 30, maximum: 86_400 }),
  required_acr: Values,
  required_amr: Values,
};
const HostedFields = {
  enrollment: Enrollment, origin: Url, result_callback_url: Url, bff_key_id: Type.String({ minLength: 1, maxLength: 64 }), require_totp: Type.Boolean(),
  account_center_passkeys: Type.Boolean({ description: 'Opt in to passkeys enrolled on the Account Center (docs/end-user-auth.md "Account Center passkeys"); turning it on needs the organization\'s customer-signed registration to name the service\'s Account Center key first (409 account_center_opt_in_unregistered)' }),
};
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const BindingParams = Type.Object({ id: Type.String({ maxLength: 64 }), member_id: Type.String({ maxLength: 64 }) });
const Binding = Type.Object({
  id: Type.String(), status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]), provider_namespace: Type.String(), issuer: Type.String(), subject: Type.String(),
  created_at: Type.String(), updated_at: Type.String(),
});
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };
const TAGS = ['member auth'];
const READ: Record<string, string[]>[] = [{ bearer: [] }];
const WRITE: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];

/** The workspace scope with its environment, which publishable keys and URL rules depend on. */
function workspaceOf(req: FastifyRequest): WorkspaceScope {
  return { ...scopeOf(req), environment: principalOf(req).environment };
}

export interface MemberAuthConfigRouteOptions {
  platform: Platform;
  /** Account Center passkeys (docs/end-user-auth.md): the service's keys and the organization's registration as the vault API keeps it. */
  accountCenter?: { keys: AccountCenterKeys; registration: (scope: WorkspaceScope) => Promise<{ org: string; accountCenter: AccountCenterOptIn | undefined } | undefined> };
}

export const memberAuthConfigRoutes: FastifyPluginAsyncTypebox<MemberAuthConfigRouteOptions> = async (app, { platform, accountCenter }) => {
  // Discovery goes out under the webhooks' destination policy (and its allow-list), reading bodies one
  // byte past the bound so a longer one is refused rather than cut.
  const http = new OutboundHttp({ policy: platform.endpoints.http.policy, timeoutMs: 10_000, maxResponseBytes: MAX_DISCOVERY_BYTES + 1 });
  app.addHook('onClose', async () => http.close());
  const registered = async (scope: WorkspaceScope) => {
    const r = accountCenter ? await accountCenter.registration(scope) : undefined;
    return r !== undefined && accountCenter!.keys.registered(r.org, r.accountCenter);
  };
  const cfg = new MemberAuthConfig({ store: platform.store, audit: platform.audit, cursors: platform.cursors, http, clock: platform.clock, accountCenterRegistered: registered });

  app.get('/tenant/member-auth/account-center-key', {
    config: { permission: 'member_auth.read' },
    schema: {
      summary: 'The opt-in to Account Center passkeys the organization registers for the nodes: this service\'s Account Center key and origin',
      description: 'Put `account_center` as answered into PUT /v1/config/end-user-auth (signed with the organization\'s API key); `registered` says whether the registration in force names it. Only then can a Hosted application turn `account_center_passkeys` on (docs/end-user-auth.md "Account Center passkeys"). The workspace must be the one linked to the organization (404 otherwise); 503 without a public URL.',
      tags: TAGS, security: READ,
      response: { 200: Type.Object({ organization: Type.String(), account_center: Type.Object({ jwk: Type.Record(Type.String(), Type.String()), origin: Type.String() }), registered: Type.Boolean() }), ...errors, 503: ErrorBody },
    },
  }, async (req) => {
    const r = accountCenter ? await accountCenter.registration(workspaceOf(req)) : undefined;
    if (!accountCenter || !r) throw new CustodyError('not_found', 'this workspace is linked to no organization of the vault API here (docs/customers.md)');
    return { organization: r.org, account_center: accountCenter.keys.optIn(r.org) as { jwk: Record<string, string>; origin: string }, registered: accountCenter.keys.registered(r.org, r.accountCenter) };
  });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);

  app.get('/tenant/member-auth/allowed-origins', {
    config: { permission: 'member_auth.read' },
    schema: { summary: 'The workspace\'s allowed member-auth origins, a page at a time', tags: TAGS, security: READ, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Origin), ...errors } },
  }, async (req) => cfg.listOrigins(workspaceOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/tenant/member-auth/allowed-origins', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Allow an exact origin (scheme://host[:port]) for member authentication',
      description: 'Stored normalized (lower-case host, default port dropped); an origin already allowed is 409 conflict. `Idempotency-Key` replays the first answer.',
      tags: TAGS, security: WRITE,
      body: Type.Object({ origin: Type.String({ minLength: 1, maxLength: MAX_URL }) }, { additionalProperties: false }),
      response: { 201: Origin, ...errors },
    },
  }, async (req, reply) => {
    const scope = workspaceOf(req);
    const made = await idempotent.run(scope.workspace, 'member_auth_add_origin', idempotencyKeyOf(req), req.body, async () => originView(await cfg.addOrigin(scope, actorOf(req), req.body.origin)));
    return reply.code(201).send(made);
  });

  app.delete('/tenant/member-auth/allowed-origins/:id', {
    config: { permission: 'member_auth.manage' },
    schema: { summary: 'Remove an allowed origin no redirect URL or Hosted application uses', tags: TAGS, security: WRITE, params: IdParam, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    await cfg.removeOrigin(workspaceOf(req), actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  app.get('/tenant/member-auth/redirect-urls', {
    config: { permission: 'member_auth.read' },
    schema: { summary: 'The workspace\'s registered member-auth redirect URLs, a page at a time', tags: TAGS, security: READ, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(RedirectUrl), ...errors } },
  }, async (req) => cfg.listRedirectUrls(workspaceOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/tenant/member-auth/redirect-urls', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Register an exact redirect URL whose origin is an allowed origin',
      description: 'No fragment, no wildcard; https (plain http only to loopback in a sandbox workspace). A URL already registered is 409 conflict. `Idempotency-Key` replays the first answer.',
      tags: TAGS, security: WRITE,
      body: Type.Object({ url: Url }, { additionalProperties: false }),
      response: { 201: RedirectUrl, ...errors },
    },
  }, async (req, reply) => {
    const scope = workspaceOf(req);
    const made = await idempotent.run(scope.workspace, 'member_auth_add_redirect_url', idempotencyKeyOf(req), req.body, async () => redirectUrlView(await cfg.addRedirectUrl(scope, actorOf(req), req.body.url)));
    return reply.code(201).send(made);
  });

  app.delete('/tenant/member-auth/redirect-urls/:id', {
    config: { permission: 'member_auth.manage' },
    schema: { summary: 'Remove a redirect URL no Hosted application sends results to', tags: TAGS, security: WRITE, params: IdParam, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    await cfg.removeRedirectUrl(workspaceOf(req), actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  app.put('/tenant/member-auth/application', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Register or update the workspace\'s BYO OIDC application, checking the issuer\'s discovery document and JWKS',
      description: 'Fetches `<issuer>/.well-known/openid-configuration` (its `issuer` must equal the given one exactly) and its `jwks_uri` (a JWKS with a public signing key). 201 when created, 200 when updated; every change increments `version`.',
      tags: TAGS, security: WRITE,
      body: Type.Object({
        issuer: Type.String({ minLength: 1, maxLength: MAX_URL }), audience: ByoFields.audience, provider_namespace: ByoFields.provider_namespace,
        max_proof_age_sec: Type.Optional(ByoFields.max_proof_age_sec), required_acr: Type.Optional(Values), required_amr: Type.Optional(Values),
      }, { additionalProperties: false }),
      response: { 200: Application, 201: Application, 502: ErrorBody, ...errors },
    },
  }, async (req, reply) => {
    const scope = workspaceOf(req);
    const out = await idempotent.run(scope.workspace, 'member_auth_put_application', idempotencyKeyOf(req), req.body, async () => {
      const { application, created } = await cfg.putByoApplication(scope, actorOf(req), req.body);
      return { created, application: applicationView(application) };
    });
    return reply.code(out.created ? 201 : 200).send(out.application);
  });

  app.get('/tenant/member-auth/applications', {
    config: { permission: 'member_auth.read' },
    schema: { summary: 'The workspace\'s member-auth applications (BYO OIDC and Hosted), with their publishable keys', tags: TAGS, security: READ, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Application), ...errors } },
  }, async (req) => cfg.listApplications(workspaceOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/tenant/member-auth/applications/hosted', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Create a Hosted Auth application: enrolment mode, exact origin, result callback and BFF principal',
      description: '`origin` must be an allowed origin, `result_callback_url` a registered redirect URL, `bff_key_id` an active bearer key of this workspace. `Idempotency-Key` replays the first answer.',
      tags: TAGS, security: WRITE,
      body: Type.Object({ ...HostedFields, require_totp: Type.Optional(HostedFields.require_totp), account_center_passkeys: Type.Optional(HostedFields.account_center_passkeys) }, { additionalProperties: false }),
      response: { 201: Application, ...errors },
    },
  }, async (req, reply) => {
    const scope = workspaceOf(req);
    const made = await idempotent.run(scope.workspace, 'member_auth_create_hosted', idempotencyKeyOf(req), req.body, async () => applicationView(await cfg.createHostedApplication(scope, actorOf(req), req.body)));
    return reply.code(201).send(made);
  });

  app.patch('/tenant/member-auth/applications/:id', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Change a member-auth application\'s settings; each change increments its version',
      description: 'BYO OIDC: audience, provider_namespace, max_proof_age_sec, required_acr, required_amr (the issuer changes through PUT). Hosted: enrollment, origin, result_callback_url, bff_key_id, require_totp. Another kind\'s field is 422; `{}` changes nothing.',
      tags: TAGS, security: WRITE, params: IdParam,
      body: Type.Optional(Type.Partial(Type.Object({ ...ByoFields, ...HostedFields }, { additionalProperties: false }))),
      response: { 200: Application, ...errors },
    },
  }, async (req) => applicationView(await cfg.patchApplication(workspaceOf(req), actorOf(req), req.params.id, req.body ?? {})));

  app.delete('/tenant/member-auth/applications/:id', {
    config: { permission: 'member_auth.manage' },
    schema: { summary: 'Delete a member-auth application; its publishable key stops resolving', tags: TAGS, security: WRITE, params: IdParam, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    await cfg.removeApplication(workspaceOf(req), actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  // ── The BYO OIDC application's members (bindings): list, and disable (docs/platform/member-auth.md) ──
  const bindings = new MemberBindings(platform.store, platform.clock);
  /** The workspace's BYO OIDC application; anything else (malformed, another tenant's, a Hosted one) is 404. */
  async function byoApp(req: FastifyRequest, id: string): Promise<ApplicationRecord> {
    const w = workspaceOf(req);
    const a = /^maa_[0-9a-f]{26}$/.test(id) ? await COLLECTIONS.applications.in(platform.store).get(id) : undefined;
    if (!a || a.kind !== 'byo_oidc' || !a.byo_oidc || a.tenant !== w.tenant || a.workspace !== w.workspace) throw new CustodyError('not_found', `no BYO OIDC application ${id}`);
    return a;
  }

  app.get('/tenant/member-auth/applications/:id/bindings', {
    config: { permission: 'member_auth.read' },
    schema: {
      summary: 'The members (bindings) of the BYO OIDC application, a page at a time',
      description: 'One per provider identity (issuer, subject) in the application\'s pinned namespace, made at its first accepted proof; oldest first.',
      tags: TAGS, security: READ, params: IdParam, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Binding), ...errors },
    },
  }, async (req) => bindings.list(await byoApp(req, req.params.id), platform.cursors, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.delete('/tenant/member-auth/applications/:id/bindings/:member_id', {
    config: { permission: 'member_auth.manage' },
    schema: {
      summary: 'Disable a BYO OIDC member: its sign-ins are revoked at once, and its proofs, member actions and signing sessions are refused',
      description: 'Idempotent (a disabled member answers 204 and changes nothing). The binding is kept, disabled: the same provider identity signing in again is refused with 403 member_binding_inactive.',
      tags: TAGS, security: WRITE, params: BindingParams, response: { 204: Type.Null(), ...errors },
    },
  }, async (req, reply) => {
    await bindings.disableMember(await byoApp(req, req.params.id), actorOf(req), platform.audit, req.params.member_id);
    return reply.code(204).send(null);
  });
};
