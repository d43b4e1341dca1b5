// The funding area's 7 operations through the API (docs/platform/funding.md): happy paths, bad input
// (400 invalid_request, 422 validation_failed, in the one error shape), another tenant's ids (404),
// permissions (403 role_denied), the required Idempotency-Key and its replay, pagination with its
// filters, the sandbox rail refused to a production workspace, and the audit entries of creations.
import t from 'tap';
import { fundingApp, BURN } from './funding-app.ts';
import { UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';

t.test('funding requests: create, replay, read, list with filters; refusals in the one error shape', async (t) => {
  const s = await fundingApp(t);
  const h = await s.holder();
  const body = { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: '2500', currency: 'USD' };
  const post = (b: unknown, key: string | null = 'fund-1', token = s.acme.owner) => s.bearer('POST', '/v1/funding-requests', b, token, key ? { 'idempotency-key': key.replace(/[^\x21-\x7e]/g, '-') } : {});

  const made = await post(body);
  t.equal(made.statusCode, 201, made.body);
  const r = made.json();
  t.match(r, { account_holder_id: h.id, wallet_id: h.wallet.id, chain: 'evm-local', address: h.wallet.address, status: 'fiat_settling', fiat_amount: '2500', currency: 'USD', stablecoin_amount: (2500n * UNITS_PER_CENT).toString(), rail: 'sandbox', failure_reason: null, mint_tx_hash: null });
  t.match(r.id, /^fnd_[0-9a-f]{26}$/);
  t.notOk('tenant' in r || 'workspace' in r || 'mint' in r, 'no internal fields');

  const replay = await post(body);
  t.equal(replay.statusCode, 201);
  t.equal(replay.json().id, r.id, 'the same key and body answer the same request');
  t.equal((await post({ ...body, fiat_amount: '2501' })).json().code, 'idempotency_key_reused');
  // A crash between the request's batch and the idempotency record: the retry still finds the request.
  for await (const e of s.store.entries<unknown>('idempotency')) if (e.id.includes('create_funding_request')) await s.store.batch([{ type: 'del', collection: 'idempotency', id: e.id }]);
  t.equal((await post(body)).json().id, r.id, 'no second request, no second pull, after a lost idempotency record');
  t.equal((await post({ ...body, fiat_amount: '2501' })).json().code, 'idempotency_key_reused', 'and another body under the key is still refused');
  const noKey = await post(body, null);
  t.same([noKey.statusCode, noKey.json().code], [400, 'invalid_request'], 'Idempotency-Key is required');
  t.match(noKey.json().error, /Idempotency-Key/);

  const bad: [string, unknown, number, string][] = [
    ['a decimal amount', { ...body, fiat_amount: '25.00' }, 400, 'invalid_request'],
    ['a number, not a string', { ...body, fiat_amount: 2500 }, 400, 'invalid_request'],
    ['zero', { ...body, fiat_amount: '0' }, 400, 'invalid_request'],
    ['a leading zero', { ...body, fiat_amount: '0250' }, 400, 'invalid_request'],
    ['an unknown field', { ...body, sandbox: true }, 400, 'invalid_request'],
    ['a lower-case currency', { ...body, currency: 'usd' }, 400, 'invalid_request'],
    ['a currency the rail does not move', { ...body, currency: 'EUR' }, 422, 'validation_failed'],
    ['no such holder', { ...body, account_holder_id: 'ah_00000000000000000000000000' }, 422, 'validation_failed'],
    ['another holder\'s wallet', { ...body, wallet_id: (await s.holder()).wallet.id }, 422, 'validation_failed'],
  ];
  for (const [why, b, status, code] of bad) {
    const res = await post(b, `bad-${why}`);
    t.equal(res.statusCode, status, `${why}: ${res.body}`);
    t.same(Object.keys(res.json()).sort(), res.json().fields ? ['code', 'error', 'fields', 'request_id'] : ['code', 'error', 'request_id'], `${why}: {error, code, request_id} or {error, code, fields, request_id}`);
    t.equal(res.json().code, code, why);
  }
  // Another tenant's holder named in the body is not this workspace's.
  const theirs = await s.holder(s.globex);
  t.equal((await post({ ...body, account_holder_id: theirs.id, wallet_id: theirs.wallet.id }, 'theirs')).json().code, 'validation_failed');

  const got = await s.bearer('GET', `/v1/funding-requests/${r.id}`);
  t.equal(got.statusCode, 200);
  t.same(got.json(), r);
  const foreign = await s.bearer('GET', `/v1/funding-requests/${r.id}`, undefined, s.globex.owner);
  t.same([foreign.statusCode, foreign.json().code], [404, 'not_found'], 'another tenant\'s id is 404');
  t.equal((await s.bearer('GET', '/v1/funding-requests/fnd_nope')).statusCode, 404);
  t.same((await s.bearer('GET', '/v1/funding-requests', undefined, s.globex.owner)).json().data, [], 'another tenant lists none of them');

  // More requests, then walk them two at a time with and without filters.
  const h2 = await s.holder();
  for (let i = 0; i < 3; i++) t.equal((await post({ account_holder_id: h2.id, wallet_id: h2.wallet.id, fiat_amount: String(100 + i), currency: 'USD' }, `h2-${i}`)).statusCode, 201);
  t.equal((await post({ ...body, fiat_amount: '100004' }, 'refused')).json().status, 'failed');
  const walk = async (query: string) => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await s.bearer('GET', `/v1/funding-requests?limit=2${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      t.equal(page.statusCode, 200, page.body);
      ids.push(...page.json().data.map((x: { id: string }) => x.id));
      cursor = page.json().next_cursor;
      t.equal(page.json().has_more, cursor !== null);
    } while (cursor);
    return ids;
  };
  t.equal((await walk('')).length, 5);
  t.equal((await walk(`&account_holder_id=${h2.id}`)).length, 3);
  t.equal((await walk('&status=failed')).length, 1);
  t.same(await walk(`&account_holder_id=${h.id}&status=fiat_settling`), [r.id]);
  const first = (await s.bearer('GET', '/v1/funding-requests?limit=1')).json();
  t.equal((await s.bearer('GET', `/v1/funding-requests?limit=1&status=failed&cursor=${encodeURIComponent(first.next_cursor)}`)).json().code, 'cursor_filter_mismatch');
  t.equal((await s.bearer('GET', '/v1/funding-requests?status=done')).json().code, 'invalid_request');

  const audit = (await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action === 'funding_request.create');
  t.equal(audit.length, 5, 'each creation audited once (replays are not creations)');
});

t.test('funding requests: a holder that is not active, and a workspace without the rail', async (t) => {
  const s = await fundingApp(t);
  const h = await s.holder();
  const suspend = await s.bearer('PATCH', `/v1/account-holders/${h.id}`, { status: 'suspended' }, s.acme.owner, { 'if-match': '"4"' });
  t.equal(suspend.statusCode, 200, suspend.body);
  const r = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: '100', currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'x' });
  t.same([r.statusCode, r.json().code], [409, 'account_holder_not_active']);
  await t.rejects(s.service.createFunding({ tenant: s.acme.tenant.id, workspace: s.acme.production.id, environment: 'production' }, { type: 'api_key', id: 'k' }, { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: '100', currency: 'USD' }, 'k'), { code: 'sandbox_only' }, 'the sandbox rail never serves production');
  const live = await s.acme.key('owner', s.acme.production.id);
  const burn = await s.bearer('GET', '/v1/off-ramp-requests/burn-address', undefined, live);
  t.same([burn.statusCode, burn.json().code], [403, 'sandbox_only'], 'a production key is refused the sandbox rail');
  // A production POST: unsigned, 401; signed (RFC 9421, the key's signing key), 403 sandbox_only, nothing stored.
  const sk = ed25519.utils.randomSecretKey();
  const signer = await s.platform.tenancy.createKey(s.acme.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(sk)) });
  const url = '/v1/funding-requests';
  const raw = JSON.stringify({ account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: '100', currency: 'USD' });
  const unsigned = await s.app.inject({ method: 'POST', url, headers: { host: 'localhost:80', authorization: `Bearer ${signer.token}`, 'content-type': 'application/json', 'idempotency-key': 'live' }, payload: raw });
  t.same([unsigned.statusCode, unsigned.json().code], [401, 'signature_required']);
  const signed = await s.app.inject({ method: 'POST', url, headers: { host: 'localhost:80', authorization: `Bearer ${signer.token}`, 'content-type': 'application/json', 'idempotency-key': 'live', ...signedHeaders({ keyId: signer.key.id, secretKey: sk }, 'POST', `http://localhost:80${url}`, raw, Math.floor(s.clock.now() / 1000)) }, payload: raw });
  t.same([signed.statusCode, signed.json().code], [403, 'sandbox_only'], 'signed production POST: the sandbox rail refuses it');
  t.equal(await s.store.count('funding_requests'), 0, 'nothing stored');
});

t.test('permissions: funding.read for reads, funding.manage for changes; checked before the body', async (t) => {
  const s = await fundingApp(t);
  const viewer = await s.acme.key('viewer');
  const brand = await s.acme.key('brand_manager');
  const developer = await s.acme.key('developer');
  const h = await s.holder();
  const body = { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: '100', currency: 'USD' };
  for (const path of ['/v1/funding-requests', '/v1/off-ramp-requests']) {
    const denied = await s.bearer('POST', path, { nonsense: true }, viewer, { 'idempotency-key': 'p' });
    t.same([denied.statusCode, denied.json().code], [403, 'role_denied'], `viewer cannot POST ${path}`);
    t.equal((await s.bearer('GET', path, undefined, viewer)).statusCode, 200, `viewer reads ${path}`);
    t.same((await s.bearer('GET', path, undefined, brand)).json().code, 'role_denied', `brand_manager cannot read ${path}`);
  }
  t.equal((await s.bearer('GET', '/v1/off-ramp-requests/burn-address', undefined, brand)).statusCode, 403);
  t.equal((await s.bearer('GET', '/v1/funding-requests/fnd_00000000000000000000000000', undefined, brand)).statusCode, 403);
  t.equal((await s.bearer('POST', '/v1/funding-requests', body, developer, { 'idempotency-key': 'dev' })).statusCode, 201, 'developer manages funding');
  t.equal((await s.bearer('GET', '/v1/funding-requests', undefined, 'svc_test_nope')).statusCode, 401);
});

t.test('off-ramp requests: burn address, create, replay, read, list; refusals', async (t) => {
  const s = await fundingApp(t);
  const h = await s.holder();
  const burn = await s.bearer('GET', '/v1/off-ramp-requests/burn-address');
  t.equal(burn.statusCode, 200);
  t.same(burn.json(), { data: [{ chain: 'evm-local', asset: s.issuer.asset, address: BURN }] });
  t.same((await s.bearer('GET', '/v1/off-ramp-requests/burn-address?chain=ethereum')).json(), { data: [] }, 'a chain without a stablecoin here');
  t.equal((await s.bearer('GET', '/v1/off-ramp-requests/burn-address?chain=EVM')).statusCode, 400);

  const units = (1999n * UNITS_PER_CENT).toString();
  const body = { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: units, currency: 'USD' };
  const post = (b: unknown, key: string | null = 'ofr-1') => s.bearer('POST', '/v1/off-ramp-requests', b, s.acme.owner, key ? { 'idempotency-key': key.replace(/[^\x21-\x7e]/g, '-') } : {});
  const made = await post(body);
  t.equal(made.statusCode, 201, made.body);
  const r = made.json();
  t.match(r, { status: 'awaiting_transfer', stablecoin_amount: units, fiat_amount: '1999', currency: 'USD', burn_address: BURN, address: h.wallet.address.toLowerCase(), transaction_id: null, expires_at: '2030-01-01T01:00:00.000Z' });
  t.match(r.id, /^ofr_[0-9a-f]{26}$/);
  t.equal((await post(body)).json().id, r.id, 'replayed');
  t.equal((await post({ ...body, currency: 'USD', stablecoin_amount: `${units}0` })).json().code, 'idempotency_key_reused');
  const noKey = await post(body, null);
  t.same([noKey.statusCode, noKey.json().code], [400, 'invalid_request'], 'Idempotency-Key is required');
  for (const [why, b, status, code] of [
    ['not a whole number of cents', { ...body, stablecoin_amount: (1999n * UNITS_PER_CENT + 1n).toString() }, 422, 'validation_failed'],
    ['less than a cent', { ...body, stablecoin_amount: '5' }, 422, 'validation_failed'],
    ['a decimal', { ...body, stablecoin_amount: '19.99' }, 400, 'invalid_request'],
    ['no wallet', { account_holder_id: h.id, stablecoin_amount: units, currency: 'USD' }, 400, 'invalid_request'],
    ['a wallet not the holder\'s', { ...body, wallet_id: 'wal_nope' }, 422, 'validation_failed'],
  ] as const) {
    const res = await post(b, `bad-${why}`);
    t.equal(res.statusCode, status, `${why}: ${res.body}`);
    t.equal(res.json().code, code, why);
  }
  t.same((await s.bearer('GET', `/v1/off-ramp-requests/${r.id}`)).json(), r);
  t.equal((await s.bearer('GET', `/v1/off-ramp-requests/${r.id}`, undefined, s.globex.owner)).statusCode, 404, 'another tenant\'s id is 404');
  const list = await s.bearer('GET', `/v1/off-ramp-requests?account_holder_id=${h.id}&status=awaiting_transfer`);
  t.same(list.json().data.map((x: { id: string }) => x.id), [r.id]);
  t.same((await s.bearer('GET', '/v1/off-ramp-requests?status=expired')).json().data, []);
  t.equal((await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action === 'off_ramp_request.create').length, 1);
});
