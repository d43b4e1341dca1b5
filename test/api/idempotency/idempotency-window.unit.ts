// Idempotency records with a window (api/idempotency.ts, docs/operations.md "Idempotency"): a replay
// inside the window answers what the first call answered and says so (Idempotent-Replayed: true); past
// it the key is new again; a webhook endpoint creation's record keeps no secret, and its replay after a
// rotation is 409 rather than the old secret; pruning deletes expired records only. Injected clock, real
// store (LevelDB, or PostgreSQL with TEST_POSTGRES_URL).
import t from 'tap';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { totp } from '../../../api/tenancy/totp.ts';
import { IDEMPOTENCY, IDEMPOTENCY_WINDOW_MS, pruneIdempotency } from '../../../api/idempotency.ts';
import type { RecordRepository } from '../../../api/store/record-repository.ts';

const HOUR = 3600_000;

async function records(store: RecordRepository): Promise<{ id: string; value: unknown }[]> {
  const out: { id: string; value: unknown }[] = [];
  for await (const r of IDEMPOTENCY.in(store).entries()) out.push(r);
  return out;
}

t.test('a replay inside the window answers the first answer and says so; past the window the key is new', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const { call, platform } = await setupPlatform(t, { clock: () => now });
  t.equal(platform.idempotencyWindowMs, 24 * HOUR, 'the window is 24 hours unless configured');
  const body = { url: 'https://hooks.example.com/a', events: ['payment.confirmed'] };
  const key = { 'idempotency-key': 'create-window' };
  const first = await call('POST', '/v1/webhook-endpoints', body, undefined, key);
  t.equal(first.statusCode, 201);
  t.notOk(first.headers['idempotent-replayed'], 'a first answer is not marked');

  now += 23 * HOUR;
  const again = await call('POST', '/v1/webhook-endpoints', body, undefined, key);
  t.equal(again.statusCode, 201);
  t.equal(again.headers['idempotent-replayed'], 'true', 'the replay says it is one');
  t.equal(again.json().id, first.json().id, 'the same endpoint');
  t.equal(again.json().secret, first.json().secret, 'the secret the first call answered (not rotated since)');
  t.equal((await call('GET', '/v1/webhook-endpoints')).json().data.length, 1, 'nothing created by the replay');

  const other = await call('POST', '/v1/webhook-endpoints', { ...body, url: 'https://hooks.example.com/b' }, undefined, key);
  t.equal(other.statusCode, 409);
  t.equal(other.json().code, 'idempotency_key_reused', 'another body inside the window is still refused');

  now += HOUR; // 24 h after the first call: the record no longer answers
  const late = await call('POST', '/v1/webhook-endpoints', body, undefined, key);
  t.equal(late.statusCode, 201);
  t.notOk(late.headers['idempotent-replayed'], 'past the window the request runs afresh');
  t.not(late.json().id, first.json().id, 'and creates a new endpoint');
  t.equal((await call('GET', '/v1/webhook-endpoints')).json().data.length, 2);
});

