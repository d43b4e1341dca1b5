// One error shape everywhere: { "error": "<human message>", "code": "<stable slug>" }. Route code throws
// ApiError; Fastify's own validation and parsing errors are mapped here too.
import type { FastifyError, FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';

export const ErrorBody = Type.Object({ error: Type.String(), code: Type.String() }, { $id: 'Error' });

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ error: `no route ${req.method} ${req.url.split('?')[0]}`, code: 'not_found' });
  });
  app.setErrorHandler((err: FastifyError | ApiError, req, reply) => {
    if (err instanceof ApiError) return reply.code(err.status).send({ error: err.message, code: err.code });
    if ('validation' in err && err.validation) {
      return reply.code(400).send({ error: `${err.validationContext ?? 'request'} ${err.message.replace(/^(body|querystring|params|headers)\/?\s*/, '')}`.trim(), code: 'invalid_request' });
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : status === 429 ? 'rate_limited' : 'invalid_request';
      return reply.code(status).send({ error: err.message, code });
    }
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ error: 'internal error', code: 'internal' });
  });
}
