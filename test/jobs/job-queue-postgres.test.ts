// The job queue contract (job-queue-contract.ts) on PostgreSQL: a server started for this file
// (test/support/postgres.ts), migrated to the `jobs` table of migration 2.
import t from 'tap';
import { PostgresJobQueue } from '../../api/jobs/postgres-job-queue.ts';
import { PostgresRecordStore } from '../../api/store/postgres/postgres-record-store.ts';
import { startPostgres } from '../support/postgres.ts';
import { jobQueueContract } from './job-queue-contract.ts';

const server = await startPostgres();
const queue = await PostgresJobQueue.open({ connectionString: server.url, max: 8 }).catch(async (err: unknown) => {
  await server.stop();
  throw err;
});
const store = await PostgresRecordStore.open({ connectionString: server.url, max: 4 });
// One teardown, in order: the pools end before the server, whose shutdown would fail their idle connections.
t.teardown(async () => {
  await store.close();
  await queue.close();
  await server.stop();
});
t.comment(`PostgreSQL started in ${server.startMs} ms on port ${server.port}`);

jobQueueContract(t, queue, store);
