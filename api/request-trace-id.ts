// The request id is the W3C trace id of the request's trace (docs/operations.md "Traces";
// https://www.w3.org/TR/trace-context/#traceparent-header): taken from a well-formed incoming
// `traceparent` (a trace id is not a secret, and accepting it joins the caller's trace), else new.
// With tracing on, it is the trace id of the request's server span, started here (request-spans.ts
// ends it); with tracing off the same rules give the same shape of id, and no span is made.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, type Span } from '@opentelemetry/api';
import { tracer } from '../common/tracing/spans.ts';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE_ID = '0'.repeat(32);

/** The trace id a `traceparent` header carries, or undefined when the header is absent or malformed. */
export function traceIdFromTraceparent(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m || m[1] === 'ff' || m[2] === INVALID_TRACE_ID || m[3] === '0'.repeat(16)) return undefined;
  return m[2];
}

/** The server span of each request being served, while tracing is on. */
const spans = new WeakMap<IncomingMessage, Span>();

/** The server span `requestTraceId` started for `req`, if tracing is on. */
export const requestSpan = (req: IncomingMessage): Span | undefined => spans.get(req);

/** Fastify's genReqId: 32 lower-case hex, the request's trace id (the incoming trace's, or a new one). */
export function requestTraceId(req: IncomingMessage): string {
  // Without an SDK the propagator and the tracer are no-ops: the span below is invalid and unused.
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  // The path without its query string, which may carry an upload signature or a claim token.
  const span = tracer().startSpan(`${req.method ?? 'HTTP'}`, {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': req.method ?? '', 'url.path': (req.url ?? '').split('?')[0]!, 'url.scheme': 'http', 'network.protocol.version': req.httpVersion },
  }, parent);
  const sc = span.spanContext();
  if (isSpanContextValid(sc)) {
    spans.set(req, span);
    return sc.traceId;
  }
  return traceIdFromTraceparent(req.headers.traceparent) ?? randomBytes(16).toString('hex');
}
