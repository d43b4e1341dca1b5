// How the tests start the project's programs (a node, a coordinator, the API, the CLIs) as processes:
// from one esbuild bundle of the entry's sources and of the packages they use, instead of through the
// tsx loader. The code is the same; what changes is what it costs to start. Through tsx a node process
// spent about 4.5 s of CPU before it could attach, and each protocol worker thread 0.7 s, most of it
// resolving and loading a few hundred TypeScript files through the loader's hooks; from a bundle of the
// sources alone, about 2.2 s and 0.15 s; with the packages in the bundle too (viem alone is some 400
// ES modules), about 1 s. The suite starts several hundred such processes on two cores.
//
// Packages stay in node_modules when test/setup/packages.mjs says so (`EXTERNAL`: native addons, packages
// that load files beside their own code, test tooling).
//
// Building a bundle with its packages takes about a second, so a test process first looks for the
// bundle an earlier one built from the same inputs: `<entry>.inputs.json` beside the bundles lists every
// input file with its size and modification time, and a bundle is reused only when all still match.
//
// A bundle goes to `.tap/programs/<hash of its contents>/` inside the project, so that its packages resolve
// from the project's node_modules and its `package.json` scope (an ES module) is the project's. The name
// is the content hash, so test processes running at once share one copy, and a changed source makes a new
// one. The protocol worker's bundle sits beside each program's as `protocol-worker.js`, where a compiled
// node looks for it (node/runtime/workers/protocol-workers.ts).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync, version as esbuildVersion } from 'esbuild';
import { NODE_BUNDLE } from '../setup/packages.mjs';

const root = resolve(import.meta.dirname, '../..');
const programsDir = join(root, '.tap', 'programs');
const workerEntry = join(root, 'node/runtime/workers/protocol-worker.ts');
const built = new Map<string, string>();
/**
 * Bundles not used for this long are removed when a test process first builds one (a bundle in use is
 * touched each time a test process takes it; content-named, so a stale one is never taken again).
 */
const keepMs = 7 * 24 * 3600_000;

/**
 * What a test starts a program with: `env -u NODE_OPTIONS`, then Node (`programArgs`). tap's process
 * tracking (@tapjs/processinfo) adds its loader to NODE_OPTIONS of every process a test process starts,
 * and so to every process and worker thread those start in turn: its module hooks doubled a node's CPU
 * time to start (about 0.55 s without, 1.05 s with, one run here) and recorded nothing used, since
 * coverage is that of the test processes alone (test/setup/child-coverage.mjs).
 */
export const PROGRAM_LAUNCHER = '/usr/bin/env';

/**
 * The arguments that make `PROGRAM_LAUNCHER` run `entry` (a path from the project root, or absolute)
 * with Node, `nodeFlags` given to Node; the program's own arguments follow them.
 */
export function programArgs(entry: string, nodeFlags: readonly string[] = []): string[] {
  const path = isAbsolute(entry) ? entry : join(root, entry);
  let file = built.get(path);
  if (!file) {
    file = bundle(path);
    built.set(path, file);
  }
  return untracked(process.execPath, [...nodeFlags, file]);
}

/**
 * The protocol worker bundled beside a node's bundle, for a test that runs a node's worker pool in its own
 * process (node/runtime/workers/protocol-workers.ts takes the entry): the same code as the TypeScript
 * entry, without a TypeScript loader registered and the worker's sources compiled in every worker.
 */
export function protocolWorkerBundle(): URL {
  return pathToFileURL(join(dirname(programArgs('node/main.ts').at(-1)!), 'protocol-worker.js'));
}

/** The arguments that make `PROGRAM_LAUNCHER` run `command` with `args`, out of tap's process tracking. */
export function untracked(command: string, args: readonly string[]): string[] {
  return ['-u', 'NODE_OPTIONS', command, ...args];
}

/** What an earlier build recorded: its bundle directory and every input with its size and mtime. */
interface Inputs {
  dir: string;
  files: Record<string, [number, number]>;
}

/** The record of an entry's last build, named also by what else decides the bundle: esbuild, Node, the options. */
const inputsFile = (entry: string) =>
  join(programsDir, `${createHash('sha256').update(JSON.stringify([entry, esbuildVersion, NODE_BUNDLE])).digest('hex').slice(0, 16)}.inputs.json`);

/** The bundle an earlier build made from exactly these inputs, if it is still there. */
function reusable(entry: string): string | undefined {
  try {
    const rec = JSON.parse(readFileSync(inputsFile(entry), 'utf8')) as Inputs;
    for (const [file, [size, mtime]] of Object.entries(rec.files)) {
      const st = statSync(join(root, file));
      if (st.size !== size || st.mtimeMs !== mtime) return undefined;
    }
    return touch(rec.dir) ? rec.dir : undefined;
  } catch {
    return undefined;
  }
}

function bundle(entry: string): string {
  if (built.size === 0) prune();
  const name = basename(entry).replace(/\.[mc]?ts$/, '');
  const again = reusable(entry);
  if (again) return join(again, `${name}.js`);
  const started = Date.now();
  const result = buildSync({
    ...NODE_BUNDLE,
    entryPoints: { [name]: entry, 'protocol-worker': workerEntry },
    absWorkingDir: root,
    metafile: true,
    write: false,
    outdir: '/',
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
  record(entry, dir, Object.keys(result.metafile.inputs), started);
  return join(dir, `${name}.js`);
}

/**
 * Writes what the bundle in `dir` was built from (whole, under a temporary name, then renamed); not when
 * an input changed since the build started, as the bundle may hold the older content.
 */
function record(entry: string, dir: string, inputs: string[], started: number): void {
  const files: Inputs['files'] = {};
  try {
    for (const f of inputs) {
      const st = statSync(join(root, f));
      if (st.mtimeMs >= started - 1000) return;
      files[f] = [st.size, st.mtimeMs];
    }
    const tmp = `${inputsFile(entry)}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ dir, files } satisfies Inputs));
    renameSync(tmp, inputsFile(entry));
  } catch {
    // an input that is not a file (esbuild's own namespaces) or a full disk: the next process builds again
  }
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
