// Runs the node's side of sessions the coordinator opens: builds the protocol run, seals what it sends,
// opens and checks what it receives, and reports the outcome. Transport failures (a signature that does
// not verify, a payload from another session, a repeated message) are blamed on the relay, not on the
// party named as sender, since a party cannot be made to sign what it did not send.
//
// A node may be attached to several coordinators (vaults sharded across them, docs/operations.md
// "Coordinator shards"). Each session belongs to the link that opened it, its origin: every reply goes
// back on that link, and traffic or a cancel for it from any other link is ignored, so one coordinator
// can neither feed nor end another's sessions. A session id is one id space across every link: an id
// live or ended here is refused whoever opens it again, and so is one whose deadline has passed.
import type { Logger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import type { NodeIdentity, PublicIdentity } from './identity.ts';
import { open as openEnvelope, sealBroadcast, sealDirect, EnvelopeError, type Envelope } from '../transport/envelope.ts';
import type { Outgoing, PartyProtocol, Step } from './party-protocol.ts';
import type { Envelope as WireEnvelope, Party, SessionOpen } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AttachRequestSchema } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { isRequestId } from '../../core/session/request-id.ts';
import { sessionIdProblem } from '../../core/session/session-id.ts';
import { protocolName } from '../../core/link/protocol-name.ts';
import { secondsSince } from '../../common/metrics/metrics-registry.ts';
import type { NodeSessionMetrics, NodeSessionOutcome } from './session-metrics.ts';
import { ATTR, contextOfTraceparent, endWithOutcome, RoundSpans, startSessionSpan } from '../../common/tracing/spans.ts';
import type { Span } from '@opentelemetry/api';

export type ToCoordinator = MessageInitShape<typeof AttachRequestSchema>;

/** Names the coordinator link traffic came on (node/main.ts uses its address). */
export type Origin = string;

/** The origin of a node with one coordinator, and of callers that do not name one. */
export const SOLE_ORIGIN: Origin = '';

export interface SessionContext {
  open: SessionOpen;
  myIndex: number;
  parties: Party[];
  /**
   * Aborted when the session ends here (cancel, link loss, deadline, refusal) before the factory built
   * its run: the runner stops at its next step and frees what preflight holds.
   */
  signal?: AbortSignal;
}

/** Builds the protocol run for an opened session, or throws SessionRefused. */
export type ProtocolFactory = (ctx: SessionContext) => Promise<PartyProtocol>;

/** A node declining a session before it runs; the code (and its kind) says why. Culprits are node ids. */
export class SessionRefused extends CustodyError {
  declare readonly culprits: readonly string[];
  constructor(code: ErrorCode, message: string, culprits: readonly string[] = []) {
    super(code, message, { culprits });
    this.name = 'SessionRefused';
  }
}

interface Live {
  ctx: SessionContext;
  /** The link that opened the session: the only one it answers and listens to. */
  origin: Origin;
  byNode: Map<string, Party>;
  byIndex: Map<number, Party>;
  protocol?: PartyProtocol;
  pending: WireEnvelope[];
  seen: Set<string>;
  queue: Promise<void>;
  finished: boolean;
  timer: NodeJS.Timeout;
  /** performance.now() at the opening, for the duration metric. */
  startedAt: number;
  /** Aborted by finish(): tells a factory still in preflight or authorize that the session is over. */
  ended: AbortController;
  /** The session's trace span, continuing the coordinator's, and its rounds' (no-ops without tracing). */
  span: Span;
  rounds: RoundSpans;
}

export class SessionHost {
  private readonly live = new Map<string, Live>();
  /** Session ids that ended here; late traffic for them is dropped quietly. */
  private readonly ended = new Set<string>();

  constructor(
    private readonly identity: NodeIdentity,
    /** Writes on the link named `origin`. */
    private readonly send: (msg: ToCoordinator, origin: Origin) => void,
    private readonly factory: ProtocolFactory,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly metrics?: NodeSessionMetrics,
  ) {}

  get running(): number {
    return this.live.size;
  }

