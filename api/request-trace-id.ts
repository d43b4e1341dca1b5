// The request id is the W3C trace id of the request's trace (docs/operations.md, "Tracing";
// https://www.w3.org/TR/trace-context/#traceparent-header): taken from a well-formed incoming
// `traceparent` (a trace id is not a secret, and accepting it joins the caller's trace), else new.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE_ID = '0'.repeat(32);

/** The trace id a `traceparent` header carries, or undefined when the header is absent or malformed. */
export function traceIdFromTraceparent(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m || m[1] === 'ff' || m[2] === INVALID_TRACE_ID || m[3] === '0'.repeat(16)) return undefined;
  return m[2];
}

/** Fastify's genReqId: 32 lower-case hex, the incoming trace's id or a new random one. */
export function requestTraceId(req: IncomingMessage): string {
  return traceIdFromTraceparent(req.headers.traceparent) ?? randomBytes(16).toString('hex');
}
