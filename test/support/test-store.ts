// The record store of an in-process API test: a fresh LevelDB in a temp directory, or, while a
// PostgreSQL suite runs (test/store/api-on-postgres.test.ts sets TEST_POSTGRES_URL), a fresh database
// on that server, so one route test file runs unchanged against both stores.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresRecordStore } from '../../api/store/postgres/postgres-record-store.ts';
import type { RecordRepository } from '../../api/store/record-repository.ts';
import { RecordStore } from '../../api/store/record-store.ts';

export interface TestStore {
  /** A temp directory for the test's other files (objects, API_DATA_DIR). */
  dir: string;
  store: RecordRepository;
}

let databases = 0;

export async function openTestStore(prefix: string): Promise<TestStore> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const server = process.env.TEST_POSTGRES_URL;
  if (!server) return { dir, store: await RecordStore.open(dir) };
  const name = `t${process.pid}_${++databases}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return { dir, store: await PostgresRecordStore.open({ connectionString: server.replace(/\/[^/]*$/, `/${name}`) }) };
}
