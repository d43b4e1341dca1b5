// Member actions (platform-api.md "Member-auth operations (server-only)", "Fresh human authorization for
// member actions"; docs/platform/member-actions.md): begin, complete with a fresh BYO OIDC proof or with
// the member's passkey, and read a signing session. Server-to-server only, with the credentials of GET /v1/member-auth/session: the
// workspace bearer key, X-SVC-Publishable-Key and X-Member-Session-Id. The member comes from the session,
// never from the caller: the same headers and body fields as on the other member calls are refused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { OutboundHttp } from '../../webhooks/outbound-http.ts';
import { resolvePublishableKey } from '../../member-auth/publishable-keys.ts';
import { MAX_DISCOVERY_BYTES } from '../../member-auth/oidc-discovery.ts';
import { loadExchangeCipher } from '../../member-auth/exchange-cipher.ts';
import { ProofVerifier, MAX_PROOF_BYTES } from '../../member-auth/proof-verifier.ts';
import { MemberSessions, type MemberCaller } from '../../member-auth/member-sessions.ts';
import { MemberActions, type BeginInput } from '../../member-auth/member-actions.ts';
import { checkHostedMemberAuthority } from '../../member-auth/hosted-members.ts';
import { CustomerLinks } from '../../customers/customer-links.ts';
import type { TransactionService } from '../../transactions/transaction-service.ts';
import { REFUSED_FIELDS, REFUSED_HEADERS } from './member-auth.ts';
import { MEMBER_ACTION_BATCH_MAX } from '../../../core/session/member-action-binding.ts';

export interface MemberActionsSetup {
  platform: Platform;
  transactions: TransactionService;
  /** The proof-exchange store's key (as for member-auth.ts): signing sessions seal their proof with it. */
  exchangeKey?: Uint8Array;
  /** API_PUBLIC_URL: the origin signing_url is written under. */
  publicOrigin?: string | undefined;
}

export interface MemberActionRoutesOptions {
  platform: Platform;
  actions: MemberActions;
}

/**
 * The member actions of this server, wired to POST /v1/transactions (which consumes their signing
 * sessions); built once in api/app.ts so payments and escrows can register their batch purposes.
 */
export async function createMemberActions(app: FastifyInstance, o: MemberActionsSetup): Promise<MemberActions> {
  const { platform } = o;
  const http = new OutboundHttp({ policy: platform.endpoints.http.policy, timeoutMs: 10_000, maxResponseBytes: MAX_DISCOVERY_BYTES + 1 });
  app.addHook('onClose', async () => http.close());
  const actions = new MemberActions({
    store: platform.store, audit: platform.audit, sessions: new MemberSessions(platform.store, platform.audit, platform.clock),
    verifier: new ProofVerifier(http, platform.clock), cipher: await loadExchangeCipher(platform.store, o.exchangeKey),
    links: new CustomerLinks(platform.store), transactions: o.transactions, clock: platform.clock, publicOrigin: o.publicOrigin,
  });
  o.transactions.useMemberSigning(actions.signing);
  return actions;
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody, 502: ErrorBody };
const TAGS = ['member auth'];
const SECURITY: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const single = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);
const MAX_INTENT_B64 = Math.ceil(70_000 / 3) * 4;

