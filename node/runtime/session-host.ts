// Runs the node's side of sessions the coordinator opens: builds the protocol run, seals what it sends,
// opens and checks what it receives, and reports the outcome. Transport failures (a signature that does
// not verify, a payload from another session, a repeated message) are blamed on the relay, not on the
// party named as sender, since a party cannot be made to sign what it did not send.
import type { Logger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import type { NodeIdentity, PublicIdentity } from './identity.ts';
import { open as openEnvelope, sealBroadcast, sealDirect, EnvelopeError, type Envelope } from '../transport/envelope.ts';
import type { Outgoing, PartyProtocol, Step } from './party-protocol.ts';
import type { Envelope as WireEnvelope, Party, SessionOpen } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AttachRequestSchema } from '../../proto/gen/mpc/v1/node_link_pb.ts';

export type ToCoordinator = MessageInitShape<typeof AttachRequestSchema>;

export interface SessionContext {
  open: SessionOpen;
  myIndex: number;
  parties: Party[];
}

/** Builds the protocol run for an opened session, or throws SessionRefused. */
export type ProtocolFactory = (ctx: SessionContext) => Promise<PartyProtocol>;

export class SessionRefused extends Error {
  constructor(readonly code: string, message: string, readonly culprits: string[] = []) {
    super(message);
    this.name = 'SessionRefused';
  }
}

interface Live {
  ctx: SessionContext;
  byNode: Map<string, Party>;
  byIndex: Map<number, Party>;
  protocol?: PartyProtocol;
  pending: WireEnvelope[];
  seen: Set<string>;
  queue: Promise<void>;
  finished: boolean;
  timer: NodeJS.Timeout;
}

export class SessionHost {
  private readonly live = new Map<string, Live>();
  /** Session ids that ended here; late traffic for them is dropped quietly. */
  private readonly ended = new Set<string>();

