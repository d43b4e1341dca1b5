// Opaque, tamper-proof cursors (docs/platform/pagination.md). A cursor is base64url(JSON payload) "."
// base64url(HMAC-SHA256(server key, payload)). The payload holds the list's name, a hash of its filters
// and the last id returned; lists are in ascending id order (ids are time-ordered), so a walk resumes
// strictly after that id and concurrent inserts neither repeat nor hide an item that existed before.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { Type, type TSchema } from '@sinclair/typebox';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { QueryInteger } from '../../core/api-schemas/query.ts';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;

export const PageQuery = {
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  // The one querystring number of the platform API: read from decimal text, because the schema says so.
  limit: Type.Optional(QueryInteger({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT })),
};

export function Page<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]), has_more: Type.Boolean() });
}

export interface PageResult<T> {
  data: T[];
  next_cursor: string | null;
  has_more: boolean;
}

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
