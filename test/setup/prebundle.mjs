// tap's `before` program (.taprc): one esbuild bundle of the packages the project's sources import, which
// the test processes then load in place of node_modules (ts-hooks.mjs `resolve`). An API test file
// imports some 1,100 package modules (viem, fastify, jose, the WebAuthn and CBOR libraries, ...), each
// resolved and loaded through the module hooks; that cost 2 to 3 s of every such file's start. From the
// bundle the same packages are a few dozen files.
//
// What is bundled: every bare import specifier in the project's sources (a literal `from '...'`,
// `import '...'` or `import('...')`) whose package is not EXTERNAL (packages.mjs). All of them are entry
// points of one build with code splitting, so two entries of one package (`viem` and `viem/accounts`)
// share their modules as they do in node_modules. Each entry re-exports exactly the names Node gives
// the package's namespace (for CommonJS, what Node's own export detection finds), so a named import that
// works against node_modules works against the bundle. Sources and coverage are untouched: only
// node_modules is replaced, and `.tap/` is outside tap's coverage.
//
// The bundle is named by its inputs (the lockfile, esbuild's and Node's versions, the external list and
// the specifiers) and rebuilt only when one changes. The manifest names the lockfile's hash, so a test
// process started after an install that changed packages, without this program running again, loads
// node_modules as before. Nothing here can fail the run: without a bundle the tests are slower, not
// different.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';
import { EXTERNAL, MANIFEST, NODE_BUNDLE, lockHash } from './packages.mjs';

const root = resolve(import.meta.dirname, '../..');
const depsDir = dirname(MANIFEST);
const SOURCE_DIRS = ['api', 'bench', 'common', 'coordinator', 'core', 'deploy', 'node', 'proto', 'tee', 'test'];
const SKIP_DIRS = new Set(['node_modules', 'dist', 'data', '.tap', '.git']);
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"\s]+)['"]/g;
const KEEP_MS = 7 * 24 * 3600_000;

/** The package a bare specifier names: `@scope/name` or `name`. */
const packageOf = (spec) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

const isExternal = (name) => EXTERNAL.some((e) => (e.endsWith('/*') ? name.startsWith(e.slice(0, -1)) : name === e));

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|mts|mjs|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Every bare specifier of a package the sources import, not a builtin, not EXTERNAL, not a JSON file. */
function specifiers() {
  const self = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name;
  const found = new Set();
  for (const dir of SOURCE_DIRS) {
    if (!existsSync(join(root, dir))) continue;
    for (const file of sourceFiles(join(root, dir))) {
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
        if (spec.startsWith('.') || spec.startsWith('/') || spec.includes(':') || spec.includes('${') || spec.endsWith('.json')) continue;
        const name = packageOf(spec);
        if (builtinModules.includes(name) || name === self || isExternal(name)) continue;
        found.add(spec);
      }
    }
  }
  return [...found].sort();
}

/** An entry that re-exports `names` of `spec` (its namespace as Node gives it), under the same names. */
function wrapper(spec, names) {
  const named = names.filter((n) => n !== 'default' && n !== 'module.exports');
  const lines = [`import * as ns from ${JSON.stringify(spec)};`];
  if (named.length) {
    lines.push(`const { ${named.map((n, i) => `${JSON.stringify(n)}: _${i}`).join(', ')} } = ns;`);
    lines.push(`export { ${named.map((n, i) => `_${i} as ${JSON.stringify(n)}`).join(', ')} };`);
  }
  if (names.includes('default')) lines.push('export default ns.default;');
  return `${lines.join('\n')}\n`;
}

function prune(keep) {
  const now = Date.now();
  for (const name of readdirSync(depsDir)) {
    const path = join(depsDir, name);
    if (name === 'manifest.json' || path === keep) continue;
    try {
      if (now - statSync(path).mtimeMs > KEEP_MS || name.endsWith('.tmp')) rmSync(path, { recursive: true, force: true });
    } catch {
      // removed meanwhile
    }
  }
}

async function main() {
  mkdirSync(depsDir, { recursive: true });
  const specs = specifiers();
  const lock = lockHash();
  const key = createHash('sha256').update(JSON.stringify([lock, esbuildVersion, NODE_BUNDLE, specs])).digest('hex').slice(0, 16);
  const dir = join(depsDir, key);
  try {
    const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
    if (manifest.key === key && existsSync(dir)) {
      const now = new Date();
      utimesSync(dir, now, now);
      return;
    }
  } catch {
    // no manifest yet
  }
  const started = Date.now();
  const staging = `${dir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(join(staging, 'src'), { recursive: true });
  const entryPoints = {};
  const entries = {};
  for (const [i, spec] of specs.entries()) {
    let names;
    try {
      names = Object.keys(await import(spec));
    } catch {
      continue; // a types-only import, or a package that does not load here: it stays in node_modules
    }
    const name = `e${i}`;
    writeFileSync(join(staging, 'src', `${name}.mjs`), wrapper(spec, names));
    entryPoints[name] = join(staging, 'src', `${name}.mjs`);
    entries[spec] = name;
  }
  await build({
    ...NODE_BUNDLE,
    entryPoints,
    splitting: true,
    outdir: join(staging, 'out'),
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
  });
  rmSync(join(staging, 'src'), { recursive: true });
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  const urls = Object.fromEntries(Object.entries(entries).map(([spec, name]) => [spec, pathToFileURL(join(dir, 'out', `${name}.mjs`)).href]));
  const tmp = `${MANIFEST}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ key, lock, entries: urls }));
  renameSync(tmp, MANIFEST);
  prune(dir);
  process.stderr.write(`# packages bundled for the test processes: ${Object.keys(urls).length} entries in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

try {
  await main();
} catch (err) {
  rmSync(MANIFEST, { force: true });
  process.stderr.write(`# packages not bundled for the test processes (they load from node_modules): ${err instanceof Error ? err.message : String(err)}\n`);
}
// A package imported above to read its names may have left a handle open.
process.exit(0);
