// Account holder avatars (docs/platform/account-holders.md "Avatars") through the app with the embedded
// object store: upload URL, the direct PUT, confirmation by magic bytes, the 5-minute presigned GET and
// removal; another tenant's holder is 404, a key without the permission 403 before the body is read.
import t from 'tap';
import { setupPlatform, tinyPng } from '../setup-platform.ts';

const png = tinyPng();
const notImage = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'.padEnd(80, ' '));

t.test('avatar: upload URL, PUT, confirm by magic bytes, presigned GET, delete; refusals change nothing', async (t) => {
  let skew = 0;
  const s = await setupPlatform(t, { clock: () => Date.now() + skew });
  const brand = await s.platform.tenancy.createKey(s.sandbox.id, 'brand_manager');
  const other = await s.platform.tenancy.createTenant('Globex');
  const otherOwner = await s.platform.tenancy.createKey(other.sandbox.id, 'owner');
  const h = (await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' })).json();
  const h2 = (await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Acme Ltd' })).json();
  const base = `/v1/account-holders/${h.id}/avatar`;
  const put = (url: string, bytes: Buffer, ct = 'image/png') => s.app.inject({ method: 'PUT', url: url.replace(/^https?:\/\/[^/]+/, ''), headers: { 'content-type': ct }, payload: bytes });
  const upload = async (bytes: Buffer, holder = h.id) => {
    const r = await s.call('POST', `/v1/account-holders/${holder}/avatar/upload-url`, { content_type: 'image/png', content_length: bytes.length });
    t.equal(r.statusCode, 201, r.body);
    t.equal((await put(r.json().upload_url, bytes)).statusCode, 204);
    return r.json().object_key as string;
  };

  t.equal((await s.call('GET', base)).statusCode, 404, 'no avatar yet');
  t.equal((await s.call('POST', `${base}/upload-url`, { content_type: 'image/svg+xml', content_length: 10 })).statusCode, 400, 'an image type of the list');
  t.equal((await s.call('POST', `${base}/upload-url`, { content_type: 'image/png', content_length: 2 * 1024 * 1024 + 1 })).statusCode, 400, 'at most 2 MiB');
  const denied = await s.app.inject({ method: 'POST', url: `${base}/upload-url`, headers: { authorization: `Bearer ${brand.token}`, 'content-type': 'application/json' }, payload: '{nope' });
  t.equal(denied.json().code, 'role_denied', '403 before the body is read');
  t.equal((await s.call('POST', `${base}/upload-url`, { content_type: 'image/png', content_length: 10 }, otherOwner.token)).statusCode, 404, 'another tenant\'s holder');

  // Bytes that are not an image, whatever the declared type, are refused; nothing is set.
  const bad = await upload(notImage);
  const refused = await s.call('POST', `${base}/confirm`, { object_key: bad });
  t.equal(refused.statusCode, 422);
  t.match(refused.json().error, /not a PNG, JPEG, WebP or GIF/);
  t.equal((await s.call('GET', base)).statusCode, 404, 'still no avatar');

  const key = await upload(png);
  t.match(key, /^avatars\/[0-9a-f]{32}$/);
  t.equal((await s.call('POST', `/v1/account-holders/${h2.id}/avatar/confirm`, { object_key: key })).json().code, 'validation_failed', 'an upload granted for another holder');
  t.equal((await s.call('POST', `${base}/confirm`, { object_key: key }, otherOwner.token)).statusCode, 404, 'another tenant');
  t.equal((await s.call('POST', `${base}/confirm`, { object_key: 'avatars/nope' })).json().code, 'validation_failed');
  const ok = await s.call('POST', `${base}/confirm`, { object_key: key });
  t.equal(ok.statusCode, 200, ok.body);
  t.match(ok.json(), { account_holder_id: h.id, object_key: key, content_type: 'image/png', size: png.length });
  t.equal((await s.call('POST', `${base}/confirm`, { object_key: key })).statusCode, 422, 'a grant is used once');

  const got = await s.call('GET', base, undefined, s.viewer.token);
  t.equal(got.statusCode, 200);
  t.ok(Date.parse(got.json().expires_at) - Date.now() <= 5 * 60_000 + 1000, 'a short-lived URL');
  const served = await s.app.inject({ method: 'GET', url: got.json().url.replace(/^https?:\/\/[^/]+/, '') });
  t.equal(served.statusCode, 200);
  t.equal(served.headers['content-type'], 'image/png');
  t.equal(served.headers['x-content-type-options'], 'nosniff');
  t.same(served.rawPayload, png);
  const forged = got.json().url.replace(/sig=[^&]+/, 'sig=AAAA').replace(/^https?:\/\/[^/]+/, '');
  t.equal((await s.app.inject({ method: 'GET', url: forged })).statusCode, 403, 'a forged signature');
  t.equal((await s.app.inject({ method: 'GET', url: `/v1/objects/${key}` })).statusCode, 404, 'an avatar is never public like a logo');
  skew = 5 * 60_000 + 1000;
  t.equal((await s.app.inject({ method: 'GET', url: got.json().url.replace(/^https?:\/\/[^/]+/, '') })).statusCode, 403, 'expired after 5 minutes');
  skew = 0;
  t.equal((await s.call('GET', base, undefined, otherOwner.token)).statusCode, 404);

  t.equal((await s.call('DELETE', base, undefined, s.viewer.token)).statusCode, 403);
  t.equal((await s.call('DELETE', base, undefined, otherOwner.token)).statusCode, 404);
  t.equal((await s.call('DELETE', base)).statusCode, 204);
  t.equal((await s.call('GET', base)).statusCode, 404);
  t.equal((await s.call('DELETE', base)).statusCode, 404, 'nothing left to delete');
  const audit = (await s.platform.audit.list(s.sandbox.id)).filter((a) => a.resource_id === h.id).map((a) => a.action);
  t.same(audit.filter((a) => a.startsWith('account_holder.avatar')), ['account_holder.avatar.set', 'account_holder.avatar.delete']);

  await s.call('PATCH', `/v1/account-holders/${h2.id}`, { status: 'closed' }, s.owner.token, { 'if-match': '"1"' });
  t.equal((await s.call('POST', `/v1/account-holders/${h2.id}/avatar/upload-url`, { content_type: 'image/png', content_length: 10 })).json().code, 'account_holder_closed');
});
