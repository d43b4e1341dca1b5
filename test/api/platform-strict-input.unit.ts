// Strict input on the platform API (docs/security.md "Strict input"), one table row per case over the
// real routes: no type coercion (a string, number, null or list where another type belongs is 400 and
// changes nothing), querystring numbers read from plain decimal text only where the schema says so,
// authentication and permission before the body (401/403 whatever the body), the Authorization scheme
// matched case-insensitively, unknown fields refused even when named like Object.prototype properties,
// and `__proto__` / `constructor.prototype` keys refused by the JSON parser with 400 forbidden_key.
import t, { type Test } from 'tap';
import { setupPlatform, LOOPBACK_RECEIVERS } from './setup-platform.ts';

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

async function fixture(t: Test) {
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: 'https://example.com/hook', events: ['payment.confirmed'] })).json();
  await s.call('PUT', '/v1/branding', { brand_name: 'Acme' });
  /** Everything a refused request must leave alone: the endpoint, the branding, the audit log. */
  const state = async () => ({
    endpoints: (await s.call('GET', '/v1/webhook-endpoints')).json(),
    branding: (await s.call('GET', '/v1/branding')).json(),
    audit: (await s.platform.audit.list(s.sandbox.id)).length,
  });
  /** A request with a raw body (any bytes, sent as JSON) and any Authorization header. */
  const raw = (method: Method, url: string, payload: string | Buffer | undefined, authorization: string | null = `Bearer ${s.owner.token}`, headers: Record<string, string> = {}) =>
    s.app.inject({ method, url, headers: { ...(authorization !== null ? { authorization } : {}), ...(payload !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(payload !== undefined ? { payload } : {}) });
  return { s, ep, state, raw };
}

t.test('no coercion: a value of the wrong JSON type is 400 invalid_request and changes nothing', async (t) => {
  const { s, ep, state, raw } = await fixture(t);
  const rows: [Method, string, unknown, string][] = [
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: 'false' }, 'enabled'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: 'true' }, 'enabled'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: 0 }, 'enabled'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: null }, 'enabled'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { events: 'payment.confirmed' }, 'events'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { url: ['https://example.com/other'] }, 'url'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { description: 5 }, 'description'],
    ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { description: true }, 'description'],
    ['POST', '/v1/webhook-endpoints', { url: 'https://example.com/b', events: 'payment.confirmed' }, 'events'],
    ['POST', '/v1/webhook-endpoints', { url: 'https://example.com/b', events: ['payment.confirmed'], description: 7 }, 'description'],
    ['POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: '3600' }, 'overlap_sec'],
    ['POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 3600.5 }, 'overlap_sec'],
    ['POST', '/v1/webhook-deliveries/bulk-replay', { delivery_ids: 'whd_000000000000000000000000aa' }, 'delivery_ids'],
    ['POST', '/v1/branding/logo/upload-url', { content_type: 'image/png', content_length: '100' }, 'content_length'],
    ['POST', '/v1/branding/logo', { object_key: 5 }, 'object_key'],
    ['POST', '/v1/branding/email-domains', { domain: 123 }, 'domain'],
    ['POST', '/v1/mfa/verifications', { code: 123456, action: `rotate_secret:${ep.id}` }, 'code'],
    ['PUT', '/v1/branding', ['brand_name', 'x'], 'body'],
    ['PUT', '/v1/branding', 'brand_name', 'body'],
  ];
  const before = await state();
  for (const [method, url, body, names] of rows) {
    const r = await raw(method, url, JSON.stringify(body));
    const what = `${method} ${url.replace(ep.id, ':id')} ${JSON.stringify(body)}`;
    t.equal(r.statusCode, 400, what);
    t.same(Object.keys(r.json()).sort(), ['code', 'error', 'fields', 'request_id'], `${what}: {error, code, fields, request_id}`);
    t.equal(r.json().code, 'invalid_request');
    t.same(r.json().fields.map((f: { field: string }) => f.field), [names], `${what}: names the field by its JSON name`);
    t.match(r.json().error, `${names}: `, `${what}: the message names it too`);
  }
  t.same(await state(), before, 'nothing changed');
  t.equal((await s.call('GET', `/v1/webhook-endpoints/${ep.id}`)).json().enabled, true, 'the endpoint is still enabled');
  // The same fields with the right types are accepted.
  t.equal((await s.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: false, description: 'paused' })).statusCode, 200);
  t.equal((await s.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: true, events: ['payment.confirmed', 'webhook.test'] })).statusCode, 200);
});

