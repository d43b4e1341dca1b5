#!/usr/bin/env node
// `npm run build:browser`: the browser package (api/sdk/browser/index.ts) bundled by esbuild into one ESM
// file for browsers, dist-browser/bff-browser.js (never committed), which a customer's BFF serves to
// its pages (docs/platform/bff.md "The browser package"). The sample BFF (examples/bff/) bundles it the
// same way at start. Node built-ins cannot enter it: the platform is `browser`, so esbuild fails on one.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const BROWSER_ENTRY = join(root, 'api', 'sdk', 'browser', 'index.ts');

/** The bundle's text and esbuild's metafile (its inputs and the imports left in its output). */
export async function bundleBrowserPackage({ minify = false } = {}) {
  const esbuild = await import('esbuild');
  const r = await esbuild.build({
    entryPoints: [BROWSER_ENTRY], bundle: true, format: 'esm', platform: 'browser', target: 'es2022',
    write: false, metafile: true, minify, legalComments: 'none', logLevel: 'silent',
  });
  return { text: r.outputFiles[0].text, metafile: r.metafile };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  const out = at > 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : join(root, 'dist-browser');
  const { text } = await bundleBrowserPackage({ minify: process.argv.includes('--minify') });
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'bff-browser.js'), text);
  process.stdout.write(`${join(out, 'bff-browser.js')} (${text.length} bytes)\n`);
}
