// The API's record store, as configured (docs/api-storage.md "Choosing the store"): PostgreSQL when
// API_DATABASE_URL is set, else the embedded LevelDB under API_DATA_DIR.
//
// Any number of API instances serve one PostgreSQL database: their background work is shared through the
// job queue and the store's locks (docs/api-storage.md "Several instances"). Each serving process holds
// the instance lock *shared* for as long as it runs, on a connection of its own; the store copy
// (store-copy.ts), which must be the database's only writer, takes it *exclusively*. So a copy refuses
// to start while any instance serves (`instance_locked`), and an instance refuses to start while a copy
// runs. The lock goes with its connection when the process ends or dies. The admin CLI's other commands
// take no lock.
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import type { Logger } from '../../common/logger.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { clientConfig, type ConnectionOptions } from './postgres/migrate.ts';
import { PostgresRecordStore } from './postgres/postgres-record-store.ts';
import { RecordStore } from './record-store.ts';
import type { RecordRepository } from './record-repository.ts';

/** The instance lock's key ("api-one" in ASCII), distinct from the migration lock. */
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
 * Takes the instance lock, shared (a serving instance) or exclusive (the store copy), on a connection of
 * its own and returns that connection, which holds the lock until it ends; refuses with
 * `instance_locked` (saying `busy`) while another session holds it in a conflicting mode. `onError`
 * hears of the connection failing, and with it the lock.
 */
export async function takeInstanceLock(conn: ConnectionOptions, mode: 'shared' | 'exclusive', busy: string, onError: (err: Error) => void): Promise<pg.Client> {
  const holder = new pg.Client(clientConfig(conn));
  holder.on('error', onError);
  await holder.connect();
  try {
    const take = mode === 'shared' ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
    const { rows } = await holder.query<{ ok: boolean }>(`SELECT ${take}($1::bigint) AS ok`, [INSTANCE_LOCK.toString()]);
    if (!rows[0]?.ok) throw new CustodyError('instance_locked', busy);
    return holder;
  } catch (err) {
    await holder.end().catch(() => undefined);
    throw err;
  }
}

/**
 * The configured store of the serving process; on PostgreSQL, with the instance lock held shared until
 * `close`. Should a lock connection fail (the instance lock, or the one holding the store's `exclusive`
 * locks, which another instance could then take while a critical section here still runs),
 * `onLockLost` is told, and the caller stops serving.
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
  const holder = await takeInstanceLock(conn, 'shared', 'a store copy is writing this database; start the API when it has finished (docs/api-storage.md)', lost('the API instance lock'));
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
