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
];
