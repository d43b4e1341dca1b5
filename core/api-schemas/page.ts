// The pagination envelope and query of every paginated list, on both APIs (docs/platform/pagination.md,
// ../shared/spec/platform-api.md "Pagination envelope"): `{data, next_cursor, has_more}`, and `cursor`
// (opaque) and `limit` (default 25, 1 to 100). Here so the routes and the SDK share one definition; the
// cursor codec itself is the server's (api/store/pagination.ts).
import { Type, type TSchema } from '@sinclair/typebox';
import { QueryInteger } from './query.ts';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;

/** The querystring properties of a paginated list; a list adds its filters beside them. */
export const PageQuery = {
  cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'next_cursor of the previous page; omit for the first page' })),
  // The one querystring number of the APIs: read from decimal text, because the schema says so.
  limit: Type.Optional(QueryInteger({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT })),
};

export function Page<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]), has_more: Type.Boolean() });
}

/** One page of a list, as `Page(item)` describes it. */
export interface PageResult<T> {
  data: T[];
  next_cursor: string | null;
  has_more: boolean;
}
