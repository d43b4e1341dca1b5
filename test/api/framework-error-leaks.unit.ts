// No answer carries a framework's or library's error code or message (api/framework-errors.ts): each of
// Fastify's and Node's known error triggers (over-long path parameters, bad percent-encoding, bad or
// missing content types, bad or empty JSON, a body too large or shorter than its Content-Length, huge
// headers, a request line that is not HTTP, unsupported methods) answers the documented `{error, code}`
// with the request's id as `request_id` (docs/platform/errors.md), and nothing is stored. The two
// answered on the raw connection, before there is a request (huge headers, not HTTP), have no id.
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import type { InjectOptions } from 'fastify';
import type { AddressInfo } from 'node:net';
import { setupPlatform } from './setup-platform.ts';
import { vaultApp } from './vault/vault-app.ts';

const LEAK = /FST_|fastify|ajv|typebox|Bad Request|statusCode|Unsupported Media Type|Request body/;

function checkShape(t: Test, what: string, status: number, body: string, contentType: unknown, requestId?: unknown) {
  t.match(String(contentType), /^application\/json/, `${what}: answered as JSON`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    t.fail(`${what}: the body is JSON (got ${body.slice(0, 120)})`);
    return;
  }
  const o = parsed as Record<string, unknown>;
  // The error model (docs/platform/errors.md): {error, code, request_id}, and on a 400 or 422 the bad fields by JSON name.
  const keys = Object.keys(o).filter((k) => k !== 'fields').sort();
  t.same(keys, requestId === undefined ? ['code', 'error'] : ['code', 'error', 'request_id'], `${what} (${status}): {error, code${requestId === undefined ? '' : ', request_id'}}`);
  if (requestId !== undefined) t.equal(o.request_id, requestId, `${what}: request_id is the X-Request-Id header's`);
  if ('fields' in o) {
    t.ok([400, 422].includes(status) && Array.isArray(o.fields) && (o.fields as unknown[]).every((f) => typeof f === 'object' && f !== null && Object.keys(f).sort().join() === 'field,reason'), `${what}: fields only on a 400 or 422, each {field, reason}`);
  }
  t.type(o.error, 'string');
  t.match(o.code, /^[a-z_]+$/, `${what}: a code of ours (${String(o.code)})`);
  t.notMatch(body, LEAK, `${what}: no framework code or text (${body.slice(0, 160)})`);
}

/** Sends raw bytes to a listening server and returns the status line's code, the content type and the body. */
function raw(port: number, bytes: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      if (status === 0) return reject(new Error(`no HTTP answer: ${text.slice(0, 200)}`));
      resolve({ status, contentType: /content-type: ([^\r\n]+)/i.exec(head)?.[1] ?? '', body });
    });
    socket.write(bytes);
  });
}

t.test('the platform API answers every framework error trigger in its own error model, and stores nothing', async (t) => {
  const s = await setupPlatform(t);
  const auth = { authorization: `Bearer ${s.owner.token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const valid = JSON.stringify({ type: 'individual', display_name: 'Ada' });
  const cases: { what: string; status: number; req: InjectOptions }[] = [
    { what: 'a 200-character path parameter', status: 400, req: { method: 'GET', url: `/v1/account-holders/${'a'.repeat(200)}`, headers: auth } },
    { what: 'a 200-character path parameter without a key', status: 401, req: { method: 'GET', url: `/v1/account-holders/${'a'.repeat(200)}` } },
    { what: 'a 9000-character path parameter', status: 400, req: { method: 'GET', url: `/v1/account-holders/${'a'.repeat(9000)}`, headers: auth } },
    { what: 'bad percent-encoding in the path', status: 400, req: { method: 'GET', url: '/v1/account-holders/%E0%A4%A', headers: auth } },
    { what: 'a text/plain body', status: 400, req: { method: 'POST', url: '/v1/account-holders', headers: { ...auth, 'content-type': 'text/plain' }, payload: valid } },
    { what: 'an application/xml body', status: 415, req: { method: 'POST', url: '/v1/account-holders', headers: { ...auth, 'content-type': 'application/xml' }, payload: '<a/>' } },
    { what: 'a malformed Content-Type', status: 415, req: { method: 'POST', url: '/v1/account-holders', headers: { ...auth, 'content-type': '/;;' }, payload: valid } },
    { what: 'bad JSON', status: 400, req: { method: 'POST', url: '/v1/account-holders', headers: json, payload: '{"type":' } },
    { what: 'an empty JSON body', status: 400, req: { method: 'POST', url: '/v1/account-holders', headers: json, payload: '' } },
    { what: 'a body larger than the limit', status: 413, req: { method: 'POST', url: '/v1/account-holders', headers: json, payload: JSON.stringify({ type: 'individual', display_name: 'x'.repeat(2_000_000) }) } },
    { what: 'a body shorter than its Content-Length', status: 400, req: { method: 'POST', url: '/v1/account-holders', headers: { ...json, 'content-length': '500' }, payload: valid } },
    { what: 'PROPFIND', status: 404, req: { method: 'PROPFIND' as InjectOptions['method'], url: '/v1/account-holders', headers: auth } },
    { what: 'TRACE', status: 404, req: { method: 'TRACE' as InjectOptions['method'], url: '/v1/account-holders', headers: auth } },
    { what: 'DELETE of a collection', status: 404, req: { method: 'DELETE', url: '/v1/account-holders', headers: auth } },
  ];
  for (const c of cases) {
    const res = await s.app.inject(c.req);
    t.equal(res.statusCode, c.status, `${c.what}: ${c.status}`);
    checkShape(t, c.what, res.statusCode, res.body, res.headers['content-type'], res.headers['x-request-id']);
  }
  // Node's own parser: only a listening server sees these.
  await s.app.listen({ host: '127.0.0.1', port: 0 });
  const port = (s.app.server.address() as AddressInfo).port;
  const huge = await raw(port, `GET /v1/account-holders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.owner.token}\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
  t.equal(huge.status, 431, 'huge headers: 431');
  checkShape(t, 'huge headers', huge.status, huge.body, huge.contentType);
  const garbage = await raw(port, 'NOT HTTP AT ALL\r\n\r\n');
  t.equal(garbage.status, 400, 'a request line that is not HTTP: 400');
  checkShape(t, 'not HTTP', garbage.status, garbage.body, garbage.contentType);
  // Read back: none of the above created anything.
  const list = await s.call('GET', '/v1/account-holders');
  t.equal(list.statusCode, 200);
  t.same(list.json().data, [], 'no account holder was created');
});

t.test('the vault API answers an over-long parameter and bad percent-encoding in its own error model', async (t) => {
  const s = await vaultApp(t);
  for (const [what, path] of [['a 9000-character path parameter', `/v1/vaults/${'v'.repeat(9000)}`], ['bad percent-encoding', '/v1/vaults/%E0%A4%A']] as const) {
    const res = await s.app.inject({ method: 'GET', url: path });
    t.equal(res.statusCode, 400, `${what}: 400`);
    checkShape(t, what, res.statusCode, res.body, res.headers['content-type'], res.headers['x-request-id']);
  }
  const long = await s.call('GET', `/v1/vaults/${'v'.repeat(300)}`);
  t.not(long.statusCode, 414, 'a 300-character id reaches its route');
  checkShape(t, 'a 300-character id', long.statusCode, long.body, long.headers['content-type'], long.headers['x-request-id']);
});
