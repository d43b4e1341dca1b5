// Opaque, tamper-proof cursors (docs/platform/pagination.md). A cursor is `c1.` base64url(nonce ||
// XChaCha20-Poly1305(cursor key, payload, aad)), authenticated encryption under a key derived from the
// server key (api/store/server-keys.ts), so a client reads nothing in it (not the workspace, not an id)
// and changes nothing undetected. The payload holds the list's name, its scope (workspace or
// organization), a hash of its filters and the position of the last item returned: its id on the
// platform API, whose ids are time-ordered; `<created_at>/<id>` in an index of the vault API (indexPage).
// The list's name and scope are also the associated data, so a cursor of another list or workspace does
// not even decrypt. A walk resumes strictly after that position, so concurrent inserts neither repeat nor
// hide an item that existed before.
import { createHash, createHmac } from 'node:crypto';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { randomBytes } from '@noble/ciphers/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { PageResult } from '../../core/api-schemas/page.ts';
import type { RecordRepository } from './record-repository.ts';

// The envelope and query schemas are shared with the SDK.
export { DEFAULT_LIMIT, MAX_LIMIT, Page, PageQuery, type PageResult } from '../../core/api-schemas/page.ts';

function filterHash(filters: Record<string, unknown>): string {
  const keys = Object.keys(filters).filter((k) => filters[k] !== undefined).sort();
  return createHash('sha256').update(JSON.stringify(keys.map((k) => [k, filters[k]]))).digest('base64url').slice(0, 22);
}

/** The cursor format's version, its first part. */
const VERSION = 'c1';
const NONCE_BYTES = 24;

export class CursorCodec {
  private readonly aeadKey: Uint8Array;

  /** `key`: the server's cursor key (or one derived from it per API); the encryption key is derived from it. */
  constructor(key: Uint8Array) {
    this.aeadKey = createHmac('sha256', key).update('pagination-cursor-aead-v1').digest();
  }

  private static aad(list: string, scope: string): Uint8Array {
    return new TextEncoder().encode(`${VERSION}\x00${list}\x00${scope}`);
  }

  encode(list: string, scope: string, filters: Record<string, unknown>, after: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const payload = new TextEncoder().encode(JSON.stringify({ l: list, s: scope, f: filterHash(filters), a: after }));
    const sealed = xchacha20poly1305(this.aeadKey, nonce, CursorCodec.aad(list, scope)).encrypt(payload);
    return `${VERSION}.${Buffer.concat([nonce, sealed]).toString('base64url')}`;
  }

  /** The id to resume after, or undefined for the first page. Refuses forged, foreign and other lists' cursors, and changed filters. */
  decode(cursor: string | undefined, list: string, scope: string, filters: Record<string, unknown>): string | undefined {
    if (cursor === undefined || cursor === '' || cursor === 'null') return undefined;
    const bad = () => new CustodyError('invalid_cursor', 'cursor is not valid for this list; start again without a cursor');
    const [version, body, extra] = cursor.split('.');
    if (version !== VERSION || !body || extra !== undefined || !/^[A-Za-z0-9_-]+$/.test(body)) throw bad();
    const bytes = Buffer.from(body, 'base64url');
    if (bytes.length <= NONCE_BYTES + 16) throw bad();
    let p: { l?: unknown; s?: unknown; f?: unknown; a?: unknown };
    try {
      const plain = xchacha20poly1305(this.aeadKey, bytes.subarray(0, NONCE_BYTES), CursorCodec.aad(list, scope)).decrypt(bytes.subarray(NONCE_BYTES));
      p = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(plain)) as typeof p;
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
