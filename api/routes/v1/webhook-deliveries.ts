// Webhook deliveries: list (filters status and endpoint_id), read, replay and bulk replay
// (docs/platform/webhooks.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { Page, PageQuery, DEFAULT_LIMIT } from '../../store/pagination.ts';
import type { DeliveryRecord } from '../../webhooks/delivery-engine.ts';
import { publicDeliveryError } from '../../webhooks/outbound-http.ts';

const Status = Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed'), Type.Literal('dlq')]);
const Nullable = <T extends TSchema>(s: T) => Type.Union([Type.Null(), s]);
const Delivery = Type.Object({
  id: Type.String(), endpoint_id: Type.String(), event_id: Type.String(), event_type: Type.String(), status: Status, attempt_count: Type.Integer(),
  last_status_code: Nullable(Type.Integer()), last_response_body: Nullable(Type.String()), last_error: Nullable(Type.String()), next_retry_at: Nullable(Type.String()),
  delivered_at: Nullable(Type.String()), correlation_id: Type.String(), created_at: Type.String(), updated_at: Type.String(),
  payload: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };

function view(d: DeliveryRecord, withPayload: boolean) {
  const { tenant: _t, workspace: _w, queue_key: _q, payload, ...fields } = d;
  const rest = { ...fields, last_error: publicDeliveryError(fields.last_error) };
  return withPayload ? { ...rest, payload: payload as unknown as Record<string, unknown> } : rest;
}

export const webhookDeliveryRoutes: FastifyPluginAsyncTypebox<{ platform: Platform }> = async (app, { platform }) => {
  const engine = platform.deliveries;

  app.get('/webhook-deliveries', {
    config: { permission: 'webhook.read' },
    schema: { summary: 'Webhook deliveries, a page at a time, filtered by status and endpoint', tags: ['webhooks'], security: [{ bearer: [] }], querystring: Type.Object({ ...PageQuery, status: Type.Optional(Status), endpoint_id: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: false }), response: { 200: Page(Delivery), ...errors } },
  }, async (req) => {
    const page = await engine.list(scopeOf(req), { status: req.query.status, endpoint_id: req.query.endpoint_id }, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT);
    return { ...page, data: page.data.map((d) => view(d, false)) };
  });

  app.get('/webhook-deliveries/:id', {
    config: { permission: 'webhook.read' },
    schema: { summary: 'Read a webhook delivery, with its payload', tags: ['webhooks'], security: [{ bearer: [] }], params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: Delivery, ...errors } },
  }, async (req) => view(await engine.get(scopeOf(req), req.params.id), true));

  app.post('/webhook-deliveries/:id/replay', {
    config: { permission: 'webhook.replay' },
    schema: { summary: 'Queue a webhook delivery to be sent again', tags: ['webhooks'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: Delivery, ...errors } },
  }, async (req) => view(await engine.replay(scopeOf(req), req.params.id), true));

  app.post('/webhook-deliveries/bulk-replay', {
    config: { permission: 'webhook.replay' },
    schema: {
      summary: 'Queue up to 100 webhook deliveries to be sent again',
      tags: ['webhooks'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }],
      body: Type.Object({ delivery_ids: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 100 }) }, { additionalProperties: false }),
      response: { 200: Type.Object({ data: Type.Array(Delivery), replayed_count: Type.Integer(), skipped_count: Type.Integer() }), ...errors },
    },
  }, async (req) => {
    const r = await engine.bulkReplay(scopeOf(req), req.body.delivery_ids);
    return { ...r, data: r.data.map((d) => view(d, false)) };
  });
};
