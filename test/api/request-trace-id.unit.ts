// The request id is the request's W3C trace id (docs/operations.md, "Traces"): a well-formed incoming
// traceparent's trace id, else 32 new random hex characters.
import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { requestTraceId, traceIdFromTraceparent } from '../../api/request-trace-id.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

t.test('a well-formed traceparent gives its trace id', async (t) => {
  t.equal(traceIdFromTraceparent(`00-${TRACE}-00f067aa0ba902b7-01`), TRACE);
  t.equal(requestTraceId(req({ traceparent: `00-${TRACE}-00f067aa0ba902b7-00` })), TRACE, 'kept whether sampled or not');
});

t.test('a malformed or invalid traceparent is ignored', async (t) => {
  for (const bad of [
    `00-${TRACE.toUpperCase()}-00f067aa0ba902b7-01`,
    `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `ff-${TRACE}-00f067aa0ba902b7-01`,
    `00-${TRACE}-00f067aa0ba902b7`,
    'garbage',
  ]) t.equal(traceIdFromTraceparent(bad), undefined, bad);
  t.equal(traceIdFromTraceparent(undefined), undefined, 'absent');
});

t.test('without a traceparent each request gets a new random trace id', async (t) => {
  const a = requestTraceId(req({}));
  const b = requestTraceId(req({ traceparent: 'garbage' }));
  t.match(a, /^[0-9a-f]{32}$/);
  t.match(b, /^[0-9a-f]{32}$/);
  t.not(a, b);
});
