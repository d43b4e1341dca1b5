// Whether dist/ holds a complete build at least as new as every source it is built from. `npm start`
// builds when it does not, and marks the build complete when it is (start.mjs); `npm run cli` and the
// other commands run from dist/ when it does (run.mjs). The mark is removed before a build begins and
// written after it ends, so a command started during a build runs from the sources, never from a
// half-written dist/.
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const dist = join(root, 'dist');
const MARK = join(dist, '.build-complete');
/** What tsconfig.build.json compiles. */
const SOURCE_DIRS = ['common', 'core', 'proto', 'node', 'coordinator', 'api', 'tee'];

/** The newest modification time of a file under `dir` (0 when there is none). */
function newest(dir) {
  let t = 0;
  if (!existsSync(dir)) return t;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'gen') continue;
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** True when dist/ holds a build marked complete and no source is newer than that mark. */
export function buildIsFresh() {
  let marked;
  try {
    marked = statSync(MARK).mtimeMs;
  } catch {
    return false;
  }
  return marked >= Math.max(...SOURCE_DIRS.map((d) => newest(join(root, d))));
}

/** Before a build: dist/ is no longer to be run from. */
export function unmarkBuild() {
  rmSync(MARK, { force: true });
}

/** After a build that succeeded. */
export function markBuild() {
  writeFileSync(MARK, `${new Date().toISOString()}\n`);
}