const Kind = Type.Union([Type.Literal('transaction.sign'), Type.Literal('transaction.sign_batch')]);
const Operation = Type.Object({ kind: Kind, wallet_id: Type.String(), intent_sha256: Type.String(), intents_sha256: Type.Optional(Type.Array(Type.String())) });
const Purpose = Type.Object({ type: Type.Union([Type.Literal('payment'), Type.Literal('escrow')]), id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
const IntentB64 = Type.String({ minLength: 4, maxLength: MAX_INTENT_B64, pattern: '^[A-Za-z0-9+/]+={0,2}$' });

/** The begin body as its kind has it: `intent` for one intent; `intents` (and `purpose`) for a batch. */
function shapeOf(b: { kind: 'transaction.sign' | 'transaction.sign_batch'; wallet_id: string; intent?: string; intents?: string[]; purpose?: { type: 'payment' | 'escrow'; id: string } }): BeginInput {
  const refuse = (msg: string) => new CustodyError('invalid_request', msg);
  if (b.kind === 'transaction.sign') {
    if (b.intents !== undefined || b.purpose !== undefined) throw refuse(`${b.intents !== undefined ? 'intents' : 'purpose'}: for kind transaction.sign_batch; transaction.sign takes one intent`);
    if (b.intent === undefined) throw refuse('intent: required for kind transaction.sign');
    return { kind: b.kind, wallet_id: b.wallet_id, intent: b.intent };
  }
  if (b.intent !== undefined) throw refuse('intent: kind transaction.sign_batch takes `intents`, a list');
  if (b.intents === undefined || b.intents.length === 0) throw refuse(`intents: 1 to ${MEMBER_ACTION_BATCH_MAX} intents for kind transaction.sign_batch`);
  return { kind: b.kind, wallet_id: b.wallet_id, intents: b.intents, purpose: b.purpose };
}

export const memberActionRoutes: FastifyPluginAsyncTypebox<MemberActionRoutesOptions> = async (app, opts) => {
  const { platform, actions } = opts;
  const sessions = new MemberSessions(platform.store, platform.audit, platform.clock);

  // As on the other member calls (member-auth.ts): a caller naming the member gets the one clear code.
  app.addHook('preValidation', async (req) => {
    const named: string[] = REFUSED_HEADERS.filter((h) => req.headers[h] !== undefined);
    const body = req.body;
    if (body && typeof body === 'object' && !Array.isArray(body)) named.push(...REFUSED_FIELDS.filter((f) => Object.hasOwn(body, f)));
    if (named.length) {
      throw new CustodyError('caller_identity_refused', `member calls take the member only from the server-held session (X-Member-Session-Id); refused: ${named.join(', ')}`);
    }
  });

  /** The member's caller; `external` (an ID-token proof) is for the BYO OIDC application only. */
  async function callerOf(req: FastifyRequest, external = false): Promise<MemberCaller> {
    const p = principalOf(req);
    const key = single(req.headers['x-svc-publishable-key']);
    const application = await resolvePublishableKey(platform.store, p, key);
    const caller: MemberCaller = { tenant: p.tenant, workspace: p.workspace, environment: p.environment, principal: p.keyId, publishable_key: key!, application };
    if (application.kind === 'hosted') await refuseRestrictedHosted(caller, req);
    if (external && application.kind !== 'byo_oidc') throw new CustodyError('forbidden', 'member actions with an external proof are for the BYO OIDC application; a Hosted Auth member approves with a passkey (POST /v1/member-actions/passkey/complete)');
    return caller;
  }

  /** A hosted member restricted by lost-all-factor recovery is refused with its own code (hosted-members.ts `checkHostedMemberAuthority`). */
  async function refuseRestrictedHosted(caller: MemberCaller, req: FastifyRequest): Promise<void> {
    const found = await sessions.validate(caller, sessionIdOf(req)).catch(() => undefined);
    if (found) await checkHostedMemberAuthority(platform.store, found.session.member_id, found.family.authenticated_at, platform.clock());
  }
  const sessionIdOf = (req: FastifyRequest) => single(req.headers['x-member-session-id']);

  app.post('/member-actions', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Begin a member action: freeze the exact operation and get the nonce the fresh proof must carry',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id. Body: `kind` `transaction.sign`, `wallet_id` (a wallet of the organization linked to the workspace, of a hosted vault with end-user auth, bound to this member when bound at all) and `intent`, base64 of the exact canonical intent bytes POST /v1/transactions will carry; '
        + 'or `kind` `transaction.sign_batch`, `wallet_id`, `intents` (1 to 8 distinct intents of that wallet, approved at once; the nonce commits to the ordered list of their SHA-256) and optionally `purpose` `{type: payment|escrow, id}`, whose owner checks the intents are exactly what it needs. '
        + 'Answer 201: `status` `pending_proof`, `expires_at` (10 minutes), and `proof`: for a BYO OIDC application send `nonce`, `max_age` and `prompt=login` (and `acr_values`) in the OpenID authentication request; for a passkey approval (either application) `nonce` is the WebAuthn challenge, base64url. '
        + 'The nonce is base64url(SHA-256("custody/member-action/v1" ‖ length-prefixed action id ‖ 32 random bytes ‖ SHA-256(intent))): every signer node recomputes it (docs/platform/member-actions.md). At most 5 pending actions per member (429 member_action_limit).',
      tags: TAGS, security: SECURITY,
      // One object, not a union: a wrong field gets an error naming it (shapeOf below).
      body: Type.Object({
        kind: Kind, wallet_id: Type.String({ minLength: 1, maxLength: 64 }), intent: Type.Optional(IntentB64),
        intents: Type.Optional(Type.Array(IntentB64, { maxItems: MEMBER_ACTION_BATCH_MAX })), purpose: Type.Optional(Purpose),
      }, { additionalProperties: false }),
      response: {
        201: Type.Object({
          id: Type.String(), status: Type.Literal('pending_proof'), kind: Kind, wallet_id: Type.String(), intent_sha256: Type.String(),
          intents_sha256: Type.Optional(Type.Array(Type.String())), purpose: Type.Optional(Purpose), expires_at: Type.String(),
          proof: Type.Object({ nonce: Type.String(), max_age: Type.Optional(Type.Integer()), prompt: Type.Optional(Type.Literal('login')), acr_values: Type.Optional(Type.String()), required_amr: Type.Optional(Type.Array(Type.String())) }),
        }),
        ...errors,
      },
    },
  }, async (req, reply) => reply.code(201).send(await actions.begin(await callerOf(req), actorOf(req), sessionIdOf(req), shapeOf(req.body))));

  app.post('/member-actions/external/complete', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Complete a member action with a fresh BYO OIDC proof and get its single-use signing session',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id. Body: `action_id` and `id_token`, the provider\'s ID token for the action\'s nonce. '
        + 'The proof is verified as the exchange verifies one (issuer, audience, JWKS, signature, ACR, AMR) and must carry the action\'s nonce, the member\'s subject and an auth_time within max_proof_age_sec (and 600 s); it is accepted once. '
        + 'The nodes\' own check runs too, against the organization\'s end-user-auth registration (403 member_proof_not_signable). '
        + 'Answer 200: `signing_session` `{id, signing_url, expires_at}`. Pass `id` as `member_signing_session` to POST /v1/transactions. `signing_url` is only a locator of the session\'s status: not bearer authority, not a member session.',
      tags: TAGS, security: SECURITY,
      body: Type.Object({
        action_id: Type.String({ minLength: 1, maxLength: 64 }),
        id_token: Type.String({ minLength: 1, maxLength: MAX_PROOF_BYTES }),
      }, { additionalProperties: false }),
      response: {
        200: Type.Object({ id: Type.String(), status: Type.Literal('completed'), signing_session: Type.Object({ id: Type.String(), signing_url: Type.String(), expires_at: Type.String() }) }),
        ...errors,
      },
    },
  }, async (req) => actions.complete(await callerOf(req, true), actorOf(req), sessionIdOf(req), req.body.action_id, req.body.id_token));

  const B64URL = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: '^[A-Za-z0-9_-]+$' });
  app.post('/member-actions/passkey/complete', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Complete a member action with the member\'s passkey and get its single-use signing session',
      description: 'Needs X-SVC-Publishable-Key and X-Member-Session-Id (BYO OIDC or Hosted Auth application). Body: `action_id`; `credential`, the member credential the customer signed for this passkey (a JWT of typ member-credential+jwt under its end-user-auth JWK Set); '
        + '`assertion`, the browser\'s answer to navigator.credentials.get with the action\'s nonce as challenge: `id`, `authenticator_data`, `client_data_json`, `signature`, base64url. '
        + 'The API runs the signer nodes\' check (403 member_proof_not_signable with the reason) and the credential must name the member (403 member_subject_mismatch). '
        + 'Answer 200 as external/complete (docs/platform/member-actions.md "Passkey proofs").',
      tags: TAGS, security: SECURITY,
      body: Type.Object({
        action_id: Type.String({ minLength: 1, maxLength: 64 }),
        credential: Type.String({ minLength: 1, maxLength: MAX_PROOF_BYTES }),
        assertion: Type.Object({
          id: B64URL(1364), authenticator_data: B64URL(1366), client_data_json: B64URL(2731), signature: B64URL(683),
        }, { additionalProperties: false }),
      }, { additionalProperties: false }),
      response: {
        200: Type.Object({ id: Type.String(), status: Type.Literal('completed'), signing_session: Type.Object({ id: Type.String(), signing_url: Type.String(), expires_at: Type.String() }) }),
        ...errors,
      },
    },
  }, async (req) => actions.completePasskey(await callerOf(req), actorOf(req), sessionIdOf(req), req.body.action_id, req.body.credential, req.body.assertion));

  app.get('/member-actions/signing-sessions/:id', {
    config: { permission: 'member_auth.session' },
    schema: {
      summary: 'Read a member signing session: its status and the frozen operation',
      description: 'The target of `signing_url`, with the same BFF credentials (bearer, X-SVC-Publishable-Key, X-Member-Session-Id of the same sign-in). It carries no authority: reading it signs nothing.',
      tags: TAGS, security: [{ bearer: [] }],
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }),
      response: {
        200: Type.Object({
          status: Type.Union([Type.Literal('active'), Type.Literal('used'), Type.Literal('expired'), Type.Literal('revoked')]), expires_at: Type.String(), action_id: Type.String(),
          operation: Operation, transaction_id: Type.Union([Type.String(), Type.Null()]), transaction_ids: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Null()]))),
        }),
        ...errors,
      },
    },
  }, async (req) => actions.signingSession(await callerOf(req), sessionIdOf(req), req.params.id));
};
