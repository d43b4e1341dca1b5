// The job queue contract (job-queue-contract.ts) on the embedded LevelDB RecordStore.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LeaseLostError } from '../../api/jobs/lease-lost-error.ts';
import { RecordJobQueue } from '../../api/jobs/record-job-queue.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { jobQueueContract } from './job-queue-contract.ts';

// The store is opened by a test of its own, not at the top level: the file shares its process with others
// (test/support/units.ts).
t.test('the job queue on LevelDB', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'custody-jobs-'));
  const store = await RecordStore.open(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  jobQueueContract(t, new RecordJobQueue(store), store);

  t.test('a sole-owner queue gives back, at its first claim, the leases a stopped process left', async (t) => {
    const kind = `sole_${Date.now()}`;
    const before = new RecordJobQueue(store);
    const { job } = await before.enqueue(kind, 'tx-1', {}, { orderingKey: `${kind}-wallet` });
    await before.enqueue(kind, 'tx-2', {}, { orderingKey: `${kind}-wallet` });
    const [held] = await before.claim('crashed', [kind], 1, 60_000);
    t.equal(held?.id, job.id);
    t.same(await new RecordJobQueue(store).claim('other', [kind], 5, 60_000), [], 'without sole ownership the lease is waited out');
    const after = new RecordJobQueue(store, { soleOwner: true });
    const [again] = await after.claim('restarted', [kind], 5, 60_000);
    t.equal(again?.id, job.id, 'the crashed lease is claimable at once, ahead of its ordering key\'s next job');
    t.equal(again?.attempts, 2, 'the crashed attempt counts');
    await before.complete(held!, held!.leaseToken).then(() => t.fail('the old token completed'), (err: unknown) => t.ok(err instanceof LeaseLostError, 'the old token is refused'));
    t.same(await after.claim('restarted', [kind], 5, 60_000), [], 'its own lease is not given back at a later claim');
  });
});
