// The API's record store, as configured (docs/api-storage.md "Choosing the store"): PostgreSQL when
// API_DATABASE_URL is set, else the embedded LevelDB under API_DATA_DIR.
//
// Until the API's background work (key generation, transaction progress, webhook delivery) runs on the
// shared job queue, two API processes on one database would both run it, and both could broadcast one
// transaction. So the serving process holds a PostgreSQL session advisory lock for as long as it runs:
// a second instance on the same database refuses to start (`instance_locked`), and the lock goes with
// the holder's connection when that process ends or dies. The admin CLI's store takes no lock: it runs
// no background work.
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import type { Logger } from '../../common/logger.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { clientConfig, type ConnectionOptions } from './postgres/migrate.ts';
import { PostgresRecordStore } from './postgres/postgres-record-store.ts';
import { RecordStore } from './record-store.ts';
import type { RecordRepository } from './record-repository.ts';

/** The serving instance's lock key ("api-one" in ASCII), distinct from the migration lock. */
export const INSTANCE_LOCK = 0x6170692d6f6e65n;

export interface StoreSettings {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** A file holding the database password (a mounted secret), kept out of the URL. */
  databasePasswordFile?: string | undefined;
}

/** Where and as whom to connect; the password file is read at each new connection. */
export function connection(settings: Pick<StoreSettings, 'databasePasswordFile'> & { databaseUrl: string }): ConnectionOptions {
  const file = settings.databasePasswordFile;
  return { connectionString: settings.databaseUrl, ...(file ? { password: async () => (await readFile(file, 'utf8')).trim() } : {}) };
}

/** Which store the settings name, for logs (never the URL: it may carry a password). */
export function storeKind(settings: StoreSettings): 'postgresql' | 'leveldb' {
  return settings.databaseUrl ? 'postgresql' : 'leveldb';
}

/** The configured store, without the serving lock (the admin CLI). */
export async function openStore(settings: StoreSettings): Promise<RecordRepository> {
  return settings.databaseUrl ? PostgresRecordStore.open(connection({ ...settings, databaseUrl: settings.databaseUrl })) : RecordStore.open(settings.dataDir);
}

export interface ServingStore {
  store: RecordRepository;
  /** Closes the store, then releases the instance lock. */
  close(): Promise<void>;
}

/**
 * Takes the instance lock on a connection of its own and returns that connection, which holds the lock
 * until it ends; refuses with `instance_locked` (saying `busy`) while another session holds it.
 * `onError` hears of the connection failing, and with it the lock.
 */
export async function takeInstanceLock(conn: ConnectionOptions, busy: string, onError: (err: Error) => void): Promise<pg.Client> {
  const holder = new pg.Client(clientConfig(conn));
  holder.on('error', onError);
  await holder.connect();
  try {
    const { rows } = await holder.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [INSTANCE_LOCK.toString()]);
    if (!rows[0]?.ok) throw new CustodyError('instance_locked', busy);
    return holder;
  } catch (err) {
    await holder.end().catch(() => undefined);
    throw err;
  }
}

/**
 * The configured store of the serving process; on PostgreSQL, with the one-instance lock held until
 * `close`. Should the lock's connection fail, another instance could take the lock: `onLockLost` is
 * told, and the caller stops serving.
 */
export async function openServingStore(settings: StoreSettings, log: Logger, onLockLost: () => void): Promise<ServingStore> {
  if (!settings.databaseUrl) {
    const store = await RecordStore.open(settings.dataDir);
    return { store, close: () => store.close() };
  }
  const conn = connection({ ...settings, databaseUrl: settings.databaseUrl });
  let closing = false;
  const lost = (what: string) => (err: Error) => {
    if (closing) return;
    closing = true; // reported once: a failed connection can emit more than one error
    log.error({ err: err.message }, `the connection holding ${what} failed; stopping`);
    onLockLost();
  };
  const holder = await takeInstanceLock(conn, 'another API instance serves this database; one instance per database until background work runs on the job queue (docs/api-storage.md)', lost('the API instance lock'));
  try {
    // Its `exclusive` locks guard critical sections across instances: losing them is losing the lock.
    const store = await PostgresRecordStore.open({ ...conn, onLocksLost: lost('the store\'s exclusive locks') });
    return {
      store,
      async close() {
        closing = true;
        await store.close();
        await holder.end();
      },
    };
  } catch (err) {
    closing = true;
    await holder.end();
    throw err;
  }
}