  onOpen(open: SessionOpen, origin: Origin = SOLE_ORIGIN): void {
    const id = toHex(open.sessionId);
    // Ids, kind and counts only: never the parameters (they carry the intent) nor a payload.
    const span = startSessionSpan(protocolName(open.protocol), {
      [ATTR.sessionId]: id, [ATTR.nodeId]: this.identity.nodeId, [ATTR.keyId]: open.keyId.slice(0, 128), [ATTR.parties]: open.parties.length,
      ...(isRequestId(open.requestId) && open.requestId ? { [ATTR.requestId]: open.requestId } : {}),
    }, contextOfTraceparent(open.traceparent.slice(0, 128)));
    // Declined before the session exists here: counted as a refusal only, and answered on the link that
    // asked (a session id another link holds is never touched by the refusal).
    const decline = (code: ErrorCode, message: string) => {
      this.metrics?.sessionRefused(protocolName(open.protocol), code);
      endWithOutcome(span, 'refused', code);
      this.fail(origin, open.sessionId, code, message, []);
    };
    if (this.live.has(id) || this.ended.has(id)) return decline('session_reused', 'session id already used');
    // An id carries its deadline (core/session/session-id.ts): one past, or further ahead than any
    // session lasts, is refused, so a claim of an id behind this clock may be pruned (docs/storage.md).
    const idProblem = sessionIdProblem(open.sessionId, open.deadlineMs, this.now());
    if (idProblem) return decline(idProblem.code, idProblem.message);
    const me = open.parties.find((p) => p.nodeId === this.identity.nodeId);
    if (!me) return decline('not_a_party', 'this node is not a party of the session');
    if (toHex(me.signingKey) !== toHex(this.identity.signingKey) || toHex(me.encryptionKey) !== toHex(this.identity.encryptionKey)) {
      return decline('identity_mismatch', 'the session names this node with other keys');
    }
    const indexes = new Set(open.parties.map((p) => p.index));
    const ids = new Set(open.parties.map((p) => p.nodeId));
    if (indexes.size !== open.parties.length || ids.size !== open.parties.length || open.parties.some((p) => p.index < 1)) {
      return decline('bad_parties', 'party list has duplicate or zero indexes or ids');
    }
    // Only logged, but bounded like the coordinator bounds it (docs/sessions.md "Request ids").
    if (!isRequestId(open.requestId)) return decline('bad_params', 'the request id is at most 128 characters of [A-Za-z0-9._:-]');
    const ttl = Math.max(0, Number(open.deadlineMs) - this.now());
    const ended = new AbortController();
    const live: Live = {
      ctx: { open, myIndex: me.index, parties: open.parties, signal: ended.signal },
      origin,
      byNode: new Map(open.parties.map((p) => [p.nodeId, p])),
      byIndex: new Map(open.parties.map((p) => [p.index, p])),
      pending: [],
      seen: new Set(),
      queue: Promise.resolve(),
      finished: false,
      timer: setTimeout(() => this.finish(id, 'timeout', 'deadline passed'), ttl + 1000),
      startedAt: performance.now(),
      ended,
      span,
      rounds: new RoundSpans(span, { [ATTR.sessionId]: id, [ATTR.nodeId]: this.identity.nodeId }),
    };
    this.live.set(id, live);
    this.log.debug({ ...this.about(id), protocol: open.protocol, keyId: open.keyId, ...(origin ? { coordinator: origin } : {}) }, 'session opened');
    this.enqueue(id, live, async () => {
      let protocol: PartyProtocol;
      try {
        protocol = await this.factory(live.ctx);
      } catch (err) {
        return this.refuse(id, live, err);
      }
      // The session ended (cancel, link loss, deadline) while the factory ran: finish() found no
      // protocol to dispose, so this one is disposed here, freeing what it holds (OT pair locks).
      if (live.finished) return protocol.dispose();
      live.protocol = protocol;
      await this.apply(id, live, await live.protocol.start());
      if (live.protocol.admit && !live.finished) {
        // Let the first round's messages go out before the check runs.
        await new Promise((resolve) => setImmediate(resolve));
        try {
          await live.protocol.admit();
        } catch (err) {
          return this.refuse(id, live, err);
        }
      }
      for (const env of live.pending.splice(0)) await this.deliver(id, live, env);
    });
  }

