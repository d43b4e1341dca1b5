// The command-line client as ES modules with their dependencies inside, built on first use into
// node_modules/.cache/threshold-custody/cli/ (never committed) and rebuilt when a source it was built
// from changes: no module resolution, so a call starts in a fraction of the time the TypeScript loader
// takes (docs/sdk.md "Start time", `npm run bench`, "cli.start"). The bundle is split where the client
// imports lazily (`await import(...)`): a command reads and compiles only the code it runs, so a platform
// call never compiles the intent, chain or key-export code. Without esbuild (an install without the
// development packages) the client runs from its sources through tsx.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const entry = join(root, 'api', 'sdk', 'cli.ts');
const cacheDir = join(root, 'node_modules', '.cache', 'threshold-custody');
const outDir = join(cacheDir, 'cli');
const manifestPath = join(cacheDir, 'cli.manifest.json');

/**
 * The entry file of the current bundle, or undefined when there is none or a file it was built from (the
 * sources, and package-lock.json for the packages inside it) no longer has the size and modification
 * time it had then.
 */
export function currentBundle() {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch {
    return undefined;
  }
  const file = join(outDir, basename(String(manifest.entry)));
  if (!existsSync(file)) return undefined;
  for (const [f, [size, mtime]] of Object.entries(manifest.inputs ?? {})) {
    let st;
    try {
      st = statSync(join(root, f));
    } catch {
      return undefined;
    }
    if (st.size !== size || st.mtimeMs !== mtime) return undefined;
  }
  return file;
}

/** Builds the bundle (about a second) and returns its entry file; undefined when esbuild is not installed. */
export async function buildBundle() {
  let esbuild;
  try {
    esbuild = await import(createRequire(import.meta.url).resolve('esbuild'));
  } catch {
    return undefined;
  }
  mkdirSync(outDir, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [entry], outdir: outDir, absWorkingDir: root, bundle: true, splitting: true, platform: 'node', format: 'esm', target: 'node20', metafile: true,
    // Every file named by its content: a build never overwrites a file a client started meanwhile is reading.
    entryNames: '[name]-[hash]', chunkNames: 'chunk-[hash]', outExtension: { '.js': '.mjs' },
    // CommonJS dependencies inside an ES module still call require(); made on first call, as one chunk of
    // the lazily loaded ones needs it and making it costs every chunk that starts with it.
    banner: { js: "import { createRequire as __cliRequire } from 'node:module'; let __cliReq; const require = (id) => (__cliReq ??= __cliRequire(import.meta.url))(id);" },
    logLevel: 'error', legalComments: 'none',
  });
  const outputs = Object.entries(result.metafile.outputs);
  // Paths in the metafile are relative to absWorkingDir; each lazily imported module is an entry point too.
  const entryFile = basename(outputs.find(([, o]) => o.entryPoint === 'api/sdk/cli.ts')[0]);
  // The sources by their own times; the packages by the lock file, which an install rewrites.
  const sources = new Set(outputs.flatMap(([, o]) => Object.keys(o.inputs)).filter((f) => !f.includes('node_modules/')));
  const inputs = {};
  for (const f of [...sources, 'package-lock.json']) {
    const st = statSync(join(root, f));
    inputs[f] = [st.size, st.mtimeMs];
  }
  // Renamed into place, so a client started meanwhile reads the old manifest or the new, never half of one.
  const tmp = `${manifestPath}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ entry: entryFile, inputs }));
  renameSync(tmp, manifestPath);
  // Files of earlier builds, once no client can still be starting from them.
  const keep = new Set(outputs.map(([f]) => basename(f)));
  for (const f of readdirSync(outDir)) {
    const p = join(outDir, f);
    if (!keep.has(f) && Date.now() - statSync(p).mtimeMs > 60_000) rmSync(p, { force: true });
  }
  return join(outDir, entryFile);
}
