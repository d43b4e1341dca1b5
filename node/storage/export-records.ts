// The node's own records of key exports (docs/export.md, docs/storage.md): when it first saw each
// customer-signed export request (the delay runs from there on its own clock), and that it sealed its
// share. Sealed records under the store's rollback anchor; a disk that rolls one back can only make the
// delay start later, never earlier, because a missing start is written anew at the node's clock.
import { decodeBlob, encodeBlob } from '../../core/codec/blob.ts';
import type { SealedStore } from './sealed-store.ts';

export interface ExportRecord {
  requestId: string;
  /** When this node first saw the request in a verified trust log, ms since the Unix epoch. */
  firstSeenMs: number;
  /** When it first sealed its share to the request's recipient key, ms. */
  sealedAtMs?: number;
}

const BLOB = 'export-record/v1';
const key = (vaultId: string, requestId: string) => `export/${vaultId}/${requestId}`;

export class ExportRecords {
  private readonly queue = new Map<string, Promise<unknown>>();

  constructor(private readonly store: SealedStore) {}

  private serial<T>(k: string, f: () => Promise<T>): Promise<T> {
    const next = (this.queue.get(k) ?? Promise.resolve()).then(f, f);
    this.queue.set(k, next.catch(() => undefined));
    return next;
  }

  async get(vaultId: string, requestId: string): Promise<ExportRecord | undefined> {
    const raw = await this.store.getSecret(key(vaultId, requestId));
    return raw ? decodeBlob<ExportRecord>(BLOB, raw) : undefined;
  }

  /** The record, written with `nowMs` as its first sighting when there is none yet. */
  seen(vaultId: string, requestId: string, nowMs: number): Promise<ExportRecord> {
    return this.serial(key(vaultId, requestId), async () => {
      const had = await this.get(vaultId, requestId);
      if (had) return had;
      const rec: ExportRecord = { requestId, firstSeenMs: nowMs };
      await this.store.putSecret(key(vaultId, requestId), encodeBlob(BLOB, rec));
      return rec;
    });
  }

  /** Marks the vault exported by this request (the first time only). */
  sealed(vaultId: string, requestId: string, nowMs: number): Promise<ExportRecord> {
    return this.serial(key(vaultId, requestId), async () => {
      const had = (await this.get(vaultId, requestId)) ?? { requestId, firstSeenMs: nowMs };
      if (had.sealedAtMs !== undefined) return had;
      const rec: ExportRecord = { ...had, sealedAtMs: nowMs };
      await this.store.putSecret(key(vaultId, requestId), encodeBlob(BLOB, rec));
      return rec;
    });
  }

  /** Every export of the vault this node sealed its share for. */
  async exported(vaultId: string): Promise<ExportRecord[]> {
    const out: ExportRecord[] = [];
    for await (const k of this.store.keys(`export/${vaultId}/`)) {
      const raw = await this.store.getSecret(k);
      const rec = raw ? decodeBlob<ExportRecord>(BLOB, raw) : undefined;
      if (rec?.sealedAtMs !== undefined) out.push(rec);
    }
    return out;
  }
}
