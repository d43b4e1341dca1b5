// Webhook endpoints through the API with a real store and real loopback receivers: bearer auth and
// roles, create/list/read/patch/rotate/test/delete, limits, MFA for rotation, signatures, audit entries.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';
import { totp } from '../../../api/tenancy/totp.ts';
import { verifyWebhookEd25519, verifyWebhookHmac } from '../../../api/sdk/webhook-receiver.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import type { Received } from '../setup-platform.ts';

const sig = (r: Received) => String(r.headers['svc-webhook-signature']);
const sigEd = (r: Received) => String(r.headers['svc-webhook-signature-ed25519']);

t.test('bearer keys: missing, malformed, unknown and wrong-secret tokens are 401 in the one error shape', async (t) => {
  const { call, owner } = await setupPlatform(t);
  const bad = [undefined, 'svc_test_nope', owner.token.slice(0, -1) + (owner.token.endsWith('A') ? 'B' : 'A'), owner.token.replace('svc_test_', 'svc_live_')];
  for (const tok of bad) {
    const r = await call('GET', '/v1/webhook-endpoints', undefined, tok ?? '');
    t.equal(r.statusCode, 401);
    t.same(r.json(), { error: r.json().error, code: 'unauthorized', request_id: r.headers['x-request-id'] });
  }
  t.equal((await call('GET', '/v1/webhook-endpoints')).statusCode, 200);
});

t.test('roles: a viewer reads but every change is 403 role_denied and changes nothing', async (t) => {
  const { call, viewer, platform, sandbox } = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t);
  const created = await call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] });
  t.equal(created.statusCode, 201);
  const id = created.json().id as string;
  const attempts: [string, string, unknown][] = [
    ['POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] }],
    ['PATCH', `/v1/webhook-endpoints/${id}`, { enabled: false }],
    ['POST', `/v1/webhook-endpoints/${id}/rotate`, {}],
    ['POST', `/v1/webhook-endpoints/${id}/test`, undefined],
    ['DELETE', `/v1/webhook-endpoints/${id}`, undefined],
  ];
  const auditBefore = (await platform.audit.list(sandbox.id)).length;
  for (const [m, u, b] of attempts) {
    const r = await call(m as 'POST', u, b, viewer.token);
    t.equal(r.statusCode, 403, `${m} ${u}`);
    t.equal(r.json().code, 'role_denied');
  }
  t.equal(rx.got.length, 0, 'no test delivery was sent');
  t.equal((await platform.audit.list(sandbox.id)).length, auditBefore, 'nothing was written');
  const read = await call('GET', `/v1/webhook-endpoints/${id}`, undefined, viewer.token);
  t.equal(read.statusCode, 200);
  t.equal(read.json().enabled, true);
  t.equal((await call('GET', '/v1/webhook-event-types', undefined, viewer.token)).json().data.length, 47);
});

