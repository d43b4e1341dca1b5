// Spans of the programs' own work, through @opentelemetry/api alone: without a started SDK
// (start-tracing.ts) every call here is a no-op. Attributes are ids, kinds, counts and outcomes, never
// a payload, a share, a nonce, an intent or a message: SPAN_ATTRIBUTES lists every key this project sets
// (test/e2e/traces-journey.ts holds the exported spans to it).
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

/** The tracer of the project's own spans. */
export const tracer = () => trace.getTracer('threshold-custody');

/** The attribute keys of the project's spans. */
export const ATTR = {
  sessionId: 'custody.session.id',
  sessionKind: 'custody.session.kind',
  outcome: 'custody.outcome',
  errorCode: 'custody.error.code',
  requestId: 'custody.request.id',
  keyId: 'custody.key.id',
  nodeId: 'custody.node.id',
  parties: 'custody.session.parties',
  round: 'custody.round',
  envelopes: 'custody.round.envelopes',
  transactionId: 'custody.transaction.id',
} as const;

/** Every attribute key a span of this project may carry: its own (ATTR) and the semantic conventions it uses. */
export const SPAN_ATTRIBUTES: readonly string[] = [
  ...Object.values(ATTR),
  'http.request.method', 'http.route', 'http.response.status_code', 'url.path', 'url.scheme', 'network.protocol.version', 'user_agent.original',
  'rpc.system', 'rpc.service', 'rpc.method', 'rpc.grpc.status_code', 'error.type',
];

/** The W3C `traceparent` of `ctx` (the active context by default), or '' when no trace is recorded there. */
export function traceparentOf(ctx: Context = context.active()): string {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent ?? '';
}

/** The context a `traceparent` names (the root context when it is empty or malformed). */
export function contextOfTraceparent(traceparent: string | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** How a session or a step ended: `ok`, or the error code that ended it (recorded as the span's error). */
export function endWithOutcome(span: Span, outcome: 'ok' | string, code?: string): void {
  span.setAttribute(ATTR.outcome, outcome);
  if (outcome !== 'ok') {
    if (code) span.setAttribute(ATTR.errorCode, code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? outcome });
  }
  span.end();
}

/** A session's span: `session <kind>` under `parent`, with its id and kind. */
export function startSessionSpan(kind: string, attributes: Attributes, parent: Context = context.active()): Span {
  return tracer().startSpan(`session ${kind}`, { kind: SpanKind.INTERNAL, attributes: { [ATTR.sessionKind]: kind, ...attributes } }, parent);
}

/**
 * One span per protocol round of a session, children of its span: a round's span starts at the first
 * envelope of that round this program sends or sees, and ends when one of a later round appears or the
 * session ends. Rounds are read from the envelopes' cleartext round numbers; nothing inside them.
 */
export class RoundSpans {
  private current: { round: number; span: Span; envelopes: number } | undefined;

  constructor(private readonly session: Span, private readonly attributes: Attributes) {}

  /** An envelope of `round` went out or came in. */
  saw(round: number): void {
    if (!this.session.isRecording()) return;
    if (this.current && round <= this.current.round) {
      this.current.envelopes++;
      return;
    }
    this.close('ok');
    const span = tracer().startSpan(`round ${round}`, { attributes: { ...this.attributes, [ATTR.round]: round } }, trace.setSpan(ROOT_CONTEXT, this.session));
    this.current = { round, span, envelopes: 1 };
  }

  /** Ends the open round as the session ended: `ok`, or the code that ended the session. */
  close(outcome: 'ok' | string, code?: string): void {
    const c = this.current;
    if (!c) return;
    this.current = undefined;
    c.span.setAttribute(ATTR.envelopes, c.envelopes);
    endWithOutcome(c.span, outcome, code);
  }
}
