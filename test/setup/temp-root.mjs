// Loaded into every test process (.taprc node-arg): the process's temporary files go under one
// directory of its own, removed when the process exits, so test runs leave no stores, keys or sockets
// in the system temp directory. Only this process's os.tmpdir() changes, not TMPDIR: the processes a test
// spawns keep the system temp directory, where tsx keeps its compile cache (`<tmp>/tsx-<uid>`); moving
// it per test process made every spawned `node --import tsx` compile the sources from scratch.
// Readable by other users: PostgreSQL runs as `nobody` in a directory made under it (test/support/postgres.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';

const root = mkdtempSync(join(os.tmpdir(), 'custody-test-'));
chmodSync(root, 0o755);
os.tmpdir = () => root;
// Named imports of node:os (`import { tmpdir } from 'node:os'`) see the change too.
syncBuiltinESMExports();
process.on('exit', () => {
  try {
    rmSync(root, { recursive: true, force: true });
  } catch {
    // a file still open elsewhere; the system cleans its temp directory
  }
});
