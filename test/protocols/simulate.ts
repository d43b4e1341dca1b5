// In-memory network for protocol tests: every party in one process, a seeded RNG per party, and rules
// that let a test replace one honest party's outgoing messages with crafted ones.
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { deliver, startRun, deserializeRun, serializeRun, type Message, type Protocol, type Rng, type Run } from '../../node/protocols/round/machine.ts';
import { ProtocolAbort } from '../../core/errors/protocol-errors.ts';

/** Deterministic RNG: SHA-256 in counter mode over a seed. For tests only. */
export function seededRng(seed: string): Rng {
  let counter = 0;
  const key = utf8ToBytes(seed);
  return (n: number) => {
    const out = new Uint8Array(n);
    for (let off = 0; off < n; off += 32) {
      const block = sha256(new Uint8Array([...key, ...utf8ToBytes(String(counter++))]));
      out.set(block.subarray(0, Math.min(32, n - off)), off);
    }
    return out;
  };
}

/** A sent message; `only` restricts a broadcast to some recipients (how an equivocator sends). */
export type SimMessage = Message & { only?: number[] };

/** Rewrites the messages a party sends (the malicious party); return [] to drop. */
export type Tamper = (msg: Message) => SimMessage[];

export interface SimResult<R> {
  results: Map<number, R>;
  aborts: Map<number, ProtocolAbort>;
  /** Every message sent, for transcript checks. */
  transcript: Message[];
}

export interface SimOptions {
  tamper?: Map<number, Tamper>;
  /** Serialize and restore every run after each step, to prove runs resume from their bytes. */
  roundTrip?: boolean;
  seed?: string;
  /** Per-party RNGs replacing the seeded ones (to inject vector randomness). */
  rngs?: Map<number, Rng>;
  /** Sees every party's run after its start and after each delivery (to inspect the states). */
  observe?: (party: number, run: Run<unknown>) => void;
}

export function simulate<P, S, R>(protocol: Protocol<P, S, R>, params: Map<number, P>, opts: SimOptions = {}): SimResult<R> {
  const runs = new Map<number, Run<S>>();
  const rngs = new Map<number, Rng>();
  const results = new Map<number, R>();
  const aborts = new Map<number, ProtocolAbort>();
  const transcript: Message[] = [];
  const queue: SimMessage[] = [];
  const ids = [...params.keys()];
  const send = (out: Message[]) => {
    for (const m of out) {
      const tampered = opts.tamper?.get(m.from)?.(m) ?? [m];
      for (const t of tampered) {
        transcript.push(t);
        queue.push(t);
      }
    }
  };
  for (const [id, p] of params) {
    const rng = opts.rngs?.get(id) ?? seededRng(`${opts.seed ?? 'sim'}/${id}`);
    rngs.set(id, rng);
    const { run, out } = startRun(protocol, p, rng);
    runs.set(id, run);
    opts.observe?.(id, run);
    send(out);
  }
  while (queue.length) {
    const m = queue.shift()!;
    const targets = (m.to === 'all' ? ids.filter((i) => i !== m.from) : [m.to]).filter((i) => !m.only || m.only.includes(i));
    for (const t of targets) {
      if (results.has(t) || aborts.has(t) || !runs.has(t)) continue;
      try {
        let run = runs.get(t)!;
        if (opts.roundTrip) run = deserializeRun<S>(serializeRun(run));
        const { only: _only, ...msg } = m;
        const step = deliver(protocol, run, msg, rngs.get(t)!);
        runs.set(t, step.run);
        opts.observe?.(t, step.run);
        send(step.out);
        if (step.kind === 'done') results.set(t, step.result);
      } catch (err) {
        if (err instanceof ProtocolAbort) aborts.set(t, err);
        else throw err;
      }
    }
  }
  return { results, aborts, transcript };
}
