// The image worker thread's entry (image-reencode.ts): Node 20 does not run the parent's `--import tsx`
// in a worker thread, so the worker registers the TypeScript loader itself before it loads the worker's
// code (as node/runtime/workers/protocol-worker-entry.mjs does).
import { register } from 'tsx/esm/api';

register();
await import('./image-worker.ts');
