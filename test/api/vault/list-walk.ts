// Shared by the vault API's list tests (docs/vault-api.md "Lists"): a clock that keeps records' creation
// order in their created_at, a walk over every page of a list that checks the envelope of each page, and
// the refusals every list gives for a bad `limit` or a cursor that is not its own.
import type { Test } from 'tap';
import type { Response } from 'light-my-request';
import type { ApiCredentials } from '../../../api/sdk/request-signer.ts';

export type Call = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, c?: ApiCredentials) => Promise<Response>;

/** Real time, one millisecond further at each call: records made one after another sort in that order. */
export function tickingClock(): () => Date {
  let ms = Date.now();
  return () => new Date(ms++);
}

export interface Walk {
  /** Every id listed, in the order listed. */
  ids: string[];
  pages: number;
  /** The next_cursor of every page but the last. */
  cursors: string[];
}

const withQuery = (path: string, q: string) => `${path}${path.includes('?') ? '&' : '?'}${q}`;

/** Follows next_cursor from the first page to the last, `limit` items a page, checking each page's envelope. */
export async function walk(t: Test, call: Call, path: string, limit: number, creds?: ApiCredentials): Promise<Walk> {
  const out: Walk = { ids: [], pages: 0, cursors: [] };
  let cursor: string | null = null;
  do {
    const r = await call('GET', withQuery(path, `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), undefined, creds);
    if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode} ${r.body}`);
    const body = r.json() as { data: { id: string }[]; next_cursor: string | null; has_more: boolean };
    t.same(Object.keys(body).sort(), ['data', 'has_more', 'next_cursor'], `${path} page ${out.pages + 1}: the envelope`);
    t.equal(body.has_more, body.next_cursor !== null, `${path} page ${out.pages + 1}: has_more exactly when there is a next_cursor`);
    t.ok(body.has_more ? body.data.length === limit : body.data.length <= limit, `${path} page ${out.pages + 1}: full unless the last`);
    out.ids.push(...body.data.map((d) => d.id));
    out.pages++;
    cursor = body.next_cursor;
    if (cursor) out.cursors.push(cursor);
    if (out.pages > 1000) throw new Error(`${path}: the walk does not end`);
  } while (cursor);
  return out;
}

/** `limit` 0, 101, not an integer or not plain decimal text: 400 invalid_request naming `limit`. */
export async function refusesBadLimits(t: Test, call: Call, path: string): Promise<void> {
  for (const limit of ['0', '101', '1.5', '2.0', 'abc', '', '025', '1e1', '-1', '0x10']) {
    const r = await call('GET', withQuery(path, `limit=${encodeURIComponent(limit)}`));
    t.equal(r.statusCode, 400, `limit=${limit}`);
    // A schema refusal also lists the field (docs/platform/errors.md): `limit`, by its name.
    t.same(Object.keys(r.json()).sort(), r.json().fields ? ['code', 'error', 'fields', 'request_id'] : ['code', 'error', 'request_id'], `limit=${limit}: {error, code, request_id} or {error, code, fields, request_id}`);
    t.equal(r.json().request_id, r.headers['x-request-id'], `limit=${limit}: request_id is the header's`);
    if (r.json().fields) t.same(r.json().fields.map((f: { field: string }) => f.field), ['limit'], `limit=${limit}: fields names limit`);
    t.equal(r.json().code, 'invalid_request', `limit=${limit}`);
    t.match(r.json().error, /limit/, `limit=${limit}: the message names the parameter`);
  }
  const twice = await call('GET', withQuery(path, 'limit=2&limit=3'));
  t.equal(twice.statusCode, 400, 'limit given twice');
  t.match(twice.json(), { code: 'invalid_request', error: /limit/ });
}

/** A cursor edited, cut short, of another version or made up: 400 invalid_cursor. */
export async function refusesForgedCursors(t: Test, call: Call, path: string, cursor: string): Promise<void> {
  const [version, sealed] = cursor.split('.');
  const bytes = Buffer.from(sealed!, 'base64url');
  const flip = (i: number) => {
    const b = Buffer.from(bytes);
    b[i]! ^= 1;
    return `${version}.${b.toString('base64url')}`;
  };
  const forged: [string, string][] = [
    ['a nonce bit flipped', flip(0)],
    ['a ciphertext bit flipped', flip(30)],
    ['a tag bit flipped', flip(bytes.length - 1)],
    ['no version', sealed!],
    ['another version', `c0.${sealed}`],
    ['cut short', `${version}.${bytes.subarray(0, bytes.length - 2).toString('base64url')}`],
    ['an extra part', `${cursor}.x`],
    ['made up', 'garbage'],
  ];
  for (const [what, c] of forged) {
    const r = await call('GET', withQuery(path, `cursor=${encodeURIComponent(c)}`));
    t.equal(r.statusCode, 400, `cursor with ${what}`);
    t.equal(r.json().code, 'invalid_cursor', `cursor with ${what}`);
  }
}
