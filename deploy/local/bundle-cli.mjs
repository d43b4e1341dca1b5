#!/usr/bin/env node
// The command-line client as one ES module, dist/cli.mjs, with its dependencies inside (`npm start`
// makes it after its build): one file to read and no module resolution, so a call starts in about a fifth of
// a second where the per-file build takes over half a second (`npm run bench`, "cli.start").
// `npm run cli` (run.mjs) runs it when the build is fresh.
import { build } from 'esbuild';
import { join } from 'node:path';
import { dist, root } from './build-state.mjs';

export async function bundleCli() {
  await build({
    entryPoints: [join(root, 'api', 'sdk', 'cli.ts')],
    outfile: join(dist, 'cli.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // CommonJS dependencies inside an ES module still call require().
    banner: { js: "import { createRequire as __cliRequire } from 'node:module'; const require = __cliRequire(import.meta.url);" },
    logLevel: 'warning',
    legalComments: 'none',
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await bundleCli();
