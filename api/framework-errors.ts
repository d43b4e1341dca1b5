// Errors raised by Fastify itself, or by Node's HTTP parser before Fastify sees a request, answered in
// the one error model (docs/platform/errors.md): `{ error, code }` with our own words. A framework's
// error code (`FST_ERR_…`) or message never reaches a client: it says which library answers, and its
// text may echo the request back.
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface MappedError { status: number; body: { error: string; code: string } }

/** A path parameter is never longer than this: a longer one reaches its route (authenticated first) as an unknown id. */
export const MAX_PARAM_LENGTH = 8192;

/**
 * The answer for a Fastify error by its `FST_ERR_…` code, or undefined for an error that is not
 * Fastify's. `bodyLimit` is the configured body limit, named in the message.
 */
export function mapFrameworkError(err: { code?: unknown; statusCode?: unknown }, bodyLimit: number): MappedError | undefined {
  const code = typeof err.code === 'string' ? err.code : '';
  if (!code.startsWith('FST_')) return undefined;
  const bad = (error: string) => ({ status: 400, body: { error, code: 'invalid_request' } });
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return { status: 413, body: { error: `the body is larger than ${bodyLimit} bytes`, code: 'payload_too_large' } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return { status: 415, body: { error: 'the body\'s Content-Type is not accepted here (send application/json)', code: 'unsupported_media_type' } };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return bad('the body\'s length does not match its Content-Length');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return bad('the body is empty while its Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return bad('body is not valid JSON');
    case 'FST_ERR_BAD_URL': case 'FST_ERR_INVALID_URL': return bad('the request path is not a valid URL (bad percent-encoding)');
    case 'FST_ERR_MAX_PARAM_LENGTH': return bad(`a path parameter is longer than ${MAX_PARAM_LENGTH} characters`);
    case 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE': return bad('the request has a body but no Content-Type');
    case 'FST_ERR_ROUTE_MISSING_CONTENT': return bad('the request needs a body');
    case 'FST_ERR_NOT_FOUND': return { status: 404, body: { error: 'no such route', code: 'not_found' } };
    case 'FST_ERR_VALIDATION': return bad('the request does not match the operation\'s schema');
    default: {
      const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
      if (status >= 400 && status < 500) return bad('the request could not be read');
      return { status: 500, body: { error: 'internal error', code: 'internal' } };
    }
  }
}

/** Fastify's `frameworkErrors` option: errors raised while routing (bad URL, over-long parameter). */
export function frameworkErrorsHandler(bodyLimit: number) {
  return (err: Error & { code?: string; statusCode?: number }, _req: FastifyRequest, reply: FastifyReply): void => {
    const mapped = mapFrameworkError(err, bodyLimit) ?? { status: 400, body: { error: 'the request could not be read', code: 'invalid_request' } };
    void reply.code(mapped.status).send(mapped.body);
  };
}

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the request (headers too large, a request
 * line it cannot parse, a timeout). There is no request object, so the answer is written to the socket.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, body] = err.code === 'HPE_HEADER_OVERFLOW'
    ? [431, 'Request Header Fields Too Large', { error: 'the request headers are too large', code: 'headers_too_large' }]
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', { error: 'the request was not received in time', code: 'request_timeout' }]
      : [400, 'Bad Request', { error: 'the request is not valid HTTP', code: 'invalid_request' }];
  const text = JSON.stringify(body);
  if (socket.writable) socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${text}`);
  socket.destroy(err);
}
