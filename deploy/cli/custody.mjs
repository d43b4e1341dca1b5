#!/usr/bin/env node
// `custody`, the command-line client (the package's bin; `npm run cli` runs the same): from its bundle
// when that is current, building it first when it is not (cli-bundle.mjs), else from the sources
// through tsx.
import { pathToFileURL } from 'node:url';
import { buildBundle, currentBundle, entry } from './cli-bundle.mjs';

let file = currentBundle();
if (file === undefined) {
  try {
    file = await buildBundle();
  } catch (err) {
    // A failed build (a read-only install, say) costs start time, never the command.
    process.stderr.write(`custody: running from the sources (no bundle: ${err.message.split('\n')[0]})\n`);
  }
  if (file === undefined) {
    const { register } = await import('tsx/esm/api');
    register();
    file = entry;
  }
}
await import(pathToFileURL(file).href);
