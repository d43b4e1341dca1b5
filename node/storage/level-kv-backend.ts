// The default store backend: one LevelDB directory (`<dataDir>/db`), string keys, values as bytes. The
// sealed store's on-disk format is this directory's; tee/host-store/ serves the same format remotely.
import { Level } from 'level';
import type { KvBackend, KvOp, KvRange } from './kv-backend.ts';

export class LevelKvBackend implements KvBackend {
  private readonly db: Level<string, Uint8Array>;

  constructor(readonly dir: string) {
    this.db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
  }

  async open(): Promise<void> {
    await this.db.open();
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
