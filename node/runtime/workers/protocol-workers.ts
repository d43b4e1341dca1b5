// The node's protocol worker threads (issue: protocol steps off the event loop). Long protocol steps
// (a DKG's rounds, the ECDSA OT setup's base OTs) run here, so heartbeats, attaches and the short
// online rounds of signing sessions are never held behind them on the main thread.
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
import { OFFLOADED, type OffloadedName } from './offloaded.ts';
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
  pending: Map<number, { resolve: (r: StepReply & { ok: true }) => void; reject: (e: Error) => void }>;
}

type StepInput = { op: 'start'; params: unknown } | { op: 'deliver'; run: Uint8Array; msg: Message };

export interface WorkerStats {
  size: number;
  live: number;
  inFlight: number;
  steps: number;
  failures: number;
}

export class ProtocolWorkers {
  readonly #slots: (Slot | undefined)[];
  #nextId = 1;
  #steps = 0;
  #failures = 0;
  #closed = false;

  constructor(readonly size: number, private readonly onFailure?: (message: string) => void) {
    if (!Number.isSafeInteger(size) || size < 1 || size > MAX_WORKERS) throw new RangeError(`a protocol worker pool has 1 to ${MAX_WORKERS} workers`);
    this.#slots = Array.from({ length: size }, () => undefined);
  }

  stats(): WorkerStats {
    const live = this.#slots.filter((s) => s !== undefined);
    return { size: this.size, live: live.length, inFlight: live.reduce((n, s) => n + s.pending.size, 0), steps: this.#steps, failures: this.#failures };
  }

  /** One step on the least busy worker (started on first use). */
  step(name: OffloadedName, input: StepInput): Promise<StepReply & { ok: true }> {
    if (this.#closed) return Promise.reject(new Error('the protocol workers are closed'));
    const index = this.#leastBusy();
    const slot = this.#slots[index] ?? this.#spawn(index);
    const id = this.#nextId++;
    const task: StepTask = { id, name, ...input } as StepTask;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      // The run moves to the worker: this thread keeps no copy of its secrets.
      slot.worker.postMessage(task, input.op === 'deliver' ? [input.run.buffer as ArrayBuffer] : []);
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

  #leastBusy(): number {
    let best = 0;
    let load = Infinity;
    this.#slots.forEach((s, i) => {
      const n = s ? s.pending.size : 0;
      if (n < load) [best, load] = [i, n];
    });
    return best;
  }

  #spawn(index: number): Slot {
    const worker = new Worker(WORKER_ENTRY);
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
 * `runProtocol` of an offloaded protocol with its steps on `workers`: the same messages, results and
 * aborts as the inline run. Between steps this thread holds only the run's sealed form, zeroed on dispose.
 */
export function runProtocolOnWorkers<P, R>(workers: ProtocolWorkers, name: OffloadedName, me: number, params: P[], finish: (results: R[]) => Finish | Promise<Finish>): PartyProtocol {
  return driveRuns(me, params.length, workerRuns<R>(workers, name, params), finish);
}

function workerRuns<R>(workers: ProtocolWorkers, name: OffloadedName, params: unknown[]): RunOps<R> {
  const decode = OFFLOADED[name].decodeResult as (bytes: Uint8Array) => R;
  let runs: (Uint8Array | null)[] = [];
  let disposed = false;
  const keep = (i: number, run: Uint8Array | null) => {
    if (disposed) run?.fill(0);
    else runs[i] = run;
  };
  return {
    async start() {
      const started = await Promise.all(params.map((p) => workers.step(name, { op: 'start', params: p })));
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
