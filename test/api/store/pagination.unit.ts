// Pagination: a 1,000-item walk with inserts during it, limits, forged and filter-changed cursors.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';

t.test('a walk over 1,000 endpoints with inserts during it never repeats or skips', async (t) => {
  const s = await setupPlatform(t);
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const actor = { type: 'operator' as const, id: 'seed' };
  const original = new Set<string>();
  for (let i = 0; i < 1000; i++) original.add((await s.platform.endpoints.create(scope, actor, { url: `https://example.com/${i}`, events: ['payment.confirmed'] })).endpoint.id);
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const q: string = cursor ? `?limit=100&cursor=${encodeURIComponent(cursor)}` : '?limit=100';
    const r = await s.call('GET', `/v1/webhook-endpoints${q}`);
    t.equal(r.statusCode, 200);
    const body = r.json() as { data: { id: string }[]; next_cursor: string | null; has_more: boolean };
    seen.push(...body.data.map((d) => d.id));
    t.equal(body.has_more, body.next_cursor !== null);
    cursor = body.next_cursor;
    pages++;
    // Concurrent inserts while the walk is under way.
    for (let k = 0; k < 7; k++) await s.platform.endpoints.create(scope, actor, { url: `https://example.com/new/${pages}/${k}`, events: ['payment.confirmed'] });
  } while (cursor);
  t.equal(new Set(seen).size, seen.length, 'no repeats');
  t.equal([...original].filter((id) => !seen.includes(id)).length, 0, 'no gaps among the items that existed at the start');
  t.ok(seen.length >= 1000);
});

t.test('limit default 25, max 100; forged, truncated and cross-list cursors; changed filters', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now++ });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  for (let i = 0; i < 30; i++) await s.platform.endpoints.create(scope, { type: 'operator', id: 'seed' }, { url: `https://example.com/${i}`, events: ['payment.confirmed'] });
  const first = (await s.call('GET', '/v1/webhook-endpoints')).json();
  t.equal(first.data.length, 25);
  t.equal(first.has_more, true);
  const second = (await s.call('GET', `/v1/webhook-endpoints?cursor=${encodeURIComponent(first.next_cursor)}`)).json();
  t.equal(second.data.length, 5);
  t.same(second, { data: second.data, next_cursor: null, has_more: false });
  t.equal((await s.call('GET', '/v1/webhook-endpoints?limit=101')).statusCode, 400);
  t.equal((await s.call('GET', '/v1/webhook-endpoints?limit=0')).statusCode, 400);
  // Opaque: authenticated encryption, so neither the workspace nor the position can be read from it.
  const [version, sealed] = (first.next_cursor as string).split('.');
  t.equal(version, 'c1');
  const readable = Buffer.from(sealed!, 'base64url').toString('latin1');
  t.notMatch(readable, s.sandbox.id, 'the cursor does not expose the workspace id');
  t.notMatch(readable, first.data[24].id, 'nor the last id');
  const bytes = Buffer.from(sealed!, 'base64url');
  const flipped = Buffer.from(bytes);
  flipped[bytes.length - 20]! ^= 1;
  for (const c of [`c1.${flipped.toString('base64url')}`, `c1.${bytes.subarray(0, bytes.length - 1).toString('base64url')}`, `c2.${sealed}`, sealed!, `${first.next_cursor}.x`, 'garbage']) {
    const r = await s.call('GET', `/v1/webhook-endpoints?cursor=${encodeURIComponent(c)}`);
    t.equal(r.statusCode, 400);
    t.equal(r.json().code, 'invalid_cursor');
  }
  const other = await s.platform.tenancy.createKey((await s.platform.tenancy.createTenant('Other')).sandbox.id, 'owner');
  t.equal((await s.call('GET', `/v1/webhook-endpoints?cursor=${encodeURIComponent(first.next_cursor)}`, undefined, other.token)).json().code, 'invalid_cursor', 'a cursor is bound to its workspace');
  t.equal((await s.call('GET', `/v1/webhook-deliveries?cursor=${encodeURIComponent(first.next_cursor)}`)).json().code, 'invalid_cursor', 'and to its list');

  const rx = 'https://example.com/d';
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx, events: ['payment.confirmed'] })).json();
  for (let i = 0; i < 3; i++) await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: `pay_${i}` }, { type: 'system', id: 't' }, { payment_id: `pay_${i}`, status: 'confirmed' });
  const d1 = (await s.call('GET', `/v1/webhook-deliveries?limit=1&status=pending&endpoint_id=${ep.id}`)).json();
  t.equal(d1.data.length, 1);
  const changed = await s.call('GET', `/v1/webhook-deliveries?limit=1&status=failed&endpoint_id=${ep.id}&cursor=${encodeURIComponent(d1.next_cursor)}`);
  t.equal(changed.statusCode, 400);
  t.equal(changed.json().code, 'cursor_filter_mismatch');
  const same = (await s.call('GET', `/v1/webhook-deliveries?limit=1&status=pending&endpoint_id=${ep.id}&cursor=${encodeURIComponent(d1.next_cursor)}`)).json();
  t.not(same.data[0].id, d1.data[0].id);
});