  constructor(
    private readonly identity: NodeIdentity,
    private readonly send: (msg: ToCoordinator) => void,
    private readonly factory: ProtocolFactory,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  get running(): number {
    return this.live.size;
  }

  onOpen(open: SessionOpen): void {
    const id = toHex(open.sessionId);
    if (this.live.has(id) || this.ended.has(id)) return this.fail(open.sessionId, 'duplicate_session', 'session id already used', []);
    const me = open.parties.find((p) => p.nodeId === this.identity.nodeId);
    if (!me) return this.fail(open.sessionId, 'not_a_party', 'this node is not a party of the session', []);
    if (toHex(me.signingKey) !== toHex(this.identity.signingKey) || toHex(me.encryptionKey) !== toHex(this.identity.encryptionKey)) {
      return this.fail(open.sessionId, 'identity_mismatch', 'the session names this node with other keys', []);
    }
    const indexes = new Set(open.parties.map((p) => p.index));
    const ids = new Set(open.parties.map((p) => p.nodeId));
    if (indexes.size !== open.parties.length || ids.size !== open.parties.length || open.parties.some((p) => p.index < 1)) {
      return this.fail(open.sessionId, 'bad_parties', 'party list has duplicate or zero indexes or ids', []);
    }
    const ttl = Math.max(0, Number(open.deadlineMs) - this.now());
    const live: Live = {
      ctx: { open, myIndex: me.index, parties: open.parties },
      byNode: new Map(open.parties.map((p) => [p.nodeId, p])),
      byIndex: new Map(open.parties.map((p) => [p.index, p])),
      pending: [],
      seen: new Set(),
      queue: Promise.resolve(),
      finished: false,
      timer: setTimeout(() => this.finish(id, 'deadline passed'), ttl + 1000),
    };
    this.live.set(id, live);
    this.enqueue(id, live, async () => {
      try {
        live.protocol = await this.factory(live.ctx);
      } catch (err) {
        return this.refuse(id, open.sessionId, err);
      }
      await this.apply(id, live, await live.protocol.start());
      if (live.protocol.admit && !live.finished) {
        // Let the first round's messages go out before the check runs.
        await new Promise((resolve) => setImmediate(resolve));
        try {
          await live.protocol.admit();
        } catch (err) {
          return this.refuse(id, open.sessionId, err);
        }
      }
      for (const env of live.pending.splice(0)) await this.deliver(id, live, env);
    });
  }

  onRelay(env: WireEnvelope): void {
    const id = toHex(env.sessionId);
    const live = this.live.get(id);
    if (!live) {
      if (!this.ended.has(id)) this.log.debug({ session: id }, 'envelope for an unknown session dropped');
      return;
    }
    this.enqueue(id, live, async () => {
      if (!live.protocol) live.pending.push(env);
      else await this.deliver(id, live, env);
    });
  }

  onCancel(sessionId: Uint8Array, reason: string): void {
    const id = toHex(sessionId);
    if (this.live.has(id)) {
      this.log.info({ session: id, reason }, 'session cancelled by the coordinator');
      this.finish(id, 'cancelled');
    }
  }

  /** Ends every session (the link went down or the node stops). */
  abortAll(reason: string): void {
    for (const id of [...this.live.keys()]) this.finish(id, reason);
  }

  private enqueue(id: string, live: Live, task: () => Promise<void>): void {
    live.queue = live.queue.then(task).catch((err: unknown) => {
      this.log.error({ session: id, err: (err as Error).message }, 'session failed unexpectedly');
      this.fail(live.ctx.open.sessionId, 'internal', 'internal error in the node', []);
      this.finish(id, 'internal error');
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
    await this.apply(id, live, await live.protocol!.deliver(sender.index, wire.round, payload, wire.to === ''));
  }

  private refuse(id: string, sessionId: Uint8Array, err: unknown): void {
    const e = err instanceof SessionRefused ? err : new SessionRefused('refused', (err as Error).message);
    this.log.warn({ session: id, code: e.code }, `session refused: ${e.message}`);
    this.fail(sessionId, e.code, e.message, e.culprits);
    this.finish(id, 'refused');
  }

  private relayFault(id: string, live: Live, message: string): void {
    this.log.warn({ session: id }, `relay fault: ${message}`);
    this.fail(live.ctx.open.sessionId, 'relay_fault', message, []);
    this.finish(id, 'relay fault');
  }

  private async apply(id: string, live: Live, step: Step): Promise<void> {
    if (live.finished) return;
    if (step.kind === 'abort') {
      const culprits = step.culprits.map((i) => live.byIndex.get(i)?.nodeId ?? `index ${i}`);
      this.log.warn({ session: id, code: step.code, culprits }, `protocol aborted: ${step.message}`);
      this.fail(live.ctx.open.sessionId, step.code, step.message, culprits);
      return this.finish(id, 'aborted');
    }
    if (step.kind === 'done') {
      // Secrets are stored before anything derived from them leaves the node.
      await step.commit?.();
      this.sendOut(live, step.out);
      this.send({ body: { case: 'done', value: { sessionId: live.ctx.open.sessionId, result: step.result } } });
      return this.finish(id, 'done');
    }
    this.sendOut(live, step.out);
  }

  private sendOut(live: Live, out: Outgoing[]): void {
    const h = { sessionId: live.ctx.open.sessionId };
    for (const o of out) {
      let env: Envelope;
      if (o.to === 'all') env = sealBroadcast(this.identity, { ...h, round: o.round }, o.payload);
      else {
        const to = live.byIndex.get(o.to);
        if (!to) throw new Error(`protocol addressed unknown party ${o.to}`);
        env = sealDirect(this.identity, toPublic(to), { ...h, round: o.round }, o.payload);
      }
      this.send({ body: { case: 'send', value: { envelope: env } } });
    }
  }

  private fail(sessionId: Uint8Array, code: string, message: string, culprits: string[]): void {
    this.send({ body: { case: 'failed', value: { sessionId, code, message, culprits } } });
  }

  private finish(id: string, why: string): void {
    const live = this.live.get(id);
    if (!live) return;
    live.finished = true;
    clearTimeout(live.timer);
    live.protocol?.dispose();
    this.live.delete(id);
    this.ended.add(id);
    if (this.ended.size > 10_000) this.ended.delete(this.ended.values().next().value!);
    this.log.debug({ session: id, why }, 'session ended');
  }
}

function toPublic(p: Party): PublicIdentity {
  return { nodeId: p.nodeId, signingKey: p.signingKey, encryptionKey: p.encryptionKey };
}
