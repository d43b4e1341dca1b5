#!/usr/bin/env node
// `npm run cli`, `npm run admin`, `npm run node` and the other commands of package.json: runs the
// TypeScript entry named first (`node/main.ts`) with the arguments after it, from the build in dist/
// when `npm start` made it and no source is newer (build-state.mjs), else from the sources through tsx.
// The code is the same either way; from dist/ a command starts in about a third of the time.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildIsFresh, dist, root } from './build-state.mjs';

const [entry, ...args] = process.argv.slice(2);
if (!entry || !entry.endsWith('.ts')) {
  console.error('usage: node deploy/local/run.mjs <entry>.ts [arguments]');
  process.exit(2);
}
// The command-line client has a launcher of its own, which runs it from a one-file bundle it keeps
// current (deploy/cli/custody.mjs, the package's `custody` bin).
if (entry === 'api/sdk/cli.ts') {
  process.argv = [process.argv[0], join(root, 'deploy', 'cli', 'custody.mjs'), ...args];
  await import('../cli/custody.mjs');
} else {
  const built = join(dist, entry.replace(/\.ts$/, '.js'));
  const fromDist = existsSync(built) && buildIsFresh();
  const file = fromDist ? built : join(root, entry);
  // The entry reads its arguments from process.argv.slice(2), as when started directly.
  process.argv = [process.argv[0], file, ...args];
  if (!fromDist) {
    const { register } = await import('tsx/esm/api');
    register();
  }
  await import(pathToFileURL(file).href);
}
