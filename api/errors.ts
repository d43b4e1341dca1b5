// One error shape everywhere: { "error": "<human message>", "code": "<stable slug>", "request_id": "<id>" }
// (`request_id` added as the answer leaves, errorBodyWithRequestId below). Services and routes
// throw a CustodyError (core/errors/custody-error.ts) with a registered code and never choose a status:
// this is the one place an error becomes an HTTP status, through the table in core/errors/http-status.ts
// (one status per kind, a few codes more exact). Fastify's own validation and parsing errors are mapped
// here too; anything else is an internal error whose text is logged, never answered.
import type { FastifyError, FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../core/errors/custody-error.ts';
import { httpStatusOfCode } from '../core/errors/http-status.ts';
import { FieldValidationError, SchemaValidationError, fieldOfPointer, type FieldError } from './validation.ts';
import { mapFrameworkError } from './framework-errors.ts';

export { HTTP_STATUS_BY_CODE, HTTP_STATUS_BY_KIND } from '../core/errors/http-status.ts';

/**
 * `fields` names every rejected field of a 400 invalid_request schema violation or a 422 validation_failed
 * (docs/platform/errors.md). `request_id` is optional here only because it is added after serialization
 * (errorBodyWithRequestId): every error answer of both APIs carries it.
 */
export const ErrorBody = Type.Object({
  error: Type.String(), code: Type.String(),
  fields: Type.Optional(Type.Array(Type.Object({ field: Type.String(), reason: Type.String() }))),
  request_id: Type.Optional(Type.String({ description: 'The id the API logged the request under, the same as the X-Request-Id header: quote it when reporting a problem' })),
}, { $id: 'Error' });

/**
 * The error answer's JSON text with the request's id as `request_id` (the X-Request-Id header's value),
 * so an error copied from a log or a screen without its headers still names its request. Anything that is
 * not an error body of this API (another JSON value, text, a stream) is returned as it is. An answer
 * replayed under an Idempotency-Key gets this request's id, which is the one its log lines carry.
 */
export function errorBodyWithRequestId(payload: unknown, requestId: string): unknown {
  if (typeof payload !== 'string' || !payload.startsWith('{')) return payload;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  const b = body as { error?: unknown; code?: unknown };
  if (typeof b.error !== 'string' || typeof b.code !== 'string') return payload;
  return JSON.stringify({ ...b, request_id: requestId });
}

/** The status a CustodyError is answered with. */
export function httpStatusOf(err: CustodyError): number {
  return httpStatusOfCode(err.code);
}

const INTERNAL = { error: 'internal error', code: 'internal' } as const;

/**
 * A 5xx answer says what failed in words and by its code, never where: an adapter's or client's message
 * may carry an internal endpoint (a URL, a host and port, an address), which goes to the log only.
 */
export function publicMessage(message: string): string {
  return message
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s'"]+/gi, '[internal endpoint]')
    .replace(/\[[0-9a-f:.]+\](:\d+)?/gi, '[internal endpoint]')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g, '[internal endpoint]')
    .replace(/\b[a-z0-9-]+(\.[a-z0-9-]+)+:\d{2,5}\b/gi, '[internal endpoint]');
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ error: `no route ${req.method} ${req.url.split('?')[0]}`, code: 'not_found' });
  });
  app.setErrorHandler((err: FastifyError | CustodyError, req, reply) => {
    if (!(err instanceof Error)) {
      // A thrown string or object: a bug of ours, never echoed.
      req.log.error({ err }, 'unhandled non-error throw');
      return reply.code(500).send(INTERNAL);
    }
    if (err instanceof CustodyError) {
      if (err.kind === 'bug') {
        req.log.error({ err }, 'internal error');
        return reply.code(500).send(INTERNAL);
      }
      const status = httpStatusOf(err);
      if (status >= 500) req.log.warn({ err }, 'dependency error');
      const message = status >= 500 ? publicMessage(err.message) : err.message;
      return reply.code(status).send({ error: message, code: err.code, ...(err instanceof FieldValidationError || err instanceof SchemaValidationError ? { fields: err.fields } : {}) });
    }
    if ('validation' in err && err.validation) {
      // A route outside both APIs validated by Fastify's ajv: the same shape, every field by its JSON name.
      const seen = new Map<string, string>();
      for (const v of err.validation) {
        const missing = (v.params as { missingProperty?: string; additionalProperty?: string }).missingProperty ?? (v.params as { additionalProperty?: string }).additionalProperty;
        const field = fieldOfPointer(missing !== undefined ? `${v.instancePath}/${missing}` : v.instancePath, err.validationContext);
        if (!seen.has(field)) seen.set(field, v.message ?? v.keyword);
      }
      const fields: FieldError[] = [...seen].map(([field, reason]) => ({ field, reason }));
      return reply.code(400).send({ error: fields.map((f) => `${f.field}: ${f.reason}`).join('; ') || 'invalid request', code: 'invalid_request', fields });
    }
    // Fastify's own errors (FST_ERR_…) in our words (api/framework-errors.ts); its code and text never leave.
    const framework = mapFrameworkError(err, app.initialConfig.bodyLimit ?? 1048576);
    if (framework) {
      if (framework.status >= 500) req.log.error({ err }, 'framework error');
      return reply.code(framework.status).send(framework.body);
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Another library's client error: its status kept, its message (which may echo the request) not.
      const code = status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : status === 429 ? 'rate_limited' : status === 404 ? 'not_found' : 'invalid_request';
      req.log.info({ err }, 'client error');
      return reply.code(status).send({ error: status === 404 ? 'not found' : 'the request could not be processed', code });
    }
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send(INTERNAL);
  });
}
