// The repository contract (repository-contract.ts) against the embedded LevelDB RecordStore.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { RecordStore } from '../../api/store/record-store.ts';
import { repositoryContract } from './repository-contract.ts';

// The store is opened by a test of its own, not at the top level: the file shares its process with others
// (test/support/units.ts).
t.test('the repository contract on LevelDB', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'custody-level-'));
  const store = await RecordStore.open(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  repositoryContract(t, store);
});
