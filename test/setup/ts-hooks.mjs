// Module hooks of the test processes (registered by ts-loader.mjs): a TypeScript file is transpiled by
// esbuild, types stripped and nothing else, with its line structure kept and an inline source map, so
// that V8 coverage and stack traces map back to the source line by line.
//
// The JavaScript is kept under .tap/ts-cache/, named by a hash of the transform's inputs (esbuild's
// version, the target, the path and the source), so the 232 test processes of a run transpile each
// source once between them instead of once each. A file is written whole under a temporary name and
// renamed into place, so a concurrent reader sees the old state or the complete file; an entry is a pure
// function of its name, so two processes writing the same one write the same bytes.
//
// A bare import of a package from the project's own files resolves to the bundle of packages that
// prebundle.mjs (tap's `before` program) built, when its manifest is there and was made from the
// installed lockfile; anything else resolves as Node resolves it.
import { mkdirSync, readFileSync, readdirSync, statSync, unlinkSync } from 'node:fs';
import { readFile, rename, utimes, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transform, version } from 'esbuild';
import { MANIFEST, lockHash } from './packages.mjs';

const cacheDir = fileURLToPath(new URL('../../.tap/ts-cache/', import.meta.url));
mkdirSync(cacheDir, { recursive: true });
const target = `node${process.versions.node}`;
const WEEK_MS = 7 * 24 * 3600 * 1000;

// Entries unused for a week are removed, once per process and cheaply: a file used today is touched.
try {
  const old = Date.now() - WEEK_MS;
  for (const name of readdirSync(cacheDir)) {
    const path = cacheDir + name;
    if (statSync(path).mtimeMs < old) unlinkSync(path);
  }
} catch {
  // another process removed it first
}

const projectURL = pathToFileURL(fileURLToPath(new URL('../../', import.meta.url))).href;
const depsURL = pathToFileURL(fileURLToPath(new URL('../../.tap/', import.meta.url))).href;
/** The bundled packages by specifier (prebundle.mjs), or none when there is no current bundle. */
const bundled = (() => {
  try {
    const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
    return manifest.lock === lockHash() ? new Map(Object.entries(manifest.entries)) : new Map();
  } catch {
    return new Map();
  }
})();

export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL;
  const url = bundled.get(specifier);
  if (url && parent && parent.startsWith(projectURL) && !parent.startsWith(depsURL) && !parent.includes('/node_modules/')) {
    return { url, format: 'module', shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

async function transpile(path, source) {
  const out = await transform(source, { loader: 'ts', format: 'esm', target, sourcemap: 'inline', sourcefile: path, sourcesContent: false });
  return out.code;
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.(ts|mts)(\?.*)?$/.test(url)) return nextLoad(url, context);
  const path = fileURLToPath(url.split('?')[0]);
  const source = await readFile(path, 'utf8');
  const key = createHash('sha256').update(`${version}\0${target}\0${path}\0`).update(source).digest('hex');
  const cached = `${cacheDir}${key}.js`;
  let code;
  try {
    code = await readFile(cached, 'utf8');
    const now = new Date();
    await utimes(cached, now, now).catch(() => {});
  } catch {
    code = await transpile(path, source);
    const tmp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      await writeFile(tmp, code);
      await rename(tmp, cached);
    } catch {
      // a full or read-only disk: the transpiled code is still used, just not kept
    }
  }
  return { format: 'module', source: code, shortCircuit: true };
}
