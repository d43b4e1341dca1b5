// A protocol worker thread (protocol-workers.ts): runs one step of an offloaded protocol per task and
// keeps nothing between tasks. The run (and, for a protocol whose parameters hold secrets, the start
// step's parameters) arrives in its sealed-storage form, transferred (not copied), and is zeroed once
// read; the new run and a result leave the same way. The secrets the step decoded are zeroed once its
// reply is encoded, so none outlives the task in this thread's memory.
import { parentPort } from 'node:worker_threads';
import { SecretBytes } from '../../../core/codec/secret.ts';
import { deliver, deserializeRun, serializeRun, startRun } from '../../protocols/round/machine.ts';
import { systemRng } from '../protocols/run-protocol.ts';
import { OFFLOADED, isOffloadedName, type Offloadable } from './offloaded.ts';
import { describeError, type StepReply, type StepTask } from './worker-messages.ts';

/** Zeroes every SecretBytes in a plain-data value (parameters, a run's state); bytes that are not secret are left. */
function wipe(value: unknown, seen = new Set<object>()): void {
  if (typeof value !== 'object' || value === null || seen.has(value) || value instanceof Uint8Array) return;
  seen.add(value);
  if (value instanceof SecretBytes) {
    value.zeroize();
    return;
  }
  for (const v of Object.values(value)) wipe(v, seen);
}

function execute(task: StepTask, decoded: unknown[]): StepReply {
  if (!isOffloadedName(task.name)) throw new Error(`protocol ${task.name} does not run on a worker`);
  // One entry at a time: its protocol, params and result types agree, which a union of entries cannot show.
  const { protocol, encodeResult, decodeParams } = OFFLOADED[task.name] as Offloadable<unknown, unknown>;
  if (task.op === 'start') {
    let params = task.params;
    if (decodeParams) {
      const sealed = params;
      if (!(sealed instanceof Uint8Array)) throw new Error(`protocol ${task.name} takes sealed parameters`);
      params = decodeParams(sealed);
      sealed.fill(0);
      decoded.push(params);
    }
    const { run, out } = startRun(protocol, params, systemRng);
    decoded.push(run.state);
    return { id: task.id, ok: true, run: serializeRun(run), out, result: null };
  }
  const run = deserializeRun(task.run);
  task.run.fill(0);
  decoded.push(run.state);
  const step = deliver(protocol, run, task.msg, systemRng);
  decoded.push(step.run.state);
  if (step.kind === 'done') return { id: task.id, ok: true, run: null, out: step.out, result: encodeResult(step.result) };
  return { id: task.id, ok: true, run: serializeRun(step.run), out: step.out, result: null };
}

const port = parentPort;
if (!port) throw new Error('protocol-worker.ts runs as a worker thread');
port.on('message', (task: StepTask) => {
  let reply: StepReply;
  const decoded: unknown[] = [];
  try {
    reply = execute(task, decoded);
  } catch (err) {
    reply = { id: task.id, ok: false, error: describeError(err) };
  } finally {
    if (task.op === 'start' && task.params instanceof Uint8Array) task.params.fill(0);
    if (task.op === 'deliver') task.run.fill(0);
    // The reply holds its own bytes: what the step decoded is done with.
    wipe(decoded);
  }
  const transfer = reply.ok ? [reply.run, reply.result].filter((b): b is Uint8Array => b !== null).map((b) => b.buffer as ArrayBuffer) : [];
  port.postMessage(reply, transfer);
});
