// The Account Center's BFF operations (platform-api.md "Confidential exchange rules" 13; docs/platform/
// account-center.md): begin a handoff from a hosted member's session, and exchange the one-time result
// the return URL received for a summary of what changed. Both need the workspace bearer key of the
// application's BFF principal (member_auth.session), its X-SVC-Publishable-Key and the member's
// X-Member-Session-Id, as the other member-session calls do. Registered inside the Hosted Auth BFF scope
// (member-auth-hosted.ts), whose hook refuses caller-named identities.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf } from '../../auth/bearer-auth.ts';
import type { MemberCaller } from '../../member-auth/member-sessions.ts';
import type { AccountCenter } from '../../member-auth/account-center.ts';
import { CODE_CHALLENGE } from '../../member-auth/hosted-records.ts';
import { MAX_URL } from '../../member-auth/exact-urls.ts';
import { Nullable } from './schema-helpers.ts';

export interface AccountCenterRoutesOptions {
  center: AccountCenter;
  callerOf: (req: FastifyRequest) => Promise<MemberCaller>;
  /** API_PUBLIC_URL: the origin handoff_url is built on; default http://<Host>. */
  publicOrigin?: string | undefined;
  /** Whether email codes can go out (API_SMTP_URL); without, a handoff is 503 unavailable. */
  canMail: boolean;
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };
const TAGS = ['member auth'];
const SECURITY: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const single = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);
const Summary = Type.Object({
  member_id: Type.String(),
  changes: Type.Array(Type.Union([Type.Literal('totp_enrolled'), Type.Literal('totp_removed'), Type.Literal('recovery_codes_generated'), Type.Literal('passkey_enrolled'), Type.Literal('member_action_approved')])),
  factors: Type.Array(Type.Union([
    Type.Object({ type: Type.Literal('totp'), enrolled_at: Type.Union([Type.String(), Type.Null()]) }),
    Type.Object({ type: Type.Literal('passkey'), credential_id: Type.String(), enrolled_at: Type.String() }),
  ])),
  recovery_codes_remaining: Type.Integer(),
  restricted_until: Type.Union([Type.String(), Type.Null()]),
  approval: Nullable(Type.Object({
    action_id: Type.String(),
    credential: Type.String({ description: 'The member credential of the Account Center passkey that answered (a JWT the service signed under the organization\'s Account Center key)' }),
    assertion: Type.Object({ id: Type.String(), authenticator_data: Type.String(), client_data_json: Type.String(), signature: Type.String() }),
  }, { description: 'On an approval visit the member answered: send it as is to POST /v1/member-actions/passkey/complete' })),
});

export const accountCenterRoutes: FastifyPluginAsyncTypebox<AccountCenterRoutesOptions> = async (app, { center, callerOf, publicOrigin, canMail }) => {
  const sessionIdOf = (req: FastifyRequest) => single(req.headers['x-member-session-id']);

  app.post('/account-center/handoffs', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Begin an Account Center handoff for the member of a session: the page URL to send its browser to',
      description: 'Needs the bearer key of the application\'s BFF principal, its X-SVC-Publishable-Key and the hosted member\'s X-Member-Session-Id. '
        + '`return_url` must be exactly a registered redirect URL of the workspace whose origin is the application\'s origin; PKCE S256 only. '
        + 'The handoff is one-use, lives 15 minutes, and carries context only: the member must sign in on the page. '
        + 'With `member_action_id` (an action of this sign-in waiting for its proof, of a tenant with Account Center passkeys on, 409 account_center_opt_in_unregistered otherwise) the visit is an approval: '
        + 'the page shows the action and the member answers its nonce with an Account Center passkey; the exchange then answers `approval`. docs/platform/account-center.md',
      tags: TAGS, security: SECURITY,
      body: Type.Object({
        return_url: Type.String({ minLength: 1, maxLength: MAX_URL }),
        state: Type.String({ minLength: 1, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' }),
        code_challenge: Type.String({ pattern: CODE_CHALLENGE.source }),
        code_challenge_method: Type.Optional(Type.String({ minLength: 1, maxLength: 16 })),
        member_action_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      }, { additionalProperties: false }),
      response: { 201: Type.Object({ id: Type.String(), handoff_url: Type.String(), expires_at: Type.String() }), ...errors },
    },
  }, async (req, reply) => {
    const caller = await callerOf(req);
    if (!canMail) throw new CustodyError('unavailable', 'the Account Center sends sign-in codes by email and no SMTP server is configured (API_SMTP_URL)');
    const origin = publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
    return reply.code(201).send(await center.begin(caller, actorOf(req), sessionIdOf(req), req.body, origin));
  });

  app.post('/account-center/handoffs/exchange', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Exchange the one-time Account Center result for a summary of what changed',
      description: 'Body: the `code` the return URL received, the PKCE `code_verifier`, and the same `return_url`; the same credentials and session family as the handoff. '
        + 'The answer holds no secret: the factors, how many recovery codes are left, restricted_until, the changes made, and on an approval visit the member\'s `approval` (null otherwise, or when the member declined). Another caller or session is 404; a second exchange is 409 account_center_result_replayed.',
      tags: TAGS, security: SECURITY,
      body: Type.Object({
        code: Type.String({ minLength: 1, maxLength: 128 }),
        code_verifier: Type.String({ minLength: 43, maxLength: 128, pattern: '^[A-Za-z0-9._~-]+$' }),
        return_url: Type.String({ minLength: 1, maxLength: MAX_URL }),
      }, { additionalProperties: false }),
      response: { 200: Summary, ...errors },
    },
  }, async (req) => center.exchange(await callerOf(req), actorOf(req), sessionIdOf(req), req.body));
};
