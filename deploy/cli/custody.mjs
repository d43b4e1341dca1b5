#!/usr/bin/env node
// `custody`, the command-line client (the package's bin; `npm run cli` runs the same): from its
// one-file bundle when that is current, building it first when it is not (cli-bundle.mjs), else from
// the sources through tsx.
import { pathToFileURL } from 'node:url';
import { buildBundle, bundleIsCurrent, bundlePath, entry } from './cli-bundle.mjs';

let file = bundlePath;
if (!bundleIsCurrent()) {
  let built = false;
  try {
    built = await buildBundle();
  } catch (err) {
    // A failed build (a read-only install, say) costs start time, never the command.
    process.stderr.write(`custody: running from the sources (no bundle: ${err.message.split('\n')[0]})\n`);
  }
  if (!built) {
    const { register } = await import('tsx/esm/api');
    register();
    file = entry;
  }
}
await import(pathToFileURL(file).href);