t.test('create, list, read, patch, delete: the secret appears once; limits and unknown events refused', async (t) => {
  const { call, platform, sandbox, owner } = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t);
  const c = await call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed', 'webhook.test'], description: 'main' });
  t.equal(c.statusCode, 201);
  const ep = c.json();
  t.match(ep.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  t.match(ep.hmac_secret_fingerprint, /^sha256:[0-9a-f]{32}$/);
  const list = await call('GET', '/v1/webhook-endpoints');
  t.same(Object.keys(list.json()).sort(), ['data', 'has_more', 'next_cursor']);
  t.equal(list.json().data.length, 1);
  t.notOk(JSON.stringify(list.json()).includes(ep.secret), 'list never shows the secret');
  const read = await call('GET', `/v1/webhook-endpoints/${ep.id}`);
  t.notOk(JSON.stringify(read.json()).includes(ep.secret), 'read never shows the secret');
  t.equal(read.json().hmac_secret_fingerprint, ep.hmac_secret_fingerprint);
  t.equal(read.json().previous_hmac_secret_fingerprint, null);

  const noop = await call('PATCH', `/v1/webhook-endpoints/${ep.id}`, {});
  t.equal(noop.statusCode, 200);
  t.equal(noop.json().updated_at, ep.updated_at, 'empty patch is a no-op');
  const p = await call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { enabled: false, description: null });
  t.equal(p.json().enabled, false);
  t.equal(p.json().description, null);
  t.equal(p.json().hmac_secret_fingerprint, ep.hmac_secret_fingerprint, 'patch never changes the secret');
  t.equal((await call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { secret: 'whsec_x' })).statusCode, 400, 'secret is not patchable');

  const refusals: [unknown, number, string][] = [
    [{ url: rx.url, events: ['payment.nope'] }, 422, 'unknown_event'],
    [{ url: rx.url, events: [] }, 422, 'validation_failed'],
    [{ url: rx.url, events: Array.from({ length: 51 }, () => 'payment.confirmed') }, 400, 'invalid_request'],
    [{ url: rx.url, events: ['payment.confirmed', 'payment.confirmed'] }, 422, 'validation_failed'],
    [{ url: 'https://example.com/' + 'a'.repeat(2048), events: ['payment.confirmed'] }, 422, 'validation_failed'],
    [{ url: 'not a url', events: ['payment.confirmed'] }, 422, 'validation_failed'],
    [{ url: 'ftp://example.com/x', events: ['payment.confirmed'] }, 422, 'validation_failed'],
  ];
  for (const [body, status, code] of refusals) {
    const r = await call('POST', '/v1/webhook-endpoints', body);
    t.equal(r.statusCode, status, JSON.stringify(body).slice(0, 60));
    t.equal(r.json().code, code);
  }
  t.equal((await call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { events: ['nope.event'] })).json().code, 'unknown_event');
  t.equal((await call('GET', '/v1/webhook-endpoints')).json().data.length, 1, 'refused creations stored nothing');

  const other = await platform.tenancy.createKey((await platform.tenancy.createTenant('Other')).sandbox.id, 'owner');
  t.equal((await call('GET', `/v1/webhook-endpoints/${ep.id}`, undefined, other.token)).statusCode, 404, 'another tenant cannot see it');
  t.equal((await call('DELETE', `/v1/webhook-endpoints/${ep.id}`, undefined, other.token)).statusCode, 404);

  const d = await call('DELETE', `/v1/webhook-endpoints/${ep.id}`);
  t.equal(d.statusCode, 204);
  t.equal((await call('GET', `/v1/webhook-endpoints/${ep.id}`)).statusCode, 404);
  const audit = await platform.audit.list(sandbox.id);
  t.same(audit.map((a) => a.action), ['webhook_endpoint.create', 'webhook_endpoint.update', 'webhook_endpoint.delete']);
  t.same(audit[1]!.actor, { type: 'api_key', id: owner.key.id });
  t.equal((audit[1]!.before as { enabled: boolean }).enabled, true);
  t.equal((audit[1]!.after as { enabled: boolean }).enabled, false);
  t.notOk(JSON.stringify(audit).includes(ep.secret), 'the audit log holds no secret');
});

t.test('Idempotency-Key on create returns the same endpoint and secret', async (t) => {
  const { call } = await setupPlatform(t);
  const body = { url: 'https://example.com/hook', events: ['payment.confirmed'] };
  const a = await call('POST', '/v1/webhook-endpoints', body, undefined, { 'idempotency-key': 'create-1' });
  const b = await call('POST', '/v1/webhook-endpoints', body, undefined, { 'idempotency-key': 'create-1' });
  t.equal(a.json().id, b.json().id);
  t.equal(a.json().secret, b.json().secret);
  t.equal((await call('GET', '/v1/webhook-endpoints')).json().data.length, 1);
});

t.test('test operation: signed webhook.test to a real receiver; Idempotency-Key replays the result', async (t) => {
  const { call, app } = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t, (n) => (n === 1 ? 200 : 500));
  const ep = (await call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const r1 = await call('POST', `/v1/webhook-endpoints/${ep.id}/test`, undefined, undefined, { 'idempotency-key': 'k1' });
  t.equal(r1.statusCode, 200);
  t.match(r1.json(), { delivered: true, status_code: 200, error: null });
  t.equal(rx.got.length, 1);
  const got = rx.got[0]!;
  t.equal(got.headers['svc-webhook-event'], 'webhook.test');
  t.ok(got.headers['svc-webhook-delivery-id']);
  t.ok(got.headers['x-correlation-id']);
  const env = JSON.parse(got.body);
  t.equal(env.type, 'webhook.test');
  t.equal(env.id, got.headers['svc-webhook-event-id']);
  t.ok(verifyWebhookHmac(sig(got), got.body, [ep.secret]), 'HMAC verifies with the endpoint secret');
  t.notOk(verifyWebhookHmac(sig(got), got.body + ' ', [ep.secret]), 'a changed body fails');
  const pk = (await app.inject({ method: 'GET', url: '/v1/public/webhook-signing-key' })).json().public_key;
  t.ok(verifyWebhookEd25519(sigEd(got), got.body, pk), 'Ed25519 verifies against the published key');
  const r2 = await call('POST', `/v1/webhook-endpoints/${ep.id}/test`, undefined, undefined, { 'idempotency-key': 'k1' });
  t.same(r2.json(), r1.json(), 'same key replays the earlier result');
  t.equal(rx.got.length, 1, 'without sending again');
  const r3 = await call('POST', `/v1/webhook-endpoints/${ep.id}/test`);
  t.match(r3.json(), { delivered: false, status_code: 500 });
  t.equal(rx.got.length, 2);
});

