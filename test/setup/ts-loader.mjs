// Loaded into every test process (.taprc node-arg): TypeScript through ts-hooks.mjs. tap's own
// TypeScript plugin is off; it transpiled through ts-node, which made the suite about a third slower.
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
