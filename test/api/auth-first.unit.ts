// Authentication comes first, everywhere (docs/platform/errors.md "Order of checks"): every operation of
// both APIs in the OpenAPI document, except the public ones, answers 401 to a caller without
// credentials, whatever else is wrong with the request (a malformed Idempotency-Key or none, a body that
// is not JSON, of the wrong type or too large, an unknown content type, over-long path parameters, a bad
// cursor or limit), so an unauthenticated caller learns nothing about keys, records or rules. A wrong
// bearer key is refused the same way.
import t from 'tap';
import { join } from 'node:path';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { openTestStore } from '../support/test-store.ts';
import { setupPlatform } from './setup-platform.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../api/platform.ts';

interface Doc { paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>> }
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

t.test('every authenticated operation answers 401 before any other check', async (t) => {
  const { dir, store } = await openTestStore('auth-first-');
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 3 } });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, transactions: new TransactionService({ vaults, hasBackend: () => true }), platform });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
  const ops = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([m, op]) => METHODS.has(m) && Array.isArray(op.security) && op.security.length > 0)
    .map(([m]) => ({ method: m.toUpperCase(), path })));
  t.ok(ops.length > 150, `the document lists the authenticated operations (${ops.length})`);

  const variants: { what: string; headers: Record<string, string>; payload?: string; id: string; query: string }[] = [
    { what: 'nothing else wrong', headers: { 'content-type': 'application/json' }, payload: '{}', id: 'x1', query: '' },
    { what: 'a malformed Idempotency-Key', headers: { 'content-type': 'application/json', 'idempotency-key': ' \u00e9'.repeat(200) }, payload: '{}', id: 'x1', query: '' },
    { what: 'a body that is not JSON', headers: { 'content-type': 'application/json' }, payload: '{"a":', id: 'x1', query: '' },
    { what: 'a body of the wrong type', headers: { 'content-type': 'application/json' }, payload: '[1,2]', id: 'x1', query: '' },
    { what: 'an unknown content type', headers: { 'content-type': 'application/x-unknown' }, payload: 'zz', id: 'x1', query: '' },
    { what: 'an over-long path parameter and a bad cursor', headers: {}, id: 'y'.repeat(500), query: '?cursor=%00forged&limit=abc' },
    { what: 'a wrong bearer key', headers: { authorization: 'Bearer svc_test_key_0000000000000000000000_bogus', 'content-type': 'application/json', 'idempotency-key': 'k1' }, payload: '{"unknown":1}', id: 'x1', query: '' },
  ];
  const wrong: string[] = [];
  let checked = 0;
  for (const op of ops) {
    for (const v of variants) {
      const url = op.path.replace(/\{[^}]+\}/g, v.id) + v.query;
      const bodyless = op.method === 'GET' || op.method === 'DELETE';
      const headers = bodyless ? Object.fromEntries(Object.entries(v.headers).filter(([k]) => k !== 'content-type')) : v.headers;
      const res = await app.inject({ method: op.method as 'GET', url, headers, ...(bodyless || v.payload === undefined ? {} : { payload: v.payload }) });
      checked++;
      const body = res.json() as { code?: string };
      if (res.statusCode !== 401 || !['unauthorized', 'signature_required'].includes(body.code ?? '')) wrong.push(`${op.method} ${op.path} with ${v.what}: ${res.statusCode} ${res.body.slice(0, 120)}`);
    }
  }
  t.same(wrong, [], `401 first on every operation and variant (${checked} requests)`);
});

t.test('a member self call checks the member session before the Idempotency-Key, the body or anything else', async (t) => {
  const { platform, app, sandbox, owner } = await setupPlatform(t);
  const bff = await platform.tenancy.createKey(sandbox.id, 'member_auth', { label: 'bff' });
  const call = (method: string, url: string, body: unknown, token: string, headers: Record<string, string> = {}) =>
    app.inject({ method: method as 'POST', url, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });
  const origin = 'http://127.0.0.1:9';
  await call('POST', '/v1/tenant/member-auth/allowed-origins', { origin }, owner.token);
  await call('POST', '/v1/tenant/member-auth/redirect-urls', { url: `${origin}/callback` }, owner.token);
  const application = (await call('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'invite_only', origin, result_callback_url: `${origin}/callback`, bff_key_id: bff.key.id }, owner.token)).json() as { publishable_key: string };
  t.match(application.publishable_key, /^pk_test_/);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
  const ops = Object.entries(doc.paths).filter(([path]) => path.startsWith('/v1/account-holders/self'))
    .flatMap(([path, item]) => Object.keys(item).filter((m) => METHODS.has(m)).map((m) => ({ method: m.toUpperCase(), path })));
  t.ok(ops.length >= 8, `the member self calls (${ops.length})`);
  const wrong: string[] = [];
  for (const op of ops) {
    for (const [what, headers, body] of [
      ['no Idempotency-Key and an empty body', {}, {}],
      ['a malformed Idempotency-Key', { 'idempotency-key': 'a b' }, {}],
      ['an unknown field and bad text', { 'idempotency-key': 'k1' }, { unknown: '\u0000' }],
    ] as [string, Record<string, string>, unknown][]) {
      const bodyless = op.method === 'GET';
      const res = await call(op.method, op.path, bodyless ? undefined : body, bff.token, { 'x-svc-publishable-key': application.publishable_key, 'x-member-session-id': 'mss_forged', ...headers });
      if (res.statusCode !== 401 || (res.json() as { code: string }).code !== 'member_session_invalid') wrong.push(`${op.method} ${op.path} with ${what}: ${res.statusCode} ${res.body.slice(0, 120)}`);
    }
  }
  t.same(wrong, [], 'every member self call: 401 member_session_invalid first');
});
