// One error model for every list of the platform API (docs/platform/errors.md, docs/platform/pagination.md):
// each GET with `cursor`/`limit` in the OpenAPI document answers a forged, truncated or other list's cursor
// with 400 invalid_cursor, and `limit` that is not plain decimal or is out of range, or an unknown query
// parameter, with 400 invalid_request naming the field; a valid first page still answers 200. The lists
// are read from the app's own document, so a new list is covered without being named here. The vault
// API's lists (signed requests) get the same checks; their walks with real cursors are in test/api/vault/.
import t from 'tap';
import { setupPlatform } from './setup-platform.ts';
import { vaultApp } from './vault/vault-app.ts';
import { refusesBadLimits } from './vault/list-walk.ts';

interface Param { name: string; in: string; required?: boolean }

t.test('every list answers bad cursors and limits as errors.md says, and its first page still works', async (t) => {
  const s = await setupPlatform(t);
  const doc = (await s.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { get?: { parameters?: Param[] } }> };
  const lists = Object.entries(doc.paths)
    .filter(([, item]) => (item.get?.parameters ?? []).some((p) => p.in === 'query' && p.name === 'cursor'))
    .map(([path, item]) => ({ path, query: (item.get!.parameters ?? []).filter((p) => p.in === 'query') }));
  t.ok(lists.length >= 25, `the document lists the paginated operations (${lists.length})`);

  // Real cursors: a first page of two lists with more than one item each.
  for (const n of [1, 2]) t.equal((await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: `Holder ${n}` })).statusCode, 201);
  const cursorOf = async (url: string) => {
    const r = await s.call('GET', `${url}?limit=1`);
    t.equal(r.statusCode, 200, `first page of ${url}`);
    t.type(r.json().next_cursor, 'string', `${url} has a next page`);
    return r.json().next_cursor as string;
  };
  const holders = await cursorOf('/v1/account-holders');
  const other = await cursorOf('/v1/workspace-tokens').catch(() => undefined);
  const foreignFor = (path: string) => (path === '/v1/account-holders' ? other : holders);

  for (const { path, query } of lists) {
    t.notOk(query.some((p) => p.required), `${path}: no query parameter is required`);
    // Lists under an id or the member's own need that id or session first; their query schema still answers.
    const open = !path.includes('{') && !path.includes('/self/');
    const url = path.replace(/\{[^}]+\}/g, 'x');
    const first = open ? await s.call('GET', url) : undefined;
    if (first) {
      t.equal(first.statusCode, 200, `${path}: the first page`);
      t.same(Object.keys(first.json()).sort(), ['data', 'has_more', 'next_cursor'], `${path}: the pagination envelope`);
    }
    const bad: [string, number, string, string | undefined][] = [
      ['limit=0', 400, 'invalid_request', 'limit'], ['limit=abc', 400, 'invalid_request', 'limit'], ['limit=1e1', 400, 'invalid_request', 'limit'],
      ['limit=101', 400, 'invalid_request', 'limit'], ['limit=%2B5', 400, 'invalid_request', 'limit'], ['limit=05', 400, 'invalid_request', 'limit'],
      ['colour=1', 400, 'invalid_request', 'colour'],
    ];
    if (open) {
      const foreign = foreignFor(path);
      bad.push(['cursor=c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 400, 'invalid_cursor', undefined],
        ['cursor=not-a-cursor', 400, 'invalid_cursor', undefined],
        [`cursor=${encodeURIComponent(holders.slice(0, -6))}`, 400, 'invalid_cursor', undefined]);
      if (foreign) bad.push([`cursor=${encodeURIComponent(foreign)}`, 400, 'invalid_cursor', undefined]);
    }
    for (const [q, status, code, field] of bad) {
      const r = await s.call('GET', `${url}?${q}`);
      if (!open && r.statusCode === 404) continue; // the id is looked up before the cursor; the schema ran first for limit
      t.equal(r.statusCode, status, `${path}?${q.slice(0, 40)}`);
      t.equal(r.json().code, code, `${path}?${q.slice(0, 40)}: ${code}`);
      if (field && !path.includes('/self/')) t.ok((r.json().fields ?? []).some((f: { field: string }) => f.field === field), `${path}?${q.slice(0, 20)}: names ${field}`);
    }
    if (first) t.same((await s.call('GET', url)).json(), first.json(), `${path}: nothing changed`);
  }
});

t.test('lists under a real account holder answer bad cursors as the open lists do, after the id is found', async (t) => {
  const s = await setupPlatform(t);
  const holder = (await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Holder under test' })).json() as { id: string };
  for (const n of [1, 2]) t.equal((await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: `Other ${n}` })).statusCode, 201);
  const foreign = (await s.call('GET', '/v1/account-holders?limit=1')).json().next_cursor as string;
  for (const path of [`/v1/account-holders/${holder.id}/wallets`, `/v1/account-holders/${holder.id}/history`]) {
    const first = await s.call('GET', path);
    t.equal(first.statusCode, 200, `${path}: the first page`);
    for (const q of ['cursor=not-a-cursor', 'cursor=c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', `cursor=${encodeURIComponent(foreign)}`]) {
      const r = await s.call('GET', `${path}?${q}`);
      t.equal(r.statusCode, 400, `${path}?${q.slice(0, 30)}`);
      t.equal(r.json().code, 'invalid_cursor', `${path}?${q.slice(0, 30)}: invalid_cursor (another list's cursor too)`);
    }
    t.same((await s.call('GET', path)).json(), first.json(), `${path}: nothing changed`);
  }
});

t.test('every vault API list answers bad limits, an unknown parameter and a made-up cursor as errors.md says', async (t) => {
  const v = await vaultApp(t);
  const doc = (await v.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { get?: { parameters?: Param[] } }> };
  const lists = Object.keys(doc.paths).filter((path) => (doc.paths[path]!.get?.parameters ?? []).some((p) => p.in === 'query' && p.name === 'cursor'));
  t.ok(lists.includes('/v1/vaults'), `the vault API's lists are in its document (${lists.join(', ')})`);
  for (const path of lists.filter((p) => !p.includes('{'))) {
    const first = await v.call('GET', path);
    t.equal(first.statusCode, 200, `${path}: the first page`);
    t.same(Object.keys(first.json()).sort(), ['data', 'has_more', 'next_cursor'], `${path}: the pagination envelope`);
    await refusesBadLimits(t, v.call, path);
    for (const [q, code] of [['colour=1', 'invalid_request'], ['cursor=not-a-cursor', 'invalid_cursor'], ['cursor=c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'invalid_cursor']] as const) {
      const r = await v.call('GET', `${path}?${q}`);
      t.equal(r.statusCode, 400, `${path}?${q.slice(0, 30)}`);
      t.equal(r.json().code, code, `${path}?${q.slice(0, 30)}: ${code}`);
    }
    t.same((await v.call('GET', path)).json(), first.json(), `${path}: nothing changed`);
  }
});
