// Walking a list page after page (docs/vault-api.md "Lists"), for both clients; a file of its own so the
// platform client needs none of the vault client's intent and chain code.
import type { PageResult } from '../../core/api-schemas/page.ts';

/** One page of a list: `{data, next_cursor, has_more}` (docs/vault-api.md "Lists"). */
export type Page<T> = PageResult<T>;

/**
 * Every item of a list, page after page, fetching the next page only when the loop gets there:
 * `for await (const v of allPages((cursor) => client.listVaults({ state: 'active', cursor }))) ...`.
 * Keep the filters the same on every page: a cursor is bound to them (400 cursor_filter_mismatch).
 */
export async function* allPages<T>(page: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const p = await page(cursor);
    yield* p.data;
    cursor = p.has_more && p.next_cursor !== null ? p.next_cursor : undefined;
  } while (cursor !== undefined);
}
