// JSON bodies parsed from the exact bytes received, which are kept on the request: request signatures
// and content digests are checked over those bytes, never over a re-serialization.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer;
  }
}

export function parseJsonKeepingRawBody(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body: Buffer, done) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    try {
      done(null, JSON.parse(body.toString('utf8')));
    } catch {
      done(new ApiError(400, 'invalid_request', 'body is not valid JSON'), undefined);
    }
  });
}
