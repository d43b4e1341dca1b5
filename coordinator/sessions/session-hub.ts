// Runs sessions between attached nodes: opens the session on every party, relays envelopes as opaque
// bytes, and settles when every party reported its result, any party failed, a party left, or the
// deadline passed. The hub never looks inside a payload.
import type { Logger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import type { Envelope, Party, Protocol, SessionDone, SessionFailed } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AttachResponseSchema } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { isErrorCode, kindOf, type ErrorCode } from '../../core/errors/error-codes.ts';
import { protocolName } from '../../core/link/protocol-name.ts';
import { secondsSince } from '../../common/metrics/metrics-registry.ts';
import { sessionIdTime } from '../../core/session/session-id.ts';
import type { SessionMetrics } from './session-metrics.ts';
import { ATTR, endWithOutcome, RoundSpans, startSessionSpan, traceparentOf } from '../../common/tracing/spans.ts';
import { context, trace, type Span } from '@opentelemetry/api';

export type ToNode = MessageInitShape<typeof AttachResponseSchema>;

export interface SessionSpec {
  /** Its first 8 bytes are the deadline sent to the nodes (core/session/session-id.ts), about timeoutMs from now. */
  sessionId: Uint8Array;
  /** The caller's request this session is for (empty when none): sent to the nodes and in every log line about the session. */
  requestId: string;
  protocol: Protocol;
  keyId: string;
  parties: Party[];
  params: Uint8Array;
  timeoutMs: number;
  /**
   * A liveness deadline per round: when no party sent anything for this long, the session ends as a
   * timeout naming the parties that are behind (fewest messages sent, no result), not waiting for the
   * whole session's deadline. For sessions whose rounds are short (signing); absent: none.
   */
  progressMs?: number;
}

/**
 * A party's SessionFailed. Its code is a registered one; a code this coordinator does not know (a newer
 * node) arrives as `party_failed` with the node's code in the message.
 */
export interface PartyReport {
  nodeId: string;
  code: ErrorCode;
  message: string;
  culprits: string[];
}

export type SessionOutcome =
  | { ok: true; results: Map<string, Uint8Array> }
  | { ok: false; code: Extract<ErrorCode, 'party_failed' | 'party_left' | 'timeout' | 'node_not_attached'>; message: string; culprits: string[]; reports: PartyReport[] };

// Bounds on what a node's report may carry.
const MAX_REPORT_MESSAGE = 1000;
const MAX_REPORT_CULPRITS = 64;

/** A hook on every relayed envelope: observe it, or return a replacement (array: deliver these instead). */
export type RelayTap = (sessionId: string, env: Envelope) => Envelope[] | undefined;

interface Running {
  spec: SessionSpec;
  parties: Set<string>;
  results: Map<string, Uint8Array>;
  reports: PartyReport[];
  settle: (o: SessionOutcome) => void;
  timer: NodeJS.Timeout;
  heard: Set<string>;
  /** Envelopes each party sent, and when any party last sent one (progressMs). */
  sent: Map<string, number>;
  lastProgress: number;
  progressTimer?: NodeJS.Timeout;
  /** The session's trace span and its rounds' (a no-op without tracing). */
  span: Span;
  rounds: RoundSpans;
}

export interface NodeSender {
  send(nodeId: string, msg: ToNode): boolean;
  isAttached(nodeId: string): boolean;
}

export class SessionHub {
  private readonly sessions = new Map<string, Running>();
  tap: RelayTap | undefined;

  constructor(private readonly nodes: NodeSender, private readonly log: Logger, private readonly metrics?: SessionMetrics) {}

  /** Whether the node is a party of a session still running (and has not reported its result). */
  hasParty(nodeId: string): boolean {
    for (const r of this.sessions.values()) if (r.parties.has(nodeId) && !r.results.has(nodeId)) return true;
    return false;
  }

