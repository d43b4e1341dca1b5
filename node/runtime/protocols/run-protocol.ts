// Adapts pure protocols (node/protocols) to the runtime's PartyProtocol. Several runs of the same
// protocol can go in one session (one FROST or ECDSA run per digest): their messages for the same
// recipient and round travel together as one batch payload.
import { randomBytes } from 'node:crypto';
import { deliver, startRun, type Message, type Protocol, type Rng, type Run } from '../../protocols/round/machine.ts';
import { InputError, ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import { lengthPrefixed } from '../../../core/codec/transcript.ts';
import type { SessionCodec } from '../../../core/session/session-contract.ts';
import type { Outgoing, PartyProtocol, Step } from '../party-protocol.ts';

export const systemRng = (n: number): Uint8Array => new Uint8Array(randomBytes(n));

export interface Finish {
  result: Uint8Array;
  commit?: () => Promise<void>;
}

const BATCH_VERSION = 2;

/** Batch wire form: version byte, u32 count, then per run a u32 length and the payload (empty: none). */
export function encodeBatch(parts: Uint8Array[]): Uint8Array {
  const body = lengthPrefixed(parts);
  const out = new Uint8Array(5 + body.length);
  out[0] = BATCH_VERSION;
  new DataView(out.buffer).setUint32(1, parts.length);
  out.set(body, 5);
  return out;
}

export function decodeBatch(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length < 5 || bytes[0] !== BATCH_VERSION) throw new InputError('bad_message', 'not a batch');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(1);
  if (count > 1024) throw new InputError('bad_message', 'batch too large');
  const parts: Uint8Array[] = [];
  let off = 5;
  for (let i = 0; i < count; i++) {
    if (off + 4 > bytes.length) throw new InputError('bad_message', 'batch truncated');
    const len = view.getUint32(off);
    if (off + 4 + len > bytes.length) throw new InputError('bad_message', 'batch truncated');
    parts.push(bytes.subarray(off + 4, off + 4 + len));
    off += 4 + len;
  }
  if (off !== bytes.length) throw new InputError('bad_message', 'trailing bytes after the batch');
  return parts;
}

function group(me: number, msgs: Message[][]): Outgoing[] {
  const keys = new Map<string, { to: number | 'all'; round: number; parts: Uint8Array[] }>();
  msgs.forEach((out, i) => {
    for (const m of out) {
      if (m.from !== me) throw new Error('protocol produced a message from another party');
      const k = `${m.round}:${m.to}`;
      const g = keys.get(k) ?? { to: m.to, round: m.round, parts: Array.from({ length: msgs.length }, () => new Uint8Array()) };
      g.parts[i] = m.payload;
      keys.set(k, g);
    }
  });
  return [...keys.values()].map((g) => ({ to: g.to, round: g.round, payload: encodeBatch(g.parts) }));
}

/**
 * How a driven set of runs advances: `start` opens every run and returns each one's first messages;
 * `deliver` hands run `i` one message and returns its messages and, once it finished, its result.
 * Protocol errors are thrown as ProtocolAbort or InputError, as the pure protocols throw them.
 */
export interface RunOps<R> {
  start(): Promise<Message[][]> | Message[][];
  deliver(i: number, msg: Message): Promise<RunAdvance<R>> | RunAdvance<R>;
  dispose(): void;
}

export type RunAdvance<R> = { out: Message[]; done: false } | { out: Message[]; done: true; result: R };

/** The pure state machines on this thread: each run's plain-data state is kept here between steps. */
export function inlineRuns<P, S, R>(protocol: Protocol<P, S, R>, params: P[], rng: Rng): RunOps<R> {
  let runs: Run<S>[] = [];
  return {
    start() {
      const started = params.map((p) => startRun(protocol, p, rng));
      runs = started.map((s) => s.run);
      return started.map((s) => s.out);
    },
    deliver(i, msg) {
      const step = deliver(protocol, runs[i]!, msg, rng);
      runs[i] = step.run;
      return step.kind === 'done' ? { out: step.out, done: true, result: step.result } : { out: step.out, done: false };
    },
    dispose() {
      runs = [];
    },
  };
}

export function runProtocol<P, S, R>(
  protocol: Protocol<P, S, R>,
  me: number,
  params: P[],
  finish: (results: R[]) => Finish | Promise<Finish>,
  rng: Rng = systemRng,
): PartyProtocol {
  return driveRuns(me, params.length, inlineRuns(protocol, params, rng), finish);
}