t.test('querystring: limit is read from plain decimal text only; anything else is 400', async (t) => {
  const { s } = await fixture(t);
  for (let i = 0; i < 3; i++) await s.call('POST', '/v1/webhook-endpoints', { url: `https://example.com/h${i}`, events: ['payment.confirmed'] });
  const ok: [string, number][] = [['/v1/webhook-endpoints?limit=2', 2], ['/v1/webhook-endpoints?limit=100', 4], ['/v1/webhook-endpoints', 4], ['/v1/webhook-deliveries?limit=5&status=pending', 0]];
  for (const [url, n] of ok) {
    const r = await s.call('GET', url);
    t.equal(r.statusCode, 200, url);
    t.equal(r.json().data.length, n, `${url}: ${n} items`);
  }
  const bad = ['limit=2.0', 'limit=1e1', 'limit=0x2', 'limit=%202', 'limit=', 'limit=abc', 'limit=02', 'limit=-1', 'limit=0', 'limit=101', 'limit=1&limit=2', 'limit=true'];
  for (const q of bad) {
    for (const path of ['/v1/webhook-endpoints', '/v1/webhook-deliveries']) {
      const r = await s.call('GET', `${path}?${q}`);
      t.equal(r.statusCode, 400, `${path}?${q}`);
      t.equal(r.json().code, 'invalid_request');
    }
  }
  t.equal((await s.call('GET', '/v1/webhook-deliveries?status=1')).statusCode, 400, 'an enum is not coerced either');
});

t.test('authentication and permission come before the body: 401 or 403 whatever the body', async (t) => {
  const { s, ep, state, raw } = await fixture(t);
  const bodies: [string, string | Buffer][] = [
    ['malformed JSON', '{"url": '],
    ['wrong types', JSON.stringify({ url: 5, events: 'x' })],
    ['unknown field', JSON.stringify({ url: 'https://example.com/x', events: ['payment.confirmed'], toString: 'x' })],
    ['__proto__', '{"url":"https://example.com/x","events":["payment.confirmed"],"__proto__":{"admin":true}}'],
    ['not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
  ];
  const routes: [Method, string][] = [['POST', '/v1/webhook-endpoints'], ['PATCH', `/v1/webhook-endpoints/${ep.id}`], ['PUT', '/v1/branding'], ['POST', '/v1/webhook-deliveries/bulk-replay']];
  const before = await state();
  for (const [method, url] of routes) {
    for (const [name, body] of bodies) {
      for (const auth of [null, 'Bearer svc_test_nope', `Basic ${s.owner.token}`]) {
        const r = await raw(method, url, body, auth);
        t.equal(r.statusCode, 401, `${method} ${url.replace(ep.id, ':id')}, ${name}, Authorization ${auth?.split(' ')[0] ?? 'absent'}: 401`);
        t.equal(r.json().code, 'unauthorized');
      }
      const viewer = await raw(method, url, body, `Bearer ${s.viewer.token}`);
      t.equal(viewer.statusCode, 403, `${method} ${url.replace(ep.id, ':id')}, ${name}, a viewer: 403`);
      t.equal(viewer.json().code, 'role_denied');
    }
  }
  t.same(await state(), before, 'nothing changed');
  // Authenticated and allowed, the same bodies are refused on their own merits.
  t.equal((await raw('POST', '/v1/webhook-endpoints', bodies[0]![1])).statusCode, 400);
  t.equal((await raw('POST', '/v1/webhook-endpoints', bodies[1]![1])).statusCode, 400);
  t.equal((await raw('POST', '/v1/webhook-endpoints', bodies[4]![1])).json().error, 'body is not valid UTF-8');
});

t.test('the Authorization scheme is case-insensitive; the rest of the header is not loosened', async (t) => {
  const { s, raw } = await fixture(t);
  const tok = s.owner.token;
  const rows: [string, number][] = [
    [`Bearer ${tok}`, 200], [`bearer ${tok}`, 200], [`BEARER ${tok}`, 200], [`BeArEr ${tok}`, 200], [`Bearer  ${tok}`, 200], [`bearer ${tok} `, 200],
    [`Bearer${tok}`, 401], ['Bearer', 401], ['Bearer ', 401], [`Bearer ${tok} extra`, 401], [`Token ${tok}`, 401], [tok, 401], [`Bearer ${tok.toUpperCase()}`, 401],
  ];
  for (const [authorization, status] of rows) {
    const r = await raw('GET', '/v1/webhook-endpoints', undefined, authorization);
    t.equal(r.statusCode, status, JSON.stringify(authorization.replace(tok, '<key>').replace(tok.toUpperCase(), '<KEY>')));
  }
  const put = await raw('PUT', '/v1/branding', JSON.stringify({ brand_name: 'Lower' }), `bearer ${tok}`);
  t.equal(put.statusCode, 200, 'a change with a lower-case scheme');
  t.equal(put.json().theme.brand_name, 'Lower');
});

t.test('unknown fields are refused even when named like Object.prototype properties; nothing is stored', async (t) => {
  const { s, ep, state, raw } = await fixture(t);
  const names = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__', 'propertyIsEnumerable', 'toLocaleString'];
  const before = await state();
  for (const name of names) {
    const schemaRows: [Method, string, Record<string, unknown>][] = [
      ['POST', '/v1/webhook-endpoints', { url: 'https://example.com/x', events: ['payment.confirmed'], [name]: 'x' }],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: false, [name]: 'x' }],
      ['POST', '/v1/webhook-deliveries/bulk-replay', { delivery_ids: ['whd_000000000000000000000000aa'], [name]: {} }],
      ['POST', '/v1/branding/logo/upload-url', { content_type: 'image/png', content_length: 10, [name]: 1 }],
      ['POST', '/v1/branding/email-domains', { domain: 'mail.acme.example', [name]: 'x' }],
    ];
    for (const [method, url, body] of schemaRows) {
      const r = await raw(method, url, JSON.stringify(body));
      t.equal(r.statusCode, 400, `${method} ${url.replace(ep.id, ':id')} with ${name}`);
      t.equal(r.json().code, 'invalid_request');
      t.match(r.json().error, name);
    }
    // Branding validates field by field, and an unknown field is a schema violation there too: 400 naming the field, at the top level, in a surface, in copy_overrides.
    const themeRows: [Record<string, unknown>, string][] = [
      [{ brand_name: 'Fine', [name]: 'x' }, name],
      [{ surfaces: { email: { brand_name: 'Fine', [name]: 'x' } } }, `surfaces.email.${name}`],
      [{ surfaces: { [name]: { brand_name: 'x' } } }, `surfaces.${name}`],
      [{ copy_overrides: { singular: 'x', [name]: 'y' } }, `copy_overrides.${name}`],
    ];
    for (const [body, field] of themeRows) {
      const r = await raw('PUT', '/v1/branding', JSON.stringify(body));
      t.equal(r.statusCode, 400, `PUT /branding ${JSON.stringify(body)}`);
      t.equal(r.json().code, 'invalid_request');
      t.same(r.json().fields.map((f: { field: string }) => f.field), [field], `names ${field}`);
    }
  }
  t.same(await state(), before, 'nothing changed');
  t.notOk(JSON.stringify((await s.call('GET', '/v1/branding')).json()).includes('constructor'), 'no such key stored');
});

