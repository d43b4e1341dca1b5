// Webhook endpoints, the event catalog, MFA verification and the published webhook verification key
// (docs/platform/webhooks.md). Authentication and permissions are checked by the bearer-auth hook.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { Page, PageQuery, DEFAULT_LIMIT } from '../../store/pagination.ts';
import { EVENT_TYPES } from '../../webhooks/event-catalog.ts';
import { MAX_URL } from '../../webhooks/webhook-endpoints.ts';
import { MFA_ACTION_PATTERN } from '../../tenancy/mfa-tokens.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { secretFingerprint } from '../../webhooks/webhook-signing.ts';

const Endpoint = Type.Object({
  id: Type.String(), url: Type.String(), events: Type.Array(Type.String()), description: Type.Union([Type.String(), Type.Null()]), enabled: Type.Boolean(),
  created_at: Type.String(), updated_at: Type.String(),
  hmac_secret_fingerprint: Type.Optional(Type.String()),
  previous_hmac_secret_fingerprint: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  previous_hmac_secret_expires_at: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
const EndpointWithSecret = Type.Intersect([Endpoint, Type.Object({ secret: Type.String() })]);
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 });
const Description = Type.String({ maxLength: 500 });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };
const EventTypeSchema = Type.Object({
  name: Type.String(), domain: Type.String(), version: Type.Integer(), sensitive: Type.Boolean(), description: Type.String(),
  example_payload: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])), deprecated_at: Type.Union([Type.String(), Type.Null()]),
});

const idempotencyKey = idempotencyKeyOf;

/** What an Idempotency-Key keeps of an endpoint creation: never the secret. */
interface CreatedEndpoint { id: string; secret_fingerprint: string }

