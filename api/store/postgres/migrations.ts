// The PostgreSQL schema of the API's records, as versioned migrations (docs/api-storage.md "Migrations").
// A migration, once released, is never edited: a change is a new version. migrate.ts applies the
// missing ones in order, in one transaction, and records each in the `migrations` table.

export interface Migration {
  /** 1, 2, 3, ... without gaps. */
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records and index entries',
    // Ids and index entries are bytea: they hold \x00 separators (text cannot), and bytea compares as
    // memcmp, which is LevelDB's bytewise order, so walks and cursors behave as in record-store.ts. An
    // entry is the UTF-8 of `<index string> \x00 <id>`, LevelDB's index key without its collection.
    // Values are `json`, not `jsonb`: json keeps the text as written (key order, and \u0000 inside strings,
    // which some records hold and jsonb refuses); nothing queries inside a record yet.
    sql: `
      CREATE TABLE records (
        collection text COLLATE "C" NOT NULL,
        id bytea NOT NULL,
        value json NOT NULL,
        PRIMARY KEY (collection, id)
      );
      CREATE TABLE index_entries (
        collection text COLLATE "C" NOT NULL,
        entry bytea NOT NULL,
        id bytea NOT NULL,
        PRIMARY KEY (collection, entry)
      );
      CREATE INDEX index_entries_by_record ON index_entries (collection, id);
    `,
  },
  {
    version: 2,
    name: 'jobs with leases',
    // The durable job queue (api/jobs/postgres-job-queue.ts, docs/api-storage.md "Jobs"). `id` is the
    // enqueue order that ordering keys follow; lease expiry is `leased_until < now()`, the database's clock
    // being the one every instance shares. The partial indexes keep claims off finished jobs.
    sql: `
      CREATE TABLE jobs (
        id bigserial PRIMARY KEY,
        kind text COLLATE "C" NOT NULL,
        key text NOT NULL,
        payload json NOT NULL,
        state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'leased', 'done', 'dead')),
        run_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        dedupe_key text,
        ordering_key text COLLATE "C",
        lease_owner text,
        lease_token uuid,
        leased_until timestamptz,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (kind, dedupe_key),
        CHECK ((state = 'leased') = (lease_token IS NOT NULL AND leased_until IS NOT NULL))
      );
      CREATE INDEX jobs_due ON jobs (kind, run_at, id) WHERE state = 'queued';
      CREATE INDEX jobs_lease ON jobs (kind, leased_until) WHERE state = 'leased';
      CREATE INDEX jobs_ordering ON jobs (ordering_key, id) WHERE state IN ('queued', 'leased') AND ordering_key IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'finished jobs by age',
    // Pruning (PostgresJobQueue.prune) walks finished jobs oldest first; queued and leased ones are not in it.
    sql: `CREATE INDEX jobs_finished ON jobs (updated_at) WHERE state IN ('done', 'dead');`,
  },
  {
    version: 4,
    name: 'job groups',
    // A claim's per-group limit (an organization's jobs running at once) counts live leases by group.
    sql: `
      ALTER TABLE jobs ADD COLUMN group_key text COLLATE "C";
      CREATE INDEX jobs_group_leased ON jobs (group_key, leased_until) WHERE state = 'leased' AND group_key IS NOT NULL;
    `,
  },
  {
    version: 5,
    name: 'rate limit counters',
    // The request budgets every instance shares (api/rate-limits/postgres-rate-limit-store.ts): one row per
    // limited key and its current window, counted by an upsert; the window ends at `reset_at` on the
    // database's clock, and rows past it are pruned by that index.
    sql: `
      CREATE TABLE rate_limit_counters (
        key text COLLATE "C" PRIMARY KEY,
        hits bigint NOT NULL,
        reset_at timestamptz NOT NULL
      );
      CREATE INDEX rate_limit_counters_reset ON rate_limit_counters (reset_at);
    `,
  },
];
