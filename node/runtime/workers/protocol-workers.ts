// The node's protocol worker threads (issue: protocol steps off the event loop). Long protocol steps
// (a DKG's rounds, the ECDSA OT setup's base OTs, ECDSA presigning) run here, so heartbeats, attaches
// and the short online rounds of signing sessions are never held behind them on the main thread.
//
// Workers keep nothing between tasks: each step carries its run in the sealed-storage form and gets the
// next one back (offloaded.ts), so any worker takes any step, a session's steps stay in order because the
// session host delivers one payload at a time, and a worker that dies loses no session state but the
// step it was running (that session fails; the next task gets a new worker).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Message } from '../../protocols/round/machine.ts';
import type { Finish, RunOps } from '../protocols/run-protocol.ts';
import { driveRuns } from '../protocols/run-protocol.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import { OFFLOADED, type Offloadable, type OffloadedName } from './offloaded.ts';
import { rebuildError, type StepReply, type StepTask } from './worker-messages.ts';

/**
 * Run from the TypeScript source (npm start, the tests), a worker registers the TypeScript loader first
 * (protocol-worker-entry.mjs); the compiled build (dist/, the container images) runs the compiled worker.
 */
const WORKER_ENTRY = import.meta.url.endsWith('.ts') ? new URL('./protocol-worker-entry.mjs', import.meta.url) : new URL('./protocol-worker.js', import.meta.url);

/** The default pool size: one worker per core beyond the main thread's, at least one, at most four. */
export const defaultWorkerCount = (cores = availableParallelism()) => Math.max(1, Math.min(4, cores - 1));

/** The most workers a node may be given (NODE_PROTOCOL_WORKERS). */
export const MAX_WORKERS = 64;

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve: (r: StepReply & { ok: true }) => void; reject: (e: Error) => void; long: boolean }>;
}

type StepInput = { op: 'start'; params: unknown } | { op: 'deliver'; run: Uint8Array; msg: Message };

export interface WorkerStats {
  size: number;
  live: number;
  inFlight: number;
  /** The short lane: whether started (not counted in `live`), and the steps in flight there (counted in `inFlight`). */
  laneLive: boolean;
  laneInFlight: number;
  steps: number;
  failures: number;
}

/**
 * The pool: `size` workers for every step, and one more, the short lane, started with the first long
 * step (a DKG round, a base-OT step) and used only when a short step (offloaded.ts `short`: ECDSA
 * presigning) finds every worker with a long one in flight, so a signing's presigning never queues for
 * seconds behind a key creation's step.
 */
export class ProtocolWorkers {
  /** `size` workers, then the short lane. */
  readonly #slots: (Slot | undefined)[];
  #nextId = 1;
  #steps = 0;
  #failures = 0;
  #closed = false;

  /**
   * `entry` replaces the worker's script (WORKER_ENTRY), for tests only: one that loads the real worker
   * and dies on cue shows what a lost worker costs.
   */
  constructor(readonly size: number, private readonly onFailure?: (message: string) => void, private readonly entry: URL = WORKER_ENTRY) {
    if (!Number.isSafeInteger(size) || size < 1 || size > MAX_WORKERS) throw new RangeError(`a protocol worker pool has 1 to ${MAX_WORKERS} workers`);
    this.#slots = Array.from({ length: size + 1 }, () => undefined);
  }

  stats(): WorkerStats {
    const all = this.#slots.filter((s) => s !== undefined);
    const lane = this.#slots[this.size];
    return {
      size: this.size, live: this.#slots.slice(0, this.size).filter((s) => s !== undefined).length, inFlight: all.reduce((n, s) => n + s.pending.size, 0),
      laneLive: lane !== undefined, laneInFlight: lane?.pending.size ?? 0, steps: this.#steps, failures: this.#failures,
    };
  }

