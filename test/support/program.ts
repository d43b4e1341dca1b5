// How the tests start the project's programs (a node, a coordinator, the API, the CLIs) as processes:
// from one esbuild bundle of the entry's sources, packages left to node_modules, instead of through the
// tsx loader. The code is the same; what changes is what it costs to start. Through tsx a node process
// spent about 4.5 s of CPU before it could attach, and each protocol worker thread 0.7 s, most of it
// resolving and loading a few hundred TypeScript files through the loader's hooks; from a bundle, about
// 2.2 s and 0.15 s. The suite starts several hundred such processes on two cores.
//
// A bundle goes to `.tap/programs/<hash of its contents>/` inside the project, so that its packages resolve
// from the project's node_modules and its `package.json` scope (an ES module) is the project's. The name
// is the content hash, so test processes running at once share one copy, and a changed source makes a new
// one. The protocol worker's bundle sits beside each program's as `protocol-worker.js`, where a compiled
// node looks for it (node/runtime/workers/protocol-workers.ts).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { buildSync } from 'esbuild';

const root = resolve(import.meta.dirname, '../..');
const programsDir = join(root, '.tap', 'programs');
const workerEntry = join(root, 'node/runtime/workers/protocol-worker.ts');
const built = new Map<string, string>();
/**
 * Bundles not used for this long are removed when a test process first builds one (a bundle in use is
 * touched each time a test process takes it; content-named, so a stale one is never taken again).
 */
const keepMs = 7 * 24 * 3600_000;

/** The arguments that make `node` run `entry` (a path from the project root, or absolute). */
export function programArgs(entry: string): string[] {
  const path = isAbsolute(entry) ? entry : join(root, entry);
  let file = built.get(path);
  if (!file) {
    file = bundle(path);
    built.set(path, file);
  }
  return [file];
}

function bundle(entry: string): string {
  if (built.size === 0) prune();
  const name = basename(entry).replace(/\.[mc]?ts$/, '');
  const result = buildSync({
    entryPoints: { [name]: entry, 'protocol-worker': workerEntry },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    packages: 'external',
    write: false,
    outdir: '/',
    logLevel: 'silent',
  });
  const hash = createHash('sha256');
  for (const f of result.outputFiles) hash.update(f.path).update(f.contents);
  const dir = join(programsDir, hash.digest('hex').slice(0, 16));
  if (!touch(dir)) {
    const staging = `${dir}.${process.pid}.tmp`;
    mkdirSync(staging, { recursive: true });
    for (const f of result.outputFiles) writeFileSync(join(staging, basename(f.path)), f.contents);
    try {
      renameSync(staging, dir);
    } catch {
      // Another test process wrote the same bundle first.
      rmSync(staging, { recursive: true, force: true });
    }
  }
  return join(dir, `${name}.js`);
}

/** Marks an existing bundle as used now; false when there is none. */
function touch(dir: string): boolean {
  try {
    const now = new Date();
    utimesSync(dir, now, now);
    return true;
  } catch {
    return false;
  }
}

function prune(): void {
  if (!existsSync(programsDir)) return;
  const now = Date.now();
  for (const d of readdirSync(programsDir)) {
    const p = join(programsDir, d);
    try {
      if (now - statSync(p).mtimeMs > keepMs) rmSync(p, { recursive: true, force: true });
    } catch {
      // removed by another process meanwhile
    }
  }
}
