// A protocol worker's entry for tests (protocol-workers.ts takes it in place of its own): the real
// worker (the node's bundled one that CUSTODY_TEST_WORKER_ENTRY names: test/support/program.ts
// `protocolWorkerBundle`), whose task listener is wrapped to act on cue before each task.
// CUSTODY_TEST_WORKER_CUE, read when the worker starts:
//   die:<file>   the first ECDSA presigning step given a payload ends this worker (once: <file> marks it);
//   gate:<file>  every ECDSA presigning step given a payload waits until <file> exists.
import { existsSync, writeFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

const [cue, file] = (process.env.CUSTODY_TEST_WORKER_CUE ?? '').split(/:(.*)/s);
const pause = new Int32Array(new SharedArrayBuffer(4));

function onCue(task) {
  if (task.name !== 'ecdsa-presign' || task.op !== 'deliver' || !file) return;
  if (cue === 'die' && !existsSync(file)) {
    writeFileSync(file, 'died');
    // Uncaught: the thread ends as a crash would end it.
    throw new Error('the protocol worker dies on cue');
  }
  if (cue === 'gate') while (!existsSync(file)) Atomics.wait(pause, 0, 0, 5);
}

// The real worker's listener is the port's only one (a listener starts the port: one of ours attached
// before it would take the tasks that arrive while the real worker loads).
const on = parentPort.on.bind(parentPort);
parentPort.on = (event, listener) => on(event, event === 'message' ? (task) => (onCue(task), listener(task)) : listener);

await import(process.env.CUSTODY_TEST_WORKER_ENTRY);