t.test('rotation needs a recent MFA verification; both secrets sign during the overlap', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const { call, owner } = await setupPlatform(t, { clock: () => now, webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t);
  const ep = (await call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  const noMfa = await call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 3600 });
  t.equal(noMfa.statusCode, 403);
  t.equal(noMfa.json().code, 'mfa_required');
  const secret = Buffer.from(owner.totpSecret!, 'hex');
  const action = `rotate_secret:${ep.id}`;
  t.equal((await call('POST', '/v1/mfa/verifications', { code: '000000' === totp(secret, now / 1000) ? '111111' : '000000', action })).json().code, 'mfa_failed');
  const v = await call('POST', '/v1/mfa/verifications', { code: totp(secret, now / 1000), action });
  t.equal(v.statusCode, 201);
  const mfa = { 'svc-mfa-token': v.json().mfa_token };
  t.equal((await call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 59 }, undefined, mfa)).statusCode, 400, 'overlap below 60 refused');
  t.equal((await call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 2_592_001 }, undefined, mfa)).statusCode, 400, 'overlap above 30 days refused');
  const rot = await call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 3600 }, undefined, mfa);
  t.equal(rot.statusCode, 200);
  t.not(rot.json().secret, ep.secret);
  t.equal(rot.json().previous_hmac_secret_fingerprint, ep.hmac_secret_fingerprint);
  await call('POST', `/v1/webhook-endpoints/${ep.id}/test`);
  const during = rx.got[0]!;
  t.ok(verifyWebhookHmac(sig(during), during.body, [ep.secret]), 'old secret verifies during the overlap');
  t.ok(verifyWebhookHmac(sig(during), during.body, [rot.json().secret]), 'new secret verifies during the overlap');
  now += 3601_000;
  await call('POST', `/v1/webhook-endpoints/${ep.id}/test`);
  const after = rx.got[1]!;
  t.notOk(verifyWebhookHmac(sig(after), after.body, [ep.secret]), 'old secret stops after the overlap');
  t.ok(verifyWebhookHmac(sig(after), after.body, [rot.json().secret]));
  t.equal((await call('GET', `/v1/webhook-endpoints/${ep.id}`)).json().previous_hmac_secret_fingerprint, null);
  t.equal((await call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, {}, undefined, mfa)).json().code, 'mfa_required', 'the MFA token was used up');
  const fresh = { 'svc-mfa-token': (await call('POST', '/v1/mfa/verifications', { code: totp(secret, now / 1000), action })).json().mfa_token };
  now += 301_000;
  t.equal((await call('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, {}, undefined, fresh)).json().code, 'mfa_required', 'the MFA token expires after five minutes');
});

t.test('production keys: mutations need an RFC 9421 signature; reads do not; replays refused', async (t) => {
  const { call, platform, production } = await setupPlatform(t);
  const sk = ed25519.utils.randomSecretKey();
  const live = await platform.tenancy.createKey(production.id, 'developer', { signingPublicKey: bytesToHex(ed25519.getPublicKey(sk)) });
  t.match(live.token, /^svc_live_/);
  const body = JSON.stringify({ url: 'https://example.com/hook', events: ['payment.confirmed'] });
  const unsigned = await call('POST', '/v1/webhook-endpoints', JSON.parse(body), live.token);
  t.equal(unsigned.statusCode, 401);
  t.equal(unsigned.json().code, 'signature_required');
  const sig = signedHeaders({ keyId: live.key.id, secretKey: sk }, 'POST', 'http://localhost:80/v1/webhook-endpoints', body);
  const url = '/v1/webhook-endpoints';
  const send = () => platform && call('POST', url, JSON.parse(body), live.token, { host: 'localhost:80', ...sig });
  const ok = await send();
  t.equal(ok.statusCode, 201);
  const again = await send();
  t.equal(again.statusCode, 401, 'the same nonce is refused');
  t.equal((await call('GET', url, undefined, live.token)).statusCode, 200, 'reads need no signature');
  const wrongKey = ed25519.utils.randomSecretKey();
  const forged = signedHeaders({ keyId: live.key.id, secretKey: wrongKey }, 'POST', 'http://localhost:80/v1/webhook-endpoints', body);
  t.equal((await call('POST', url, JSON.parse(body), live.token, { host: 'localhost:80', ...forged })).statusCode, 401);
  await t.rejects(platform.tenancy.createKey(production.id, 'owner'), /signing public key/);
});
