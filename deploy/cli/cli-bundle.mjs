// The command-line client as one ES module with its dependencies inside, built on first use into
// node_modules/.cache/threshold-custody/ (never committed) and rebuilt when a source it was built from
// changes: one file to read and no module resolution, so a call starts in a fraction of the time the
// TypeScript loader takes (docs/sdk.md "Start time", `npm run bench`, "cli.start"). Without esbuild (an
// install without the development packages) the client runs from its sources through tsx.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const entry = join(root, 'api', 'sdk', 'cli.ts');
const cacheDir = join(root, 'node_modules', '.cache', 'threshold-custody');
export const bundlePath = join(cacheDir, 'cli.mjs');
const inputsPath = join(cacheDir, 'cli.inputs.json');

/**
 * True when the bundle exists and every file it was built from (the sources, and package-lock.json for
 * the packages inside it) has the size and modification time it had then.
 */
export function bundleIsCurrent() {
  let inputs;
  try {
    inputs = JSON.parse(readFileSync(inputsPath, 'utf8'));
  } catch {
    return false;
  }
  if (!existsSync(bundlePath)) return false;
  for (const [file, [size, mtime]] of Object.entries(inputs)) {
    let st;
    try {
      st = statSync(join(root, file));
    } catch {
      return false;
    }
    if (st.size !== size || st.mtimeMs !== mtime) return false;
  }
  return true;
}

/** Builds the bundle (about a second); false when esbuild is not installed. */
export async function buildBundle() {
  let esbuild;
  try {
    esbuild = await import(createRequire(import.meta.url).resolve('esbuild'));
  } catch {
    return false;
  }
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${bundlePath}.${process.pid}.tmp`;
  const result = await esbuild.build({
    entryPoints: [entry], outfile: tmp, bundle: true, platform: 'node', format: 'esm', target: 'node20', metafile: true,
    // CommonJS dependencies inside an ES module still call require().
    banner: { js: "import { createRequire as __cliRequire } from 'node:module'; const require = __cliRequire(import.meta.url);" },
    logLevel: 'error', legalComments: 'none',
  });
  // The sources by their own times; the packages by the lock file, which an install rewrites.
  const files = [...Object.keys(result.metafile.inputs).filter((f) => !f.includes('node_modules/')), 'package-lock.json'];
  const inputs = {};
  for (const f of files) {
    const st = statSync(join(root, f));
    inputs[f] = [st.size, st.mtimeMs];
  }
  // Renamed into place, so a client started meanwhile never reads half a file.
  renameSync(tmp, bundlePath);
  writeFileSync(inputsPath, JSON.stringify(inputs));
  return true;
}
