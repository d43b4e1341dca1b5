// The job queue contract (job-queue-contract.ts) on the embedded LevelDB RecordStore.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { RecordJobQueue } from '../../api/jobs/record-job-queue.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { jobQueueContract } from './job-queue-contract.ts';

const dir = mkdtempSync(join(tmpdir(), 'custody-jobs-'));
const store = await RecordStore.open(dir);
t.teardown(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

jobQueueContract(t, new RecordJobQueue(store));
