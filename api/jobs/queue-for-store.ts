// The job queue that lives beside a record store (docs/api-storage.md "Jobs"): PostgreSQL's `jobs` table
// for PostgresRecordStore, records of the embedded store otherwise. A batch's `enqueue` operations write
// to the same queue, so one store gives one queue, shared by every worker of a process. The embedded store
// is open in one process only, so its queue gives back at start the leases a crashed process left.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { RecordRepository } from '../store/record-repository.ts';
import { PostgresRecordStore } from '../store/postgres/postgres-record-store.ts';
import type { JobQueue } from './job-queue.ts';
import { RecordJobQueue } from './record-job-queue.ts';

const queues = new WeakMap<RecordRepository, JobQueue>();

export function jobQueueFor(store: RecordRepository): JobQueue {
  let q = queues.get(store);
  if (!q) queues.set(store, (q = store instanceof PostgresRecordStore ? store.jobQueue() : new RecordJobQueue(store, { soleOwner: true })));
  return q;
}

/** A lease owner's name: what runs it, the host, the process, and a random suffix (a restarted pid differs). */
export function workerId(what: string): string {
  return `${what}@${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}
