// The BYO OIDC member-auth operations (platform-api.md "Member-auth operations (server-only)",
// "Confidential exchange rules" 1-11; docs/platform/member-auth.md "Member sessions"): challenges, proof
// exchange, session, refresh and sign-out. Server-to-server only: each call carries the workspace bearer
// key (checked by the bearer-auth hook) and X-SVC-Publishable-Key of an application of that workspace;
// the session calls also X-Member-Session-Id. A member is never named by the caller: provider tokens in
// headers, X-End-User-Id and caller-chosen member or holder ids are refused before anything is read.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { OutboundHttp } from '../../webhooks/outbound-http.ts';
import { resolvePublishableKey } from '../../member-auth/publishable-keys.ts';
import { MAX_DISCOVERY_BYTES } from '../../member-auth/oidc-discovery.ts';
import { loadExchangeCipher } from '../../member-auth/exchange-cipher.ts';
import { ProofChallenges } from '../../member-auth/proof-challenges.ts';
import { ProofVerifier, MAX_PROOF_BYTES } from '../../member-auth/proof-verifier.ts';
import { ProofExchange } from '../../member-auth/proof-exchange.ts';
import { MemberBindings } from '../../member-auth/member-bindings.ts';
import { MemberSessions, type MemberCaller } from '../../member-auth/member-sessions.ts';
import { EXCHANGE_ID } from '../../member-auth/member-session-records.ts';

export interface MemberAuthRoutesOptions {
  platform: Platform;
  /** The proof-exchange store's AES-256-GCM key (32 bytes, from a secret file); a generated default otherwise. */
  exchangeKey?: Uint8Array;
  /** Test seam: runs between proof verification and the session's commit. */
  afterVerify?: () => Promise<void>;
}

/** Headers that would let a caller name the member or pass a provider token: refused on every member call (rule 5). */
export const REFUSED_HEADERS = ['x-oidc-id-token', 'x-id-token', 'x-provider-token', 'x-end-user-id', 'x-member-id', 'x-account-holder-id', 'x-holder-id', 'x-hosted-auth-session'] as const;
/** Body fields with the same meaning, refused with the same clear code rather than as merely unknown. */
export const REFUSED_FIELDS = ['end_user_id', 'member_id', 'account_holder_id', 'holder_id', 'access_token', 'provider_token', 'hosted_session'] as const;

const Grant = Type.Object({
  session_id: Type.String(), refresh_credential: Type.String(), expires_at: Type.String(), refresh_expires_at: Type.String(),
  application_id: Type.String(), member: Type.Object({ id: Type.String(), created: Type.Boolean() }),
});
const Context = Type.Object({
  member: Type.Object({ id: Type.String() }),
  application: Type.Object({ id: Type.String(), kind: Type.Union([Type.Literal('byo_oidc'), Type.Literal('hosted')]), version: Type.Integer() }),
  workspace: Type.String(), environment: Type.String(),
  session: Type.Object({ expires_at: Type.String(), refresh_expires_at: Type.String(), authenticated_at: Type.String(), created_at: Type.String() }),
  acr: Type.Union([Type.String(), Type.Null()]), amr: Type.Array(Type.String()),
  restricted_until: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Hosted members: until when lost-all-factor recovery refuses member actions (a fresh sign-in after it is also needed); null when not restricted' })),
});
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody };
const TAGS = ['member auth'];
const SECURITY: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const single = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