  run(spec: SessionSpec): Promise<SessionOutcome> {
    const id = toHex(spec.sessionId);
    // The deadline the id carries (core/session/session-id.ts): a node refuses an open whose
    // deadline_ms is not its id's. A malformed id is a bug of the caller, refused before anything starts.
    const deadlineMs = sessionIdTime(spec.sessionId);
    const about = { session: id, requestId: spec.requestId };
    const kind = protocolName(spec.protocol);
    const startedAt = performance.now();
    this.metrics?.sessionStarted(kind);
    // Ids, kind and counts only: never the parameters (they carry intents) nor what is relayed.
    const span = startSessionSpan(kind, { [ATTR.sessionId]: id, [ATTR.requestId]: spec.requestId, [ATTR.keyId]: spec.keyId, [ATTR.parties]: spec.parties.length });
    const missing = spec.parties.filter((p) => !this.nodes.isAttached(p.nodeId)).map((p) => p.nodeId);
    if (missing.length) {
      this.metrics?.sessionFinished(kind, 'node_not_attached', 0, missing);
      endWithOutcome(span, 'failed', 'node_not_attached');
      return Promise.resolve({ ok: false, code: 'node_not_attached', message: `parties not attached: ${missing.join(', ')}`, culprits: missing, reports: [] });
    }
    return new Promise((resolve) => {
      const running: Running = {
        spec,
        parties: new Set(spec.parties.map((p) => p.nodeId)),
        results: new Map(),
        reports: [],
        heard: new Set(),
        sent: new Map(spec.parties.map((p) => [p.nodeId, 0])),
        lastProgress: Date.now(),
        span,
        rounds: new RoundSpans(span, { [ATTR.sessionId]: id }),
        settle: (o) => {
          clearTimeout(running.timer);
          clearInterval(running.progressTimer);
          this.sessions.delete(id);
          if (!o.ok) {
            for (const p of running.parties) if (!running.results.has(p)) this.nodes.send(p, { body: { case: 'cancel', value: { sessionId: spec.sessionId, reason: o.message } } });
          }
          // Only parties are counted as culprits: a report may name anything, a label may not.
          this.metrics?.sessionFinished(kind, o.ok ? 'ok' : o.code, secondsSince(startedAt), o.ok ? [] : new Set(o.culprits.filter((c) => running.parties.has(c))));
          const outcome = o.ok ? 'ok' : o.reports.some((r) => kindOf(r.code) === 'refused') ? 'refused' : 'failed';
          running.rounds.close(outcome, o.ok ? undefined : o.code);
          endWithOutcome(running.span, outcome, o.ok ? undefined : o.reports[0]?.code ?? o.code);
          resolve(o);
        },
        timer: setTimeout(() => {
          // Parties that sent as much as the others and wait for the rest are not named.
          const silent = behind(running);
          this.log.warn({ ...about, silent }, 'session timed out');
          running.settle({ ok: false, code: 'timeout', message: `no result from ${silent.join(', ')} in time`, culprits: silent, reports: running.reports });
        }, spec.timeoutMs),
      };
      if (spec.progressMs !== undefined && spec.progressMs < spec.timeoutMs) {
        const limit = spec.progressMs;
        running.progressTimer = setInterval(() => {
          if (Date.now() - running.lastProgress < limit) return;
          const late = behind(running);
          this.log.warn({ ...about, behind: late, silentMs: limit }, 'session made no progress in time');
          running.settle({ ok: false, code: 'timeout', message: `no progress for ${limit} ms; waiting on ${late.join(', ')}`, culprits: late, reports: running.reports });
        }, Math.max(50, Math.floor(limit / 4)));
      }
      this.sessions.set(id, running);
      this.log.debug({ ...about, protocol: spec.protocol, keyId: spec.keyId, parties: spec.parties.map((p) => p.nodeId) }, 'session opened');
      // The nodes' session spans continue this one (session.proto SessionOpen.traceparent).
      const traceparent = traceparentOf(trace.setSpan(context.active(), span));
      for (const p of spec.parties) {
        this.nodes.send(p.nodeId, {
          body: { case: 'open', value: { sessionId: spec.sessionId, protocol: spec.protocol, keyId: spec.keyId, parties: spec.parties, params: spec.params, deadlineMs, requestId: spec.requestId, traceparent } },
        });
      }
    });
  }