export const webhookEndpointRoutes: FastifyPluginAsyncTypebox<{ platform: Platform }> = async (app, { platform }) => {
  const ep = platform.endpoints;
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);

  app.get('/webhook-endpoints', {
    config: { permission: 'webhook.read' },
    schema: { summary: 'The workspace\'s webhook endpoints, a page at a time (never a secret)', tags: ['webhooks'], security: [{ bearer: [] }], querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Endpoint), ...errors } },
  }, async (req) => ep.list(scopeOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/webhook-endpoints', {
    config: { permission: 'webhook.create' },
    schema: {
      summary: 'Create a webhook endpoint; its signing secret is answered here once',
      description: 'An `Idempotency-Key` with the same body, within the idempotency window (24 h by default), returns the same endpoint and secret with `Idempotent-Replayed: true`, or 409 idempotency_secret_rotated once the secret has been rotated; with another body, 409 idempotency_key_reused (docs/platform/webhooks.md).',
      tags: ['webhooks'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }],
      body: Type.Object({ url: Type.String({ minLength: 1, maxLength: MAX_URL * 4 }), events: Events, description: Type.Optional(Description) }, { additionalProperties: false }),
      response: { 201: EndpointWithSecret, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    // The record keeps the endpoint id and the secret's fingerprint, never the secret: a replay answers
    // the endpoint's secret while it is still the one created, and 409 once it has been rotated.
    let secret: string | undefined;
    const made = await idempotent.run(scope.workspace, 'create_endpoint', idempotencyKey(req), req.body, async (): Promise<CreatedEndpoint> => {
      const r = await ep.create(scope, actorOf(req), req.body);
      secret = r.secret;
      return { id: r.endpoint.id, secret_fingerprint: secretFingerprint(r.secret) };
    });
    const endpoint = await ep.get(scope, made.id);
    if (secret === undefined) {
      if (typeof made.secret_fingerprint !== 'string' || secretFingerprint(endpoint.secret) !== made.secret_fingerprint) {
        throw new CustodyError('idempotency_secret_rotated', 'the endpoint this Idempotency-Key created has had its secret rotated since; its old secret is not answered again (read the endpoint, or rotate to get a new secret)');
      }
      secret = endpoint.secret;
    }
    return reply.code(201).send({ ...ep.view(endpoint, true), secret });
  });

  app.get('/webhook-endpoints/:id', {
    config: { permission: 'webhook.read' },
    schema: { summary: 'Read a webhook endpoint, with its secret fingerprints', tags: ['webhooks'], security: [{ bearer: [] }], params: IdParam, response: { 200: Endpoint, ...errors } },
  }, async (req) => ep.view(await ep.get(scopeOf(req), req.params.id), true));

  app.patch('/webhook-endpoints/:id', {
    config: { permission: 'webhook.update' },
    schema: {
      summary: 'Change a webhook endpoint\'s URL, events, description or enabled flag',
      tags: ['webhooks'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }],
      params: IdParam,
      body: Type.Optional(Type.Object({ url: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_URL * 4 })), events: Type.Optional(Events), description: Type.Optional(Type.Union([Type.Null(), Description])), enabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false })),
      response: { 200: Endpoint, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const before = await ep.get(scope, req.params.id);
    const after = await ep.patch(scope, actorOf(req), req.params.id, req.body ?? {});
    if (before.enabled && !after.enabled) {
      await platform.deliveries.emit(scope, 'webhook.endpoint.disabled', { type: 'webhook_endpoint', id: after.id }, actorOf(req), { endpoint_id: after.id, enabled: false, reason: 'requested' });
    }
    return ep.view(after, true);
  });

  app.post('/webhook-endpoints/:id/rotate', {
    config: { permission: 'webhook.rotate', mfa: 'rotate_secret' },
    schema: {
      summary: 'Rotate a webhook endpoint\'s secret, the old one still valid for an overlap; the new one is answered once',
      description: 'Needs `SVC-MFA-Token`, a one-use proof issued for `rotate_secret:<this id>` by POST /v1/mfa/verifications.',
      tags: ['webhooks'], security: [{ bearer: [], mfaToken: [] }, { bearer: [], httpSignature: [], mfaToken: [] }],
      params: IdParam,
      body: Type.Optional(Type.Object({ overlap_sec: Type.Optional(Type.Integer({ minimum: 60, maximum: 2_592_000 })) }, { additionalProperties: false })),
      response: { 200: EndpointWithSecret, ...errors },
    },
  }, async (req) => {
    const { endpoint, secret } = await ep.rotate(scopeOf(req), actorOf(req), req.params.id, req.body?.overlap_sec ?? 86_400);
    await platform.deliveries.emit(scopeOf(req), 'webhook.secret.rotated', { type: 'webhook_endpoint', id: endpoint.id }, actorOf(req), { endpoint_id: endpoint.id, previous_valid_until: endpoint.previous_secret_expires_at ?? '' });
    return { ...ep.view(endpoint, true), secret };
  });

  app.post('/webhook-endpoints/:id/test', {
    config: { permission: 'webhook.test' },
    schema: {
      summary: 'Send a signed webhook.test event to the endpoint now and report how it answered',
      tags: ['webhooks'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }],
      params: IdParam,
      response: { 200: Type.Object({ delivered: Type.Boolean(), status_code: Type.Union([Type.Integer(), Type.Null()]), duration_ms: Type.Integer(), error: Type.Union([Type.String(), Type.Null()]) }), ...errors },
    },
  }, async (req) => ep.test(scopeOf(req), actorOf(req), req.params.id, idempotencyKey(req)));

  app.delete('/webhook-endpoints/:id', {
    config: { permission: 'webhook.delete' },
    schema: { summary: 'Delete a webhook endpoint; its deliveries stay readable', tags: ['webhooks'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], params: IdParam, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    await ep.remove(scopeOf(req), actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  app.get('/webhook-event-types', {
    config: { permission: 'webhook.read' },
    schema: { summary: 'The catalog of webhook event types, with example payloads', tags: ['webhooks'], security: [{ bearer: [] }], response: { 200: Type.Object({ data: Type.Array(EventTypeSchema) }), ...errors } },
  }, async () => ({ data: [...EVENT_TYPES] }));

  app.post('/mfa/verifications', {
    schema: {
      summary: 'Check a TOTP code and issue a one-use MFA proof for one action, sent as SVC-MFA-Token',
      tags: ['mfa'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }],
      body: Type.Object({ code: Type.String({ maxLength: 16 }), action: Type.String({ maxLength: 100, pattern: MFA_ACTION_PATTERN }) }, { additionalProperties: false }),
      response: { 201: Type.Object({ mfa_token: Type.String(), action: Type.String(), verified_at: Type.String(), expires_at: Type.String() }), ...errors },
    },
  }, async (req, reply) => {
    const p = principalOf(req);
    const now = Math.floor(platform.clock() / 1000);
    if (!(await platform.tenancy.checkTotp(p.keyId, req.body.code, now))) throw new CustodyError('mfa_failed', 'the verification code is wrong, expired or already used, or this key has no MFA factor');
    const t = platform.mfa.issue(p.keyId, req.body.action, now);
    return reply.code(201).send({ mfa_token: t.token, action: t.action, verified_at: t.verified_at, expires_at: t.expires_at });
  });

  app.get('/public/webhook-signing-key', {
    config: { public: true },
    schema: { summary: 'The Ed25519 public key webhook deliveries are signed with', tags: ['webhooks'], security: [], response: { 200: Type.Object({ algorithm: Type.Literal('ed25519'), public_key: Type.String(), public_key_hex: Type.String() }) } },
  }, async () => ({ algorithm: 'ed25519' as const, public_key: `whpk_${Buffer.from(platform.keys.webhookPublicKey).toString('base64')}`, public_key_hex: Buffer.from(platform.keys.webhookPublicKey).toString('hex') }));
};
