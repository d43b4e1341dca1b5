// The round framework. A protocol is a set of pure functions over plain-data state: `start` opens round
// 1, `verify` checks one incoming message without changing anything, `store` records it, and once the
// round has every message it waits for, `finalize` moves to the next round, finishes with a result, or
// aborts naming culprits (a thrown ProtocolAbort). Randomness is injected. The driver in this file adds
// what every protocol needs: round bookkeeping, buffering of early messages, refusal of duplicates, and
// versioned serialization of the whole run (core/codec/blob.ts) so it can be persisted between rounds.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { InputError, ProtocolAbort, ProtocolBug } from '../../../core/errors/protocol-errors.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';

export type Rng = (bytes: number) => Uint8Array;

/** A message between parties. Party ids are small positive integers (the Shamir x-coordinates). */
export interface Message {
  from: number;
  /** A party id, or 'all' for a broadcast. */
  to: number | 'all';
  round: number;
  payload: Uint8Array;
}

export type Finalized<S, R> =
  | { kind: 'next'; state: S; out: Message[] }
  | { kind: 'done'; state: S; result: R; out?: Message[] };

export interface Protocol<P, S, R> {
  readonly name: string;
  start(params: P, rng: Rng): { state: S; out: Message[] };
  /** Pure: checks `msg` against `state` and returns its parsed payload; throws ProtocolAbort naming the sender. */
  verify(state: S, round: number, msg: Message): unknown;
  /** Records a verified message; returns the new state. */
  store(state: S, round: number, msg: Message, parsed: unknown): S;
  /** Whether every message of `round` is in. */
  ready(state: S, round: number): boolean;
  finalize(state: S, round: number, rng: Rng): Finalized<S, R>;
}

interface Pending {
  from: number;
  to: number | 'all';
  round: number;
  payload: string;
}

/** A protocol run as plain data: what persists between rounds. */
export interface Run<S> {
  protocol: string;
  round: number;
  finished: boolean;
  seen: string[];
  pending: Pending[];
  state: S;
}

export type Step<S, R> =
  | { kind: 'continue'; run: Run<S>; out: Message[] }
  | { kind: 'done'; run: Run<S>; out: Message[]; result: R };

export function startRun<P, S, R>(protocol: Protocol<P, S, R>, params: P, rng: Rng): { run: Run<S>; out: Message[] } {
  const { state, out } = protocol.start(params, rng);
  return { run: { protocol: protocol.name, round: 1, finished: false, seen: [], pending: [], state }, out };
}

/**
 * Delivers one message. Future-round messages wait; a second message from the same sender for the
 * same round and recipient, or one for a round already closed, aborts naming the sender.
 */
export function deliver<P, S, R>(protocol: Protocol<P, S, R>, run: Run<S>, msg: Message, rng: Rng): Step<S, R> {
  if (run.protocol !== protocol.name) throw new ProtocolBug(`run of ${run.protocol} driven as ${protocol.name}`);
  if (run.finished) throw new InputError('finished', 'the run is already finished');
  const key = `${msg.round}:${msg.from}:${msg.to}`;
  if (run.seen.includes(key) || run.pending.some((p) => `${p.round}:${p.from}:${p.to}` === key)) {
    throw new ProtocolAbort('duplicate_message', [msg.from], `party ${msg.from} sent round ${msg.round} twice`);
  }
  if (msg.round < run.round) throw new ProtocolAbort('stale_message', [msg.from], `party ${msg.from} sent a round ${msg.round} message in round ${run.round}`);
  if (msg.round > run.round) {
    const pending = [...run.pending, { from: msg.from, to: msg.to, round: msg.round, payload: bytesToHex(msg.payload) }];
    return { kind: 'continue', run: { ...run, pending }, out: [] };
  }
  let cur: Run<S> = run;
  let parsed = protocol.verify(cur.state, cur.round, msg);
  cur = { ...cur, seen: [...cur.seen, key], state: protocol.store(cur.state, cur.round, msg, parsed) };
  const out: Message[] = [];
  while (protocol.ready(cur.state, cur.round)) {
    const f = protocol.finalize(cur.state, cur.round, rng);
    if (f.kind === 'done') {
      return { kind: 'done', run: { ...cur, state: f.state, finished: true, pending: [] }, out: [...out, ...(f.out ?? [])], result: f.result };
    }
    out.push(...f.out);
    const next = cur.round + 1;
    const waiting = cur.pending.filter((p) => p.round === next);
    cur = { ...cur, round: next, state: f.state, pending: cur.pending.filter((p) => p.round !== next) };
    for (const p of waiting) {
      const m: Message = { from: p.from, to: p.to, round: p.round, payload: hexToBytes(p.payload) };
      parsed = protocol.verify(cur.state, cur.round, m);
      cur = { ...cur, seen: [...cur.seen, `${p.round}:${p.from}:${p.to}`], state: protocol.store(cur.state, cur.round, m, parsed) };
    }
  }
  return { kind: 'continue', run: cur, out };
}

/** Reads a payload from `from` in a verify step: any decoding problem names the sender. */
export function readPayload<T>(kind: string, msg: Message): T {
  try {
    return decodeBlob<T>(kind, msg.payload);
  } catch (err) {
    if (err instanceof InputError) throw new ProtocolAbort('bad_message', [msg.from], `party ${msg.from}: ${err.message}`);
    throw err;
  }
}

/**
 * A run's bytes for sealed storage between rounds: its state's secrets (SecretBytes) are written as
 * secret sections, so these bytes are as secret as the key share and never leave the node.
 */
export function serializeRun<S>(run: Run<S>): Uint8Array {
  return encodeBlob('run', run, { secrets: true });
}

export function deserializeRun<S>(bytes: Uint8Array): Run<S> {
  return decodeBlob<Run<S>>('run', bytes, { secrets: true });
}

/** Checks a party list: distinct positive integers, `me` among them. */
export function checkParties(parties: number[], me: number): void {
  if (!parties.length || parties.some((p) => !Number.isSafeInteger(p) || p < 1 || p > 65535)) throw new InputError('bad_parties', 'party ids are integers from 1 to 65535');
  if (new Set(parties).size !== parties.length) throw new InputError('bad_parties', 'duplicate party id');
  if (!parties.includes(me)) throw new InputError('bad_parties', 'this party is not in the party list');
}

export function checkSessionId(sessionId: string): void {
  if (!/^[0-9a-f]{64}$/.test(sessionId)) throw new InputError('bad_session', 'session id is 32 bytes of hex');
}

/** The per-round maps of a three-round protocol's state: round k's verified messages in `r<k>`, by sender. */
export interface ByRound {
  r1: Record<string, unknown>;
  r2: Record<string, unknown>;
  r3: Record<string, unknown>;
}

/** `store` of a protocol whose state keeps its rounds' verified messages by sender (ByRound). */
export function storeByRound<S extends ByRound>(s: S, round: number, msg: Message, parsed: unknown): S {
  const k = String(msg.from);
  if (round === 1) return { ...s, r1: { ...s.r1, [k]: parsed } };
  if (round === 2) return { ...s, r2: { ...s.r2, [k]: parsed } };
  return { ...s, r3: { ...s.r3, [k]: parsed } };
}