t.test('__proto__ and constructor.prototype keys are a 400 forbidden_key from the JSON parser, however spelled', async (t) => {
  const { ep, state, raw } = await fixture(t);
  const bodies = [
    '{"__proto__":{"brand_name":"Polluted"}}',
    '{"brand_name":"Fine","__proto__":{"isAdmin":true}}',
    '{"copy_overrides":{"singular":"x","__proto__":{"plural":"y"}}}',
    '{"surfaces":{"email":{"__proto__":{"brand_name":"x"}}}}',
    '{"\\u005f_proto__":{"brand_name":"x"}}',
    '{"__pro\\u0074o__":1}',
    '{"constructor":{"prototype":{"brand_name":"x"}}}',
    '{"a":[{"constructor":{"prototype":{}}}]}',
  ];
  const before = await state();
  for (const body of bodies) {
    for (const [method, url] of [['PUT', '/v1/branding'], ['POST', '/v1/webhook-endpoints'], ['PATCH', `/v1/webhook-endpoints/${ep.id}`]] as [Method, string][]) {
      const r = await raw(method, url, body);
      t.equal(r.statusCode, 400, `${method} ${url.replace(ep.id, ':id')} ${body}`);
      t.same(r.json(), { error: r.json().error, code: 'forbidden_key', request_id: r.headers['x-request-id'] });
      t.match(r.json().error, /__proto__|constructor\.prototype/);
    }
  }
  t.same(await state(), before, 'nothing changed');
  t.equal(({} as Record<string, unknown>).isAdmin, undefined, 'no prototype was touched');
  // A key merely named constructor (no prototype inside) is an ordinary unknown field.
  const c = await raw('PUT', '/v1/branding', '{"constructor":{"name":"x"}}');
  t.equal(c.statusCode, 400);
  t.equal(c.json().code, 'invalid_request');
});
