// Integration gateways (docs/platform/gateways.md): the 8 operations of the `platform` area, with a
// workspace bearer key (gateway.read, gateway.manage), and the callback route gateways POST to, which a
// gateway's own signature authenticates. Production changes are request-signed by the bearer-auth hook.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { MAX_URL } from '../../webhooks/webhook-endpoints.ts';
import type { GatewayService } from '../../gateways/gateway-service.ts';
import { GATEWAY_EVENT_TYPES, GATEWAY_STATUSES, type GatewayStatus } from '../../gateways/gateway-records.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['integration gateways'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };

const Pin = Type.String({ minLength: 44, maxLength: 44, description: 'base64 SHA-256 of the certificate\'s DER SubjectPublicKeyInfo (RFC 7469 pin-sha256)' });
const Gateway = Type.Object({
  id: Type.String(), environment: literals(['sandbox', 'production'] as const), name: Type.String(), base_url: Type.String(), currencies: Type.Array(Type.String()),
  callback_public_key: Type.String({ description: 'Ed25519 public key (hex) the gateway signs callbacks with; keyid is the gateway\'s id' }),
  status: literals(GATEWAY_STATUSES),
  pins: Nullable(Type.Object({ current: Type.String(), next: Nullable(Type.String()), pinned_at: Type.String() })),
  conformance: Nullable(Type.Object({ run_id: Type.String(), suite_version: Type.Integer(), base_url: Type.String(), passed: Type.Boolean(), finished_at: Type.String() })),
  serving: Type.Boolean({ description: 'whether new transfers of the workspace go to this gateway now' }),
  not_serving_reason: Nullable(Type.String()),
  suite_version: Type.Integer({ description: 'the current conformance suite version' }),
  callback_url: Type.String({ description: 'where the gateway POSTs its callbacks' }),
  service_key: Type.Object({ keyid: Type.String(), algorithm: Type.Literal('ed25519'), public_key: Type.String({ description: 'hex' }) }, { description: 'the key the service signs its requests to the gateway with' }),
  created_at: Type.String(), updated_at: Type.String(),
});
const Run = Type.Object({
  id: Type.String(), gateway_id: Type.String(), suite_version: Type.Integer(), base_url: Type.String(), passed: Type.Boolean(),
  checks: Type.Array(Type.Object({ name: Type.String(), passed: Type.Boolean(), detail: Type.String() })), started_at: Type.String(), finished_at: Type.String(),
});
const Event = Type.Object({
  id: Type.String(), gateway_id: Type.String(), type: literals(GATEWAY_EVENT_TYPES),
  data: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  actor: Type.Object({ type: Type.String(), id: Type.String() }), created_at: Type.String(),
});
const Name = Type.String({ minLength: 1, maxLength: 120 });
const BaseUrl = Type.String({ minLength: 1, maxLength: MAX_URL });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const integrationGatewayRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; gateways: GatewayService; publicOrigin?: string | undefined; now: () => number }> = async (app, { platform, gateways, now }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const scoped = (req: FastifyRequest) => ({ ...scopeOf(req), environment: principalOf(req).environment });

  app.get('/integration-gateways', {
    config: { permission: 'gateway.read' },
    schema: { summary: 'The workspace\'s integration gateways, oldest first, a page at a time', tags: TAGS, security: read, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Gateway), ...errors } },
  }, async (req) => gateways.list(scopeOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/integration-gateways', {
    config: { permission: 'gateway.manage' },
    schema: {
      summary: 'Register an integration gateway: a payment rail of the workspace reached over HTTPS; created suspended',
      description: 'An `Idempotency-Key` with the same body answers the same gateway; with another body, 409 idempotency_key_reused (docs/platform/gateways.md).',
      tags: TAGS, security: change,
      body: Type.Object({
        name: Name, base_url: BaseUrl,
        callback_public_key: Type.String({ minLength: 64, maxLength: 64, description: 'Ed25519 public key, 64 lower-case hex digits' }),
        currencies: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z]{3}$' }), { minItems: 1, maxItems: 10 })),
      }, { additionalProperties: false }),
      response: { 201: Gateway, ...errors },
    },
  }, async (req, reply) => {
    const scope = scoped(req);
    const made = await idempotent.run(scope.workspace, 'create_integration_gateway', idempotencyKeyOf(req), req.body, async () => ({ id: (await gateways.create(scope, actorOf(req), req.body)).id }));
    return reply.code(201).send(gateways.view(await gateways.get(scope, made.id)));
  });

  app.get('/integration-gateways/:id', {
    config: { permission: 'gateway.read' },
    schema: { summary: 'Read an integration gateway: status, pins, latest conformance run, whether it serves', tags: TAGS, security: read, params: IdParam, response: { 200: Gateway, ...errors } },
  }, async (req) => gateways.view(await gateways.get(scopeOf(req), req.params.id)));

  app.patch('/integration-gateways/:id', {
    config: { permission: 'gateway.manage' },
    schema: {
      summary: 'Change an integration gateway\'s name or base_url (base_url only while it is not active)',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Optional(Type.Object({ name: Type.Optional(Name), base_url: Type.Optional(BaseUrl) }, { additionalProperties: false })),
      response: { 200: Gateway, ...errors },
    },
  }, async (req) => gateways.view(await gateways.patch(scopeOf(req), actorOf(req), req.params.id, req.body ?? {})));

  app.post('/integration-gateways/:id/conformance', {
    config: { permission: 'gateway.manage' },
    schema: {
      summary: 'Run the conformance suite against the gateway\'s base_url in sandbox mode and answer the run',
      description: 'Each check\'s result is recorded; a production gateway serves only after a passing run of the current suite version. An `Idempotency-Key` answers the same run again.',
      tags: TAGS, security: change, params: IdParam, response: { 201: Run, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const run = await idempotent.run(scope.workspace, `gateway_conformance:${req.params.id}`, idempotencyKeyOf(req), {}, async () => {
      const { v: _v, tenant: _t, workspace: _w, ...r } = await gateways.conformance(scope, actorOf(req), req.params.id);
      return r;
    });
    return reply.code(201).send(run);
  });

  app.post('/integration-gateways/:id/pin-cert', {
    config: { permission: 'gateway.manage' },
    schema: {
      summary: 'Pin the gateway\'s TLS public key (SPKI SHA-256): the current key and, during a rotation, the next',
      description: 'Every call then checks the key the gateway presents; any other fails closed (certificate_mismatch in the history) and is never sent.',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ current: Pin, next: Type.Optional(Nullable(Pin)) }, { additionalProperties: false }),
      response: { 200: Gateway, ...errors },
    },
  }, async (req) => gateways.view(await gateways.pin(scopeOf(req), actorOf(req), req.params.id, req.body)));

  app.post('/integration-gateways/:id/status', {
    config: { permission: 'gateway.manage' },
    schema: {
      summary: 'Set the gateway active, suspended or disabled (what each does to in-flight transfers: docs/platform/gateways.md)',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ status: literals(GATEWAY_STATUSES) }, { additionalProperties: false }),
      response: { 200: Gateway, ...errors },
    },
  }, async (req) => gateways.view(await gateways.setStatus(scopeOf(req), actorOf(req), req.params.id, req.body.status as GatewayStatus)));

  app.get('/integration-gateways/:id/events', {
    config: { permission: 'gateway.read' },
    schema: {
      summary: 'The gateway\'s history, oldest first: creation, changes, status, pins, conformance runs, call failures and refused callbacks',
      tags: TAGS, security: read, params: IdParam, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(Event), ...errors },
    },
  }, async (req) => gateways.events(scopeOf(req), req.params.id, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  // Not a customer operation: the gateway's side of the protocol (docs/platform/gateways.md "Callbacks").
  app.post('/gateway-callbacks/:id', {
    config: { public: true },
    schema: {
      summary: 'A gateway\'s callback: a transfer settled, failed or was returned (signed by the gateway\'s registered key)',
      tags: TAGS, security: [], params: IdParam,
      response: { 200: Type.Object({ received: Type.Boolean() }), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 422: ErrorBody, 503: ErrorBody },
    },
  }, async (req) => {
    await gateways.receiveCallback(req.params.id, { method: req.method, url: gateways.callbackUrl(req.params.id), headers: req.headers as Record<string, string | string[] | undefined>, body: req.rawBody ?? Buffer.alloc(0) }, now());
    return { received: true };
  });
};
