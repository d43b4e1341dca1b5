#!/usr/bin/env node
// `npm run build:sdk`: the SDK (api/sdk/index.ts and what it imports of core/ and common/) compiled to
// JavaScript with type declarations in dist-sdk/ (never committed), as a package of its own that a
// customer's project installs (`npm pack dist-sdk`, or a file: dependency on the folder) and imports
// as `threshold-custody/sdk` (docs/sdk.md "Installing"). Its dependencies are the packages the
// compiled files import, at the versions this repository pins.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
// `-- --out <dir>` builds elsewhere (the packaging test builds into a temporary folder).
const at = process.argv.indexOf('--out');
const out = at > 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : join(root, 'dist-sdk');
rmSync(out, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.sdk.json'), '--outDir', out], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

// Declarations keep the sources' `.ts` specifiers; a consumer resolves the emitted `.js` (with its `.d.ts`).
const relativeTs = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g;
const bare = new Set();
for (const f of files(out)) {
  const text = readFileSync(f, 'utf8');
  if (f.endsWith('.d.ts')) writeFileSync(f, text.replace(relativeTs, '$1$2.js$3'));
  if (!f.endsWith('.js')) continue;
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^'"\n;]*\bfrom\s*['"]([^'"]+)['"]/gm), ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm), ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  for (const s of specifiers) if (!s.startsWith('.') && !s.startsWith('node:')) bare.add(s);
}

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const name = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
const dependencies = Object.fromEntries([...new Set([...bare].map(name))].sort().map((d) => {
  const version = pkg.dependencies?.[d];
  if (!version) throw new Error(`the SDK imports ${d}, which is not a dependency in package.json`);
  return [d, version];
}));
writeFileSync(join(out, 'package.json'), JSON.stringify({
  name: pkg.name,
  version: pkg.version,
  description: 'Customer SDK of the threshold-custody vault API: typed client, intent building and signing, request signing, webhook receivers',
  type: 'module',
  engines: pkg.engines,
  exports: {
    './sdk': { types: './api/sdk/index.d.ts', default: './api/sdk/index.js' },
    './package.json': './package.json',
  },
  dependencies,
}, null, 2) + '\n');
console.log(`${out}: ${files(out).length} files; dependencies ${Object.keys(dependencies).join(', ')}`);
