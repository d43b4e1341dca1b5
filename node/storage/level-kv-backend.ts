// The default store backend: one LevelDB directory (`<dataDir>/db`), string keys, values as bytes. The
// sealed store's on-disk format is this directory's; tee/host-store/ serves the same format remotely.
import { existsSync, readdirSync } from 'node:fs';
import { Level } from 'level';
import type { KvBackend, KvOp, KvRange } from './kv-backend.ts';

export class LevelKvBackend implements KvBackend {
  private readonly db: Level<string, Uint8Array>;

  constructor(readonly dir: string) {
    this.db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
  }

  /**
   * Opens the directory, refusing one LevelDB would misread: without its CURRENT file, LevelDB makes a new
   * empty database beside the old one's files. A failure names the directory and LevelDB's own reason
   * (a corrupt MANIFEST, say), not only that the database failed to open.
   */
  async open(): Promise<void> {
    const files = existsSync(this.dir) ? readdirSync(this.dir) : [];
    if (!files.includes('CURRENT') && files.some((f) => /^MANIFEST-|\.(ldb|sst|log)$/.test(f))) {
      throw new LevelDamage(`${this.dir} holds database files but no CURRENT file (it names the live MANIFEST): the directory is damaged`);
    }
    try {
      await this.db.open();
    } catch (err) {
      // classic-level wraps the engine's message (Corruption: ..., IO error: ...) as the cause.
      const cause = (err as { cause?: Error & { code?: string } }).cause;
      if (cause?.code === 'LEVEL_LOCKED') throw new Error(`${this.dir} is in use by another process (its LOCK is held): stop that process first`, { cause: err });
      const reason = cause?.message ?? (err as Error).message;
      throw new LevelDamage(`LevelDB cannot open ${this.dir}: ${reason}`, { cause: err });
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.db.get(key)) ?? undefined;
  }

  async batch(ops: readonly KvOp[], opts: { sync: boolean }): Promise<void> {
    await this.db.batch(ops.map((op) => (op.type === 'put' ? { type: 'put' as const, key: op.key, value: op.value } : { type: 'del' as const, key: op.key })), { sync: opts.sync });
  }

  async *entries(): AsyncGenerator<[string, Uint8Array]> {
    // In pages: one promise per page, not per entry, since an open reads every record (docs/storage.md).
    const it = this.db.iterator();
    try {
      for (let page = await it.nextv(1024); page.length > 0; page = await it.nextv(1024)) yield* page;
    } finally {
      await it.close();
    }
  }

  async *keys(range: KvRange): AsyncGenerator<string> {
    yield* this.db.keys({ gte: range.gte, lt: range.lt });
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/** The LevelDB directory cannot be opened as the database it was: a file is missing or corrupt. */
export class LevelDamage extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LevelDamage';
  }
}
