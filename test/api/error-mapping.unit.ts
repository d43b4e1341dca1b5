// The API edge of the error model: a CustodyError a service throws reaches the client with the status
// of the HTTP table (core/errors/http-status.ts) and the body {error, code, request_id}; a bug and an
// unexpected plain Error answer 500 `internal` without their text; the SDK gets the kind back from the
// status. Every error answer of both APIs names its request by the same id in X-Request-Id and the body.
import t from 'tap';
import { vaultApp } from './vault/vault-app.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { RosterError } from '../../core/trust/roster.ts';
import { ObjectStoreError } from '../../api/adapters/object-store.ts';
import { CustodyClient, CustodyApiError } from '../../api/sdk/client.ts';
import { PlatformClient } from '../../api/sdk/platform-client.ts';
import { setupPlatform } from './setup-platform.ts';

/** A vault app whose listKeys (GET /v1/api-keys) throws what `next` holds. */
async function throwingApp(t: Parameters<typeof vaultApp>[0]) {
  const s = await vaultApp(t);
  const box: { next: unknown } = { next: undefined };
  s.vaults.listKeys = async () => {
    throw box.next;
  };
  const answer = async (err: unknown) => {
    box.next = err;
    const res = await s.call('GET', '/v1/api-keys');
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, raw: res.body, requestId: res.headers['x-request-id'] };
  };
  return { ...s, answer };
}

t.test('a service-thrown CustodyError of each kind gets the table status and {error, code, request_id}', async (t) => {
  const { answer } = await throwingApp(t);
  const cases: [ErrorCode, number][] = [
    ['invalid_request', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['conflict', 409],
    ['rate_limited', 429],
    ['party_failed', 502], // aborted
    ['unavailable', 503],
    ['chain_unavailable', 502], // transport
    // Codes answered with a more exact status than their kind's.
    ['validation_failed', 422],
    ['payload_too_large', 413],
    ['unsupported_media_type', 415],
  ];
  for (const [code, status] of cases) {
    const got = await answer(new CustodyError(code, `the ${code} message`));
    t.equal(got.status, status, `${code} -> ${status}`);
    t.type(got.requestId, 'string');
    t.same(got.body, { error: `the ${code} message`, code, request_id: got.requestId }, `${code}: the body is exactly {error, code, request_id}, the id the header has`);
  }
});

t.test('the shared error classes map like any CustodyError', async (t) => {
  const { answer } = await throwingApp(t);
  const roster = await answer(new RosterError('the roster does not verify'));
  t.equal(roster.status, 400);
  t.same(roster.body, { error: 'the roster does not verify', code: 'bad_roster', request_id: roster.requestId });
  const store = await answer(new ObjectStoreError('object store answered 503', 503));
  t.equal(store.status, 502);
  t.equal(store.body.code, 'object_store_error');
});

t.test('a bug and an unexpected plain Error answer 500 internal without their text', async (t) => {
  const { answer } = await throwingApp(t);
  const bug = await answer(new CustodyError('bug', 'invariant broken at /var/lib/custody/secret-path'));
  t.equal(bug.status, 500);
  t.same(bug.body, { error: 'internal error', code: 'internal', request_id: bug.requestId });
  t.notMatch(bug.raw, /secret-path|invariant/, 'the bug text does not leak');
  const plain = await answer(new Error('ECONNREFUSED 10.0.0.7:5432 password=hunter2'));
  t.equal(plain.status, 500);
  t.same(plain.body, { error: 'internal error', code: 'internal', request_id: plain.requestId });
  t.notMatch(plain.raw, /hunter2|ECONNREFUSED/, 'the plain error text does not leak');
  for (const thrown of ['a string, not an Error', { message: 'an object, not an Error' }]) {
    const got = await answer(thrown);
    t.equal(got.status, 500, 'a thrown non-Error is internal');
    t.same(got.body, { error: 'internal error', code: 'internal', request_id: got.requestId });
  }
});

t.test('the mapping holds on a real service path and on the routes Fastify answers itself', async (t) => {
  const { call } = await vaultApp(t);
  const missing = await call('GET', '/v1/vaults/vlt_000000000000000000000000');
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'not_found');
  const noRoute = await call('GET', '/v1/no-such-route');
  t.equal(noRoute.statusCode, 404);
  t.equal(noRoute.json().code, 'not_found');
  const invalid = await call('POST', '/v1/vaults', { tier: 'no-such-tier' });
  t.equal(invalid.statusCode, 400);
  t.equal(invalid.json().code, 'invalid_request');
});