  /** One step on the least busy worker (started on first use); a short step never behind a long one. */
  step(name: OffloadedName, input: StepInput): Promise<StepReply & { ok: true }> {
    if (this.#closed) return Promise.reject(new Error('the protocol workers are closed'));
    const long = !(OFFLOADED[name] as Offloadable<unknown, unknown>).short;
    const index = this.#leastBusy(long);
    const slot = this.#slots[index] ?? this.#spawn(index);
    // A long step starts the short lane too, so that the first short step behind it finds the lane
    // loaded (a worker takes hundreds of milliseconds to start).
    if (long && !this.#slots[this.size]) this.#spawn(this.size);
    const id = this.#nextId++;
    // The run (or sealed parameters) moves to the worker: this thread keeps no copy of its secrets.
    const moved = input.op === 'deliver' ? owned(input.run) : input.params instanceof Uint8Array ? owned(input.params) : undefined;
    const task = (input.op === 'deliver' ? { id, name, op: 'deliver', run: moved, msg: input.msg } : { id, name, op: 'start', params: moved ?? input.params }) as StepTask;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject, long });
      slot.worker.postMessage(task, moved ? [moved.buffer as ArrayBuffer] : []);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const slots = this.#slots.splice(0, this.#slots.length, ...this.#slots.map(() => undefined));
    await Promise.all(slots.map(async (s) => {
      if (!s) return;
      this.#fail(s, new Error('the protocol workers were closed'));
      await s.worker.terminate();
    }));
  }

  /** A long step: the least busy worker. A short one: the least busy without a long step, else the short lane. */
  #leastBusy(long: boolean): number {
    let best = this.size;
    let load = Infinity;
    for (let i = 0; i < this.size; i++) {
      const s = this.#slots[i];
      if (!long && s && [...s.pending.values()].some((p) => p.long)) continue;
      const n = s ? s.pending.size : 0;
      if (n < load) [best, load] = [i, n];
    }
    return best;
  }

  #spawn(index: number): Slot {
    const worker = new Worker(this.entry);
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    this.#slots[index] = slot;
    const lost = (why: string) => {
      if (this.#slots[index] === slot) this.#slots[index] = undefined;
      if (slot.pending.size) {
        this.#failures++;
        this.onFailure?.(why);
      }
      this.#fail(slot, new Error(`protocol worker ${why}`));
    };
    worker.on('message', (reply: StepReply) => {
      const waiting = slot.pending.get(reply.id);
      if (!waiting) return;
      slot.pending.delete(reply.id);
      this.#steps++;
      if (reply.ok) waiting.resolve(reply);
      else waiting.reject(rebuildError(reply.error));
    });
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    return slot;
  }

  #fail(slot: Slot, err: Error): void {
    for (const p of slot.pending.values()) p.reject(err);
    slot.pending.clear();
  }
}

/**
 * Bytes that own their whole buffer, to transfer: these, or (for a view into a larger buffer, which a
 * transfer would hand over whole) a copy, the view zeroed.
 */
function owned(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes;
  const copy = bytes.slice();
  bytes.fill(0);
  return copy;
}

/**
 * `runProtocol` of an offloaded protocol with its steps on `workers`: the same messages, results and
 * aborts as the inline run. Between steps this thread holds only the run's sealed form, zeroed on dispose.
 */
export function runProtocolOnWorkers<P, R>(workers: ProtocolWorkers, name: OffloadedName, me: number, params: P[], finish: (results: R[]) => Finish | Promise<Finish>): PartyProtocol {
  return driveRuns(me, params.length, workerRuns<R>(workers, name, params), finish);
}

function workerRuns<R>(workers: ProtocolWorkers, name: OffloadedName, params: unknown[]): RunOps<R> {
  const entry = OFFLOADED[name] as Offloadable<unknown, R>;
  const decode = entry.decodeResult;
  // Parameters that hold secrets cross in their sealed form, made when the step is sent (never kept).
  const sendable = (p: unknown) => (entry.encodeParams ? entry.encodeParams(p) : p);
  let runs: (Uint8Array | null)[] = [];
  let disposed = false;
  const keep = (i: number, run: Uint8Array | null) => {
    if (disposed) run?.fill(0);
    else runs[i] = run;
  };
  return {
    async start() {
      const started = await Promise.all(params.map((p) => workers.step(name, { op: 'start', params: sendable(p) })));
      started.forEach((s, i) => keep(i, s.run));
      return started.map((s) => s.out);
    },
    async deliver(i, msg) {
      const run = runs[i];
      if (!run) throw new Error('a payload for a run that is finished or disposed');
      runs[i] = null;
      const step = await workers.step(name, { op: 'deliver', run, msg });
      if (step.result) {
        const result = decode(step.result);
        step.result.fill(0);
        return { out: step.out, done: true, result };
      }
      keep(i, step.run);
      return { out: step.out, done: false };
    },
    dispose() {
      disposed = true;
      for (const r of runs) r?.fill(0);
      runs = [];
    },
  };
}