  /** A session message from an attached node. */
  fromNode(nodeId: string, msg: { case: 'send'; value: { envelope?: Envelope } } | { case: 'done'; value: SessionDone } | { case: 'failed'; value: SessionFailed }): void {
    const sid = msg.case === 'send' ? msg.value.envelope?.sessionId : msg.value.sessionId;
    if (!sid) return;
    const id = toHex(sid);
    const s = this.sessions.get(id);
    if (!s || !s.parties.has(nodeId)) {
      this.log.debug({ session: id, nodeId, kind: msg.case }, 'message for no running session of this node');
      return;
    }
    s.heard.add(nodeId);
    s.lastProgress = Date.now();
    if (msg.case === 'send') {
      s.sent.set(nodeId, (s.sent.get(nodeId) ?? 0) + 1);
      const env = msg.value.envelope!;
      // Cheap sanity: a node may only send as itself. Recipients verify signatures regardless.
      if (env.from !== nodeId) {
        this.log.warn({ session: id, requestId: s.spec.requestId, nodeId, claimed: env.from }, 'node sent an envelope under another id');
        return;
      }
      s.rounds.saw(env.round);
      const out = this.tap?.(id, env) ?? [env];
      for (const e of out) {
        const targets = e.to === '' ? [...s.parties].filter((p) => p !== nodeId) : s.parties.has(e.to) ? [e.to] : [];
        for (const t of targets) this.nodes.send(t, { body: { case: 'relay', value: { envelope: e } } });
      }
      return;
    }
    if (msg.case === 'failed') {
      const r = partyReport(nodeId, msg.value);
      s.reports.push(r);
      this.log.warn({ session: id, requestId: s.spec.requestId, ...r }, 'party reported failure');
      // Culprits are whom the party blames; a relay fault blames nobody among the parties.
      s.settle({ ok: false, code: 'party_failed', message: `${nodeId}: ${r.message}`, culprits: r.culprits, reports: s.reports });
      return;
    }
    s.results.set(nodeId, msg.value.result);
    if (s.results.size === s.parties.size) s.settle({ ok: true, results: s.results });
  }

  /** A node's stream ended: every session it is in fails and names it. */
  nodeLeft(nodeId: string): void {
    for (const [id, s] of this.sessions) {
      if (s.parties.has(nodeId) && !s.results.has(nodeId)) {
        this.log.warn({ session: id, requestId: s.spec.requestId, nodeId }, 'party left during session');
        s.settle({ ok: false, code: 'party_left', message: `${nodeId} left during the session`, culprits: [nodeId], reports: s.reports });
      }
    }
  }
}

/** The parties without a result that sent the fewest envelopes: those the others are waiting on. */
function behind(running: Running): string[] {
  const waiting = [...running.parties].filter((p) => !running.results.has(p));
  const least = Math.min(...waiting.map((p) => running.sent.get(p) ?? 0));
  return waiting.filter((p) => (running.sent.get(p) ?? 0) === least);
}

/** A SessionFailed from the wire as a report with a registered code, its texts bounded. */
function partyReport(nodeId: string, failed: SessionFailed): PartyReport {
  const message = failed.message.length > MAX_REPORT_MESSAGE ? `${failed.message.slice(0, MAX_REPORT_MESSAGE - 1)}…` : failed.message;
  const culprits = failed.culprits.slice(0, MAX_REPORT_CULPRITS).map((c) => c.slice(0, 128));
  if (isErrorCode(failed.code)) return { nodeId, code: failed.code, message, culprits };
  return { nodeId, code: 'party_failed', message: `unregistered code ${JSON.stringify(failed.code.slice(0, 64))}: ${message}`, culprits };
}
