// Opaque, tamper-proof cursors (docs/platform/pagination.md). A cursor is base64url(JSON payload) "."
// base64url(HMAC-SHA256(server key, payload)). The payload holds the list's name, its scope (workspace or
// organization), a hash of its filters and the position of the last item returned: its id on the
// platform API, whose ids are time-ordered; `<created_at>/<id>` in an index of the vault API (indexPage).
// A walk resumes strictly after that position, so concurrent inserts neither repeat nor hide an item that
// existed before.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { PageResult } from '../../core/api-schemas/page.ts';
import type { RecordRepository } from './record-repository.ts';

// The envelope and query schemas are shared with the SDK.
export { DEFAULT_LIMIT, MAX_LIMIT, Page, PageQuery, type PageResult } from '../../core/api-schemas/page.ts';

function filterHash(filters: Record<string, unknown>): string {
  const keys = Object.keys(filters).filter((k) => filters[k] !== undefined).sort();
  return createHash('sha256').update(JSON.stringify(keys.map((k) => [k, filters[k]]))).digest('base64url').slice(0, 22);
}

export class CursorCodec {
  constructor(private readonly key: Uint8Array) {}

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest();
  }

  encode(list: string, scope: string, filters: Record<string, unknown>, after: string): string {
    const payload = Buffer.from(JSON.stringify({ l: list, s: scope, f: filterHash(filters), a: after })).toString('base64url');
    return `${payload}.${this.mac(payload).toString('base64url')}`;
  }

  /** The id to resume after, or undefined for the first page. Refuses forged cursors and changed filters. */
  decode(cursor: string | undefined, list: string, scope: string, filters: Record<string, unknown>): string | undefined {
    if (cursor === undefined || cursor === '' || cursor === 'null') return undefined;
    const bad = () => new CustodyError('invalid_cursor', 'cursor is not valid for this list; start again without a cursor');
    const [payload, sig, extra] = cursor.split('.');
    if (!payload || !sig || extra !== undefined) throw bad();
    const given = Buffer.from(sig, 'base64url');
    const want = this.mac(payload);
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw bad();
    let p: { l?: unknown; s?: unknown; f?: unknown; a?: unknown };
    try {
      p = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof p;
    } catch {
      throw bad();
    }
    if (p.l !== list || p.s !== scope || typeof p.a !== 'string') throw bad();
    if (p.f !== filterHash(filters)) throw new CustodyError('cursor_filter_mismatch', 'the filters changed since this cursor was issued; keep filters identical across pages or start again');
    return p.a;
  }
}

/** Builds one page from items sorted by ascending id, already restricted to ids after the cursor. */
export function pageOf<T extends { id: string }>(codec: CursorCodec, items: T[], limit: number, list: string, scope: string, filters: Record<string, unknown>): PageResult<T> {
  const data = items.slice(0, limit);
  const has_more = items.length > limit;
  const last = data[data.length - 1];
  return { data, has_more, next_cursor: has_more && last ? codec.encode(list, scope, filters, last.id) : null };
}

/**
 * One list of the vault API as an index walk (api/vaults/vault-service.ts, api/transactions/
 * transaction-service.ts): what its cursors are bound to, the index entries it walks in order, and the
 * check every record read must pass.
 */
export interface IndexList<T> {
  /** The list's name; a cursor of another list is refused. */
  list: string;
  /** The caller's organization; a cursor issued to another is refused. */
  scope: string;
  /** The filters as given; a cursor issued for other filters is refused. */
  filters: Record<string, unknown>;
  collection: string;
  /** The index prefix whose entries, `<prefix><created_at>/<id>`, are the list; undefined: a filter names nothing the caller can see. */
  prefix: string | undefined;
  /** The caller's scope and the filters, checked on each record: an entry that went stale is skipped, never listed. */
  keep(record: T): boolean;
  /** Walk the entries newest first (descending positions); oldest first when absent. */
  newestFirst?: boolean;
}

/**
 * A page of an index walk: up to `limit` records after the cursor's position that `keep` accepts, and
 * whether another exists (one more is looked for). The cursor is checked before anything is read.
 */
export async function indexPage<T>(store: Pick<RecordRepository, 'byIndexEntries'>, codec: CursorCodec, l: IndexList<T>, cursor: string | undefined, limit: number): Promise<PageResult<T>> {
  const after = codec.decode(cursor, l.list, l.scope, l.filters);
  if (l.prefix === undefined) return { data: [], next_cursor: null, has_more: false };
  const out: { position: string; value: T }[] = [];
  let from = after;
  for (;;) {
    const batch = await store.byIndexEntries<T>(l.collection, l.prefix, from, limit + 1, l.newestFirst ?? false);
    for (const e of batch) {
      if (e.value !== undefined && l.keep(e.value)) out.push({ position: e.position, value: e.value });
      if (out.length > limit) break;
    }
    if (out.length > limit || batch.length <= limit) break;
    from = batch[batch.length - 1]!.position;
  }
  const data = out.slice(0, limit);
  const has_more = out.length > limit;
  const last = data[data.length - 1];
  return { data: data.map((e) => e.value), has_more, next_cursor: has_more && last ? codec.encode(l.list, l.scope, l.filters, last.position) : null };
}