export const memberAuthRoutes: FastifyPluginAsyncTypebox<MemberAuthRoutesOptions> = async (app, opts) => {
  const { platform } = opts;
  const http = new OutboundHttp({ policy: platform.endpoints.http.policy, timeoutMs: 10_000, maxResponseBytes: MAX_DISCOVERY_BYTES + 1 });
  app.addHook('onClose', async () => http.close());
  const cipher = await loadExchangeCipher(platform.store, opts.exchangeKey);
  const challenges = new ProofChallenges(platform.store, platform.clock);
  const sessions = new MemberSessions(platform.store, platform.audit, platform.clock, cipher);
  const exchange = new ProofExchange({
    store: platform.store, audit: platform.audit, cipher, verifier: new ProofVerifier(http, platform.clock), bindings: new MemberBindings(platform.store, platform.clock),
    sessions, clock: platform.clock, ...(opts.afterVerify ? { afterVerify: opts.afterVerify } : {}),
  });

  // After the bearer key (401 first, as everywhere) and once the body is parsed, before it is validated:
  // a caller naming the member itself gets the one clear code, whatever else is wrong with the request.
  app.addHook('preValidation', async (req) => {
    const named = REFUSED_HEADERS.filter((h) => req.headers[h] !== undefined);
    const body = req.body;
    if (body && typeof body === 'object' && !Array.isArray(body)) named.push(...(REFUSED_FIELDS.filter((f) => Object.hasOwn(body, f)) as never[]));
    if (named.length) {
      throw new CustodyError('caller_identity_refused', `member calls take the member only from the server-held session (X-Member-Session-Id) or a verified proof; refused: ${named.join(', ')}`);
    }
  });

  /** The caller with the application its publishable key selects for this workspace (rule 3). */
  async function callerOf(req: FastifyRequest): Promise<MemberCaller> {
    const p = principalOf(req);
    const key = single(req.headers['x-svc-publishable-key']);
    const application = await resolvePublishableKey(platform.store, p, key);
    return { tenant: p.tenant, workspace: p.workspace, environment: p.environment, principal: p.keyId, publishable_key: key!, application };
  }
  const sessionIdOf = (req: FastifyRequest) => single(req.headers['x-member-session-id']);

  app.post('/member-auth/proof/challenges', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Issue a one-time nonce for the next BYO OIDC proof',
      description: 'Send the nonce as the `nonce` parameter of the OpenID authentication request; the ID token must carry it back within 300 s. Needs X-SVC-Publishable-Key.',
      tags: TAGS, security: SECURITY,
      body: Type.Optional(Type.Object({}, { additionalProperties: false })),
      response: { 201: Type.Object({ nonce: Type.String(), expires_at: Type.String(), application_id: Type.String() }), ...errors },
    },
  }, async (req, reply) => {
    const caller = await callerOf(req);
    if (caller.application.kind !== 'byo_oidc') throw new CustodyError('forbidden', 'proof challenges are for the BYO OIDC application; Hosted Auth starts at /member-auth/hosted/authorizations');
    return reply.code(201).send(await challenges.issue(caller.application));
  });

  app.post('/member-auth/proof/exchange', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Verify and consume a BYO OIDC ID token and create a member session',
      description: 'Body: `exchange_id` (stable, chosen by the BFF, reused until the session is returned) and `id_token`. A repeat with the same exchange_id and id_token within 600 s returns the same session (header Member-Exchange-Recovered: true).',
      tags: TAGS, security: SECURITY,
      body: Type.Object({
        exchange_id: Type.String({ pattern: EXCHANGE_ID.source }),
        id_token: Type.String({ minLength: 1, maxLength: MAX_PROOF_BYTES }),
      }, { additionalProperties: false }),
      response: { 201: Grant, ...errors },
    },
  }, async (req, reply) => {
    const caller = await callerOf(req);
    const out = await exchange.exchange(caller, actorOf(req), req.body.exchange_id, req.body.id_token);
    if (out.recovered) reply.header('member-exchange-recovered', 'true');
    return reply.code(201).send(out.grant);
  });

  app.get('/member-auth/session', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Validate the exact member session and return a safe member context',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id. Rechecks tenant, workspace, application, its version, the bearer principal and the member binding.',
      tags: TAGS, security: [{ bearer: [] }],
      response: { 200: Context, ...errors },
    },
  }, async (req) => sessions.context(await callerOf(req), sessionIdOf(req)));

  app.post('/member-auth/refresh', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Rotate the single-use refresh credential: a new session id and refresh credential',
      description: 'A credential used before revokes every session of its sign-in (401 refresh_replayed), once the caller matches its tenant, workspace, application, publishable key and bearer principal. '
        + 'Optional `refresh_id` (chosen by the BFF for this refresh): the same credential with the same refresh_id repeated within 60 s, after a lost answer, returns the same session while it is still the sign-in\'s current one, rather than counting as a replay.',
      tags: TAGS, security: SECURITY,
      body: Type.Object({ refresh_credential: Type.String({ minLength: 1, maxLength: 256 }), refresh_id: Type.Optional(Type.String({ pattern: EXCHANGE_ID.source })) }, { additionalProperties: false }),
      response: { 200: Grant, ...errors },
    },
  }, async (req) => sessions.refresh(await callerOf(req), actorOf(req), req.body.refresh_credential, req.body.refresh_id));

  app.post('/member-auth/sign-out', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Revoke the exact member session (default), or with {"scope":"all"} every session of the member in the application',
      tags: TAGS, security: SECURITY,
      body: Type.Optional(Type.Object({ scope: Type.Optional(Type.Union([Type.Literal('session'), Type.Literal('all')])) }, { additionalProperties: false })),
      response: { 200: Type.Object({ revoked_sessions: Type.Integer() }), ...errors },
    },
  }, async (req) => sessions.signOut(await callerOf(req), actorOf(req), sessionIdOf(req), req.body?.scope ?? 'session'));
};
