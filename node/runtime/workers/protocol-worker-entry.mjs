// The protocol worker thread's entry (protocol-workers.ts): Node 20 does not run the parent's
// `--import tsx` in a worker thread, so the worker registers the TypeScript loader itself before it
// loads the worker's code.
import { register } from 'tsx/esm/api';

register();
await import('./protocol-worker.ts');
