// Loaded into every test process (.taprc node-arg): the process's temporary files go under one
// directory of its own, removed when the process exits, so test runs leave no stores, keys or sockets
// in the system temp directory. os.tmpdir() reads TMPDIR on every call, and the processes a test spawns
// with this environment inherit the directory (those given a minimal environment use the system one and
// clean up after themselves). Readable by other users: PostgreSQL runs as `nobody` in a directory made
// under it (test/support/postgres.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = mkdtempSync(join(tmpdir(), 'custody-test-'));
chmodSync(root, 0o755);
process.env.TMPDIR = root;
process.on('exit', () => {
  try {
    rmSync(root, { recursive: true, force: true });
  } catch {
    // a file still open elsewhere; the system cleans its temp directory
  }
});