t.test('the SDK gets the kind back from the status', async (t) => {
  const { app, creds, org, vaults } = await throwingApp(t);
  const client = new CustodyClient({
    baseUrl: 'http://api.test', organization: org.id, keyId: creds.keyId, secretKey: creds.secretKey,
    fetch: (async (url: string, init: RequestInit) => {
      const u = new URL(url);
      const res = await app.inject({ method: init.method as 'GET', url: u.pathname + u.search, headers: { host: u.host, ...(init.headers as Record<string, string>) }, ...(init.body !== undefined ? { payload: init.body as string } : {}) });
      return new Response(res.body, { status: res.statusCode, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch,
  });
  const cases: [ErrorCode, number, string | undefined][] = [
    ['cap_exceeded', 403, 'refused'],
    ['conflict', 409, 'conflict'],
    ['validation_failed', 422, 'invalid'],
    ['unavailable', 503, 'unavailable'],
    ['chain_unavailable', 502, undefined],
  ];
  for (const [code, status, kind] of cases) {
    vaults.listKeys = async () => {
      throw new CustodyError(code, `m ${code}`);
    };
    const err = await client.listApiKeys().then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CustodyApiError, `${code}: a CustodyApiError`);
    const e = err as CustodyApiError;
    t.equal(e.status, status, `${code}: status`);
    t.equal(e.code, code, `${code}: code`);
    t.equal(e.kind, kind, `${code}: kind`);
    t.equal(e.message, `m ${code}`);
  }
});

t.test('a 5xx answer names no internal endpoint: URLs, addresses and host:port pairs go to the log only', async (t) => {
  const { answer } = await throwingApp(t);
  for (const [code, message] of [
    ['unavailable', 'object store PUT http://minio.internal:9000/custody-branding/logo.png failed: connect ECONNREFUSED 10.0.4.17:9000'],
    ['chain_unavailable', 'the EVM node at https://rpc.internal.example/v2/abcdef did not answer'],
    ['unavailable', 'no connection to coordinator-2.svc.cluster.local:7400 ([fd00::12]:7400)'],
  ] as [ErrorCode, string][]) {
    const { status, body, raw } = await answer(new CustodyError(code, message));
    t.ok(status >= 500, `${code}: a 5xx`);
    t.equal(body.code, code, 'the code stays');
    t.notMatch(raw, /minio\.internal|10\.0\.4\.17|rpc\.internal|abcdef|svc\.cluster\.local|fd00|:9000|:7400/, `${code}: no endpoint in the answer`);
    t.match(body.error, /\[internal endpoint\]/, 'it says an endpoint was left out');
  }
  // A 4xx message is the caller's own business and stays whole.
  const { body } = await answer(new CustodyError('invalid_request', 'callback_url http://127.0.0.1:9/x is not allowed'));
  t.match(body.error, /127\.0\.0\.1:9/);
});

t.test('every error answer of both APIs carries its request id in the header and the body, the same', async (t) => {
  const vault = await vaultApp(t);
  const platform = await setupPlatform(t);
  const answers = {
    'vault: an unknown vault': await vault.call('GET', '/v1/vaults/vlt_000000000000000000000000'),
    'vault: a schema violation, with fields': await vault.call('POST', '/v1/vaults', { tier: 'no-such-tier' }),
    'vault: no such route': await vault.call('GET', '/v1/no-such-route'),
    'vault: unsigned': await vault.app.inject({ method: 'GET', url: '/v1/api-keys' }),
    'vault: bad JSON, answered by the framework handler': await vault.app.inject({ method: 'POST', url: '/v1/vaults', headers: { 'content-type': 'application/json' }, payload: '{"tier":' }),
    'platform: an unknown key': await platform.call('GET', '/v1/webhook-endpoints', undefined, 'svc_test_nope_nope'),
    'platform: an unknown endpoint': await platform.call('GET', '/v1/webhook-endpoints/whe_000000000000000000000000'),
    'platform: a schema violation, with fields': await platform.call('POST', '/v1/webhook-endpoints', { url: 5, colour: 'red' }),
    'platform: a viewer may not write': await platform.call('POST', '/v1/webhook-endpoints', { url: 'https://example.com/h', events: ['payment.confirmed'] }, platform.viewer.token),
  };
  const ids = new Set<string>();
  for (const [what, res] of Object.entries(answers)) {
    t.ok(res.statusCode >= 400, `${what}: an error (${res.statusCode})`);
    const header = res.headers['x-request-id'];
    t.match(header, /^[0-9a-f]{32}$/, `${what}: the header`);
    t.match(res.json(), { error: String, code: String, request_id: header }, `${what}: the body's request_id is the header's`);
    ids.add(String(header));
  }
  t.equal(ids.size, Object.keys(answers).length, 'each request its own id');
  const ok = await platform.call('GET', '/v1/webhook-endpoints');
  t.equal(ok.statusCode, 200);
  t.notOk('request_id' in ok.json(), 'a success answer is left as it is');
});

t.test('the SDK error exposes the request id: from the header, else from the body when a proxy dropped the header', async (t) => {
  const s = await setupPlatform(t);
  // What a proxy between the client and the API passes on: the body, with or without the header.
  const through = (keepHeader: boolean) => (async (url: string, init: RequestInit) => {
    const u = new URL(url);
    const res = await s.app.inject({ method: init.method as 'GET', url: u.pathname + u.search, headers: { host: u.host, ...(init.headers as Record<string, string>) } });
    seen.push(String(res.headers['x-request-id']));
    return new Response(res.body, { status: res.statusCode, headers: { 'content-type': 'application/json', ...(keepHeader ? { 'x-request-id': String(res.headers['x-request-id']) } : {}) } });
  }) as typeof fetch;
  const seen: string[] = [];
  for (const keepHeader of [true, false]) {
    const client = new PlatformClient({ baseUrl: 'http://api.test', apiKey: s.owner.token, fetch: through(keepHeader) });
    const err = await client.call('getWebhookEndpointsById', { id: 'whe_000000000000000000000000' }).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CustodyApiError, 'a CustodyApiError');
    t.match(err, { status: 404, code: 'not_found' });
    t.equal((err as CustodyApiError).requestId, seen.at(-1), keepHeader ? 'the header\'s id' : 'the body\'s id, the header gone');
  }
});