  onRelay(env: WireEnvelope, origin: Origin = SOLE_ORIGIN): void {
    const id = toHex(env.sessionId);
    const live = this.live.get(id);
    if (!live) {
      if (!this.ended.has(id)) this.log.debug({ session: id }, 'envelope for an unknown session dropped');
      return;
    }
    // Not a relay fault of the session: its own coordinator did nothing wrong, and ending the session on
    // another coordinator's word would let that one abort it.
    if (live.origin !== origin) {
      this.log.warn({ ...this.about(id), coordinator: origin }, 'envelope for a session another coordinator opened dropped');
      return;
    }
    this.enqueue(id, live, async () => {
      if (!live.protocol) live.pending.push(env);
      else await this.deliver(id, live, env);
    });
  }

  onCancel(sessionId: Uint8Array, reason: string, origin: Origin = SOLE_ORIGIN): void {
    const id = toHex(sessionId);
    const live = this.live.get(id);
    if (live && live.origin !== origin) {
      this.log.warn({ ...this.about(id), coordinator: origin }, 'cancel for a session another coordinator opened ignored');
      return;
    }
    if (live) {
      this.log.info({ ...this.about(id), reason }, 'session cancelled by the coordinator');
      this.finish(id, 'cancelled', 'cancelled');
    }
  }

  /** Ends every session (the node stops). */
  abortAll(reason: string): void {
    for (const id of [...this.live.keys()]) this.finish(id, 'abandoned', reason);
  }

  /** Ends the sessions `origin` opened (its link went down); the other links' sessions run on. */
  abortFrom(origin: Origin, reason: string): void {
    for (const [id, live] of [...this.live]) if (live.origin === origin) this.finish(id, 'abandoned', reason);
  }

  /** Sessions running for `origin` now. */
  runningFor(origin: Origin): number {
    let n = 0;
    for (const live of this.live.values()) if (live.origin === origin) n++;
    return n;
  }

  private enqueue(id: string, live: Live, task: () => Promise<void>): void {
    live.queue = live.queue.then(task).catch((err: unknown) => {
      this.log.error({ ...this.about(id), err: (err as Error).message }, 'session failed unexpectedly');
      this.fail(live.origin, live.ctx.open.sessionId, 'internal', 'internal error in the node', []);
      this.finish(id, 'internal', 'internal error', 'internal');
    });
  }

  private async deliver(id: string, live: Live, wire: WireEnvelope): Promise<void> {
    if (live.finished) return;
    const sender = live.byNode.get(wire.from);
    if (!sender || wire.from === this.identity.nodeId) {
      return this.relayFault(id, live, `envelope from ${wire.from}, who is not another party`);
    }
    const env: Envelope = { ...wire };
    let payload: Uint8Array;
    try {
      payload = openEnvelope(this.identity, toPublic(sender), live.ctx.open.sessionId, env);
    } catch (err) {
      if (err instanceof EnvelopeError) return this.relayFault(id, live, `${err.code} from ${wire.from}: ${err.message}`);
      throw err;
    }
    const key = `${wire.round}/${wire.from}/${wire.to}`;
    if (live.seen.has(key)) return this.relayFault(id, live, `repeated round ${wire.round} message from ${wire.from}`);
    live.seen.add(key);
    live.rounds.saw(wire.round);
    await this.apply(id, live, await live.protocol!.deliver(sender.index, wire.round, payload, wire.to === ''));
  }

  private refuse(id: string, live: Live, err: unknown): void {
    // A session that already ended here was reported then; a refusal its end caused is not news.
    if (live.finished) return;
    // A refusal, or any other CustodyError (a malformed parameter, a storage error), reports its own
    // code; anything else is a bug of this node and reports only `internal`.
    const e = err instanceof CustodyError ? err : new CustodyError('internal', 'internal error in the node');
    if (!(err instanceof CustodyError)) this.log.error({ ...this.about(id), err: (err as Error)?.stack ?? String(err) }, 'session setup failed unexpectedly');
    this.log.warn({ ...this.about(id), code: e.code }, `session refused: ${e.message}`);
    const byIndex = live.byIndex;
    this.fail(live.origin, live.ctx.open.sessionId, e.code, e.message, e.culprits.map((c) => (typeof c === 'number' ? byIndex.get(c)?.nodeId ?? `index ${c}` : c)));
    if (!live.finished) this.metrics?.sessionRefused(protocolName(live.ctx.open.protocol), e.code);
    this.finish(id, 'refused', 'refused', e.code);
  }