t.test('the window is configurable; the test operation\'s stored result follows it too', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const { call } = await setupPlatform(t, { clock: () => now, idempotencyWindowMs: HOUR, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t);
  const ep = (await call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const key = { 'idempotency-key': 'branding-1' };
  const put = await call('PUT', '/v1/branding', { brand_name: 'Acme' }, undefined, key);
  t.equal(put.statusCode, 200);
  now += HOUR - 1;
  t.equal((await call('PUT', '/v1/branding', { brand_name: 'Other' }, undefined, key)).statusCode, 409, 'inside an hour: the key is taken');
  now += 1;
  const after = await call('PUT', '/v1/branding', { brand_name: 'Other' }, undefined, key);
  t.equal(after.statusCode, 200, 'after an hour: the key is free again');
  t.notOk(after.headers['idempotent-replayed']);
  t.match((await call('GET', '/v1/branding')).body, '"Other"', 'and the second request took effect');

  // The test operation: the same key replays without sending; past the window it sends again.
  const tk = { 'idempotency-key': 'test-1' };
  const r1 = await call('POST', `/v1/webhook-endpoints/${ep.id}/test`, undefined, undefined, tk);
  t.equal(r1.statusCode, 200);
  const r2 = await call('POST', `/v1/webhook-endpoints/${ep.id}/test`, undefined, undefined, tk);
  t.same(r2.json(), r1.json());
  t.equal(rx.got.length, 1, 'the replay sent nothing');
  t.equal(r2.headers['idempotent-replayed'], 'true');
  now += HOUR;
  const r3 = await call('POST', `/v1/webhook-endpoints/${ep.id}/test`, undefined, undefined, tk);
  t.notOk(r3.headers['idempotent-replayed'], 'past the window the test runs again');
  t.equal(rx.got.length, 2);
});

t.test('a creation replayed after a rotation is 409, never the old secret; the record keeps no secret', async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  const { call, owner, store } = await setupPlatform(t, { clock: () => now });
  const body = { url: 'https://hooks.example.com/a', events: ['payment.confirmed'] };
  const key = { 'idempotency-key': 'create-rotate' };
  const made = (await call('POST', '/v1/webhook-endpoints', body, undefined, key)).json();
  const stored = JSON.stringify(await records(store));
  t.notMatch(stored, made.secret, 'the stored answer does not hold the secret');
  t.notMatch(stored, made.secret.slice('whsec_'.length), 'nor its key bytes');

  const action = `rotate_secret:${made.id}`;
  const v = await call('POST', '/v1/mfa/verifications', { code: totp(Buffer.from(owner.totpSecret!, 'hex'), now / 1000), action });
  const rotated = await call('POST', `/v1/webhook-endpoints/${made.id}/rotate`, { overlap_sec: 3600 }, undefined, { 'svc-mfa-token': v.json().mfa_token });
  t.equal(rotated.statusCode, 200);
  const before = (await call('GET', `/v1/webhook-endpoints/${made.id}`)).json();

  const replay = await call('POST', '/v1/webhook-endpoints', body, undefined, key);
  t.equal(replay.statusCode, 409);
  t.equal(replay.json().code, 'idempotency_secret_rotated');
  t.notMatch(replay.body, made.secret, 'the old secret is not in the answer');
  t.notMatch(replay.body, rotated.json().secret, 'nor the new one');
  t.same((await call('GET', `/v1/webhook-endpoints/${made.id}`)).json(), before, 'the endpoint is unchanged');
  t.equal((await call('GET', '/v1/webhook-endpoints')).json().data.length, 1, 'and nothing new was created');
});

t.test('pruning deletes records past the window (and those kept without a time), keeps the rest', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const { call, store } = await setupPlatform(t, { clock: () => now });
  await call('POST', '/v1/webhook-endpoints', { url: 'https://hooks.example.com/a', events: ['payment.confirmed'] }, undefined, { 'idempotency-key': 'old' });
  now += 20 * HOUR;
  await call('POST', '/v1/webhook-endpoints', { url: 'https://hooks.example.com/b', events: ['payment.confirmed'] }, undefined, { 'idempotency-key': 'new' });
  await IDEMPOTENCY.in(store).put('legacy\x00create_endpoint\x00k', { id: 'whe_x', secret: 'whsec_AAAA' });
  t.equal((await records(store)).length, 3);

  now += 5 * HOUR; // 'old' is 25 h old, 'new' 5 h
  t.equal(await pruneIdempotency(store, now, IDEMPOTENCY_WINDOW_MS), 2, 'the expired record and the one without a time');
  const left = await records(store);
  t.equal(left.length, 1);
  t.ok(left[0]!.id.endsWith('\x00new'), 'the record inside the window stays');
  t.equal(await pruneIdempotency(store, now), 0, 'a second pass finds nothing');
});
