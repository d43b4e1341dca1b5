// A protocol worker thread (protocol-workers.ts): runs one step of an offloaded protocol per task and
// keeps nothing between tasks. The run arrives in its sealed-storage form, transferred (not copied), and
// is zeroed once read; the new run and a result leave the same way.
import { parentPort } from 'node:worker_threads';
import { deliver, deserializeRun, serializeRun, startRun } from '../../protocols/round/machine.ts';
import { systemRng } from '../protocols/run-protocol.ts';
import { OFFLOADED, isOffloadedName, type Offloadable } from './offloaded.ts';
import { describeError, type StepReply, type StepTask } from './worker-messages.ts';

function execute(task: StepTask): StepReply {
  if (!isOffloadedName(task.name)) throw new Error(`protocol ${task.name} does not run on a worker`);
  // One entry at a time: its protocol, params and result types agree, which a union of entries cannot show.
  const { protocol, encodeResult } = OFFLOADED[task.name] as Offloadable<unknown, unknown>;
  if (task.op === 'start') {
    const { run, out } = startRun(protocol, task.params, systemRng);
    return { id: task.id, ok: true, run: serializeRun(run), out, result: null };
  }
  const run = deserializeRun(task.run);
  task.run.fill(0);
  const step = deliver(protocol, run, task.msg, systemRng);
  if (step.kind === 'done') return { id: task.id, ok: true, run: null, out: step.out, result: encodeResult(step.result) };
  return { id: task.id, ok: true, run: serializeRun(step.run), out: step.out, result: null };
}

const port = parentPort;
if (!port) throw new Error('protocol-worker.ts runs as a worker thread');
port.on('message', (task: StepTask) => {
  let reply: StepReply;
  try {
    reply = execute(task);
  } catch (err) {
    reply = { id: task.id, ok: false, error: describeError(err) };
  }
  const transfer = reply.ok ? [reply.run, reply.result].filter((b): b is Uint8Array => b !== null).map((b) => b.buffer as ArrayBuffer) : [];
  port.postMessage(reply, transfer);
});