/** Drives `count` runs of one protocol as one session: batches their messages, collects their results. */
export function driveRuns<R>(me: number, count: number, ops: RunOps<R>, finish: (results: R[]) => Finish | Promise<Finish>): PartyProtocol {
  const results: (R | undefined)[] = Array.from({ length: count }, () => undefined);
  const abort = (err: unknown): Step => {
    if (err instanceof ProtocolAbort) return { kind: 'abort', code: err.code, message: err.message, culprits: [...err.culprits] };
    if (err instanceof InputError) return { kind: 'abort', code: err.code, message: err.message, culprits: [] };
    throw err;
  };
  const settle = async (out: Outgoing[]): Promise<Step> => {
    if (results.every((r) => r !== undefined)) {
      const f = await finish(results as R[]);
      return { kind: 'done', out, result: f.result, ...(f.commit ? { commit: f.commit } : {}) };
    }
    return { kind: 'continue', out };
  };
  return {
    async start() {
      let outs: Message[][];
      try {
        outs = await ops.start();
      } catch (err) {
        return abort(err);
      }
      return settle(group(me, outs));
    },
    async deliver(from, round, payload, broadcast) {
      let parts: Uint8Array[];
      try {
        parts = decodeBatch(payload);
      } catch {
        return { kind: 'abort', code: 'bad_message', message: `party ${from}: malformed batch`, culprits: [from] };
      }
      if (!Array.isArray(parts) || parts.length !== count) return { kind: 'abort', code: 'bad_message', message: `party ${from}: batch has ${parts?.length} parts for ${count} runs`, culprits: [from] };
      const outs: Message[][] = [];
      try {
        for (let i = 0; i < count; i++) {
          if (results[i] !== undefined) continue;
          if (parts[i]!.length === 0) throw new ProtocolAbort('bad_message', [from], `party ${from}: empty batch part`);
          const step = await ops.deliver(i, { from, to: broadcast ? 'all' : me, round, payload: parts[i]! });
          outs.push(step.out);
          if (step.done) results[i] = step.result;
        }
      } catch (err) {
        return abort(err);
      }
      return settle(group(me, outs));
    },
    dispose() {
      ops.dispose();
    },
  };
}

/** Session parameters travel in SessionOpen.params as the shared contract encodes them (core/session/session-contract.ts). */
export function readParams<T>(codec: SessionCodec<T>, bytes: Uint8Array): T {
  try {
    return codec.decode(bytes);
  } catch (err) {
    if (err instanceof InputError) throw new InputError('bad_params', `session parameters: ${err.message}`);
    throw err;
  }
}

/**
 * Two protocol runs one after the other in one session: `first` until it is done, then the run
 * `next` builds. The second run's rounds travel offset by `offset`, so the phases never mix.
 */
export function inSequence(first: PartyProtocol, next: () => PartyProtocol, offset = 100): PartyProtocol {
  let second: PartyProtocol | undefined;
  const early: { from: number; round: number; payload: Uint8Array; broadcast: boolean }[] = [];
  const shift = (step: Step): Step => (step.kind === 'abort' ? step : { ...step, out: step.out.map((o) => ({ ...o, round: o.round + offset })) });
  const advance = async (step: Step): Promise<Step> => {
    if (step.kind !== 'done' || second) return step;
    await step.commit?.();
    second = next();
    let s = shift(await second.start());
    const out = [...step.out, ...(s.kind === 'abort' ? [] : s.out)];
    if (s.kind === 'abort') return s;
    for (const m of early.splice(0)) {
      const r = shift(await second.deliver(m.from, m.round - offset, m.payload, m.broadcast));
      if (r.kind === 'abort') return r;
      out.push(...r.out);
      s = r;
    }
    return { ...s, out };
  };
  return {
    async start() {
      return advance(await first.start());
    },
    async deliver(from, round, payload, broadcast) {
      if (round > offset) {
        if (!second) {
          early.push({ from, round, payload, broadcast });
          return { kind: 'continue', out: [] };
        }
        return shift(await second.deliver(from, round - offset, payload, broadcast));
      }
      if (second) return { kind: 'abort', code: 'stale_message', message: `party ${from} sent a first-phase message late`, culprits: [from] };
      return advance(await first.deliver(from, round, payload, broadcast));
    },
    dispose() {
      first.dispose();
      second?.dispose();
    },
  };
}
