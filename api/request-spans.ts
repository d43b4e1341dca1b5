// The server span of each request, with tracing on (docs/operations.md "Traces"): started with the
// request id (request-trace-id.ts), made the active context of the request's hooks, handler and body
// stream, so that what the request calls (gRPC, PostgreSQL, fetch) joins its trace, and ended with the
// route and status. With tracing off no request has a span and the hooks do nothing.
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { requestSpan } from './request-trace-id.ts';

export function installRequestSpans(app: FastifyInstance): void {
  app.addHook('onRequest', (req, _reply, done) => {
    const span = requestSpan(req.raw);
    if (!span) return done();
    const ctx = trace.setSpan(context.active(), span);
    // The body arrives in the stream's events, outside the hook's async context.
    context.bind(ctx, req.raw);
    context.with(ctx, done);
  });
  app.addHook('onResponse', async (req, reply) => {
    const span = requestSpan(req.raw);
    if (!span) return;
    const route = req.routeOptions.url;
    if (route) {
      span.setAttribute('http.route', route);
      span.updateName(`${req.method} ${route}`);
    }
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  app.addHook('onRequestAbort', async (req) => {
    const span = requestSpan(req.raw);
    if (!span) return;
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'aborted by the client' });
    span.end();
  });
}