  private relayFault(id: string, live: Live, message: string): void {
    this.log.warn(this.about(id), `relay fault: ${message}`);
    this.fail(live.origin, live.ctx.open.sessionId, 'relay_fault', message, []);
    this.finish(id, 'relay_fault', 'relay fault', 'relay_fault');
  }

  private async apply(id: string, live: Live, step: Step): Promise<void> {
    if (live.finished) return;
    if (step.kind === 'abort') {
      const culprits = step.culprits.map((i) => live.byIndex.get(i)?.nodeId ?? `index ${i}`);
      this.log.warn({ ...this.about(id), code: step.code, culprits }, `protocol aborted: ${step.message}`);
      this.fail(live.origin, live.ctx.open.sessionId, step.code, step.message, culprits);
      return this.finish(id, 'aborted', 'aborted', step.code);
    }
    if (step.kind === 'done') {
      // Secrets are stored before anything derived from them leaves the node.
      await step.commit?.();
      this.sendOut(live, step.out);
      this.send({ body: { case: 'done', value: { sessionId: live.ctx.open.sessionId, result: step.result } } }, live.origin);
      return this.finish(id, 'ok', 'done');
    }
    this.sendOut(live, step.out);
  }

  private sendOut(live: Live, out: Outgoing[]): void {
    const h = { sessionId: live.ctx.open.sessionId };
    for (const o of out) {
      live.rounds.saw(o.round);
      let env: Envelope;
      if (o.to === 'all') env = sealBroadcast(this.identity, { ...h, round: o.round }, o.payload);
      else {
        const to = live.byIndex.get(o.to);
        if (!to) throw new Error(`protocol addressed unknown party ${o.to}`);
        env = sealDirect(this.identity, toPublic(to), { ...h, round: o.round }, o.payload);
      }
      this.send({ body: { case: 'send', value: { envelope: env } } }, live.origin);
    }
  }

  /** Reports a failure to the coordinator on `origin`; only registered codes leave the node. */
  private fail(origin: Origin, sessionId: Uint8Array, code: ErrorCode, message: string, culprits: readonly string[]): void {
    this.send({ body: { case: 'failed', value: { sessionId, code, message, culprits: [...culprits] } } }, origin);
  }

  /** Ends a session here; `code` is the error code that ended it, when one did. */
  private finish(id: string, outcome: NodeSessionOutcome, why: string, code?: string): void {
    const live = this.live.get(id);
    if (!live) return;
    const traced = outcome === 'ok' || outcome === 'refused' ? outcome : 'failed';
    live.rounds.close(traced, code ?? outcome);
    endWithOutcome(live.span, traced, code ?? outcome);
    this.metrics?.sessionEnded(protocolName(live.ctx.open.protocol), outcome, secondsSince(live.startedAt));
    live.finished = true;
    clearTimeout(live.timer);
    live.ended.abort();
    live.protocol?.dispose();
    this.live.delete(id);
    this.ended.add(id);
    if (this.ended.size > 10_000) this.ended.delete(this.ended.values().next().value!);
    this.log.debug({ ...this.about(id, live), why }, 'session ended');
  }

  /** What every log line about a session names: its id and the coordinator's request id, when there is one. */
  private about(id: string, live = this.live.get(id)): { session: string; requestId?: string } {
    const requestId = live?.ctx.open.requestId;
    return requestId ? { session: id, requestId } : { session: id };
  }
}

function toPublic(p: Party): PublicIdentity {
  return { nodeId: p.nodeId, signingKey: p.signingKey, encryptionKey: p.encryptionKey };
}
