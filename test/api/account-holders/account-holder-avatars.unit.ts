// Account holder avatars (docs/platform/account-holders.md "Avatars") through the app with the embedded
// object store: upload URL, the direct PUT, confirmation by magic bytes and a full decode (the image
// stored written again, without metadata), the 5-minute presigned GET and removal; another tenant's
// holder is 404, a key without the permission 403 before the body is read.
import t from 'tap';
import { PNG } from 'pngjs';
import { setupPlatform, tinyPng } from '../setup-platform.ts';
import {
  GIF_1X1, SECRET, animatedGif, decoded, garbageJpeg, gifFrames, gifFrameOffScreen, gifOfFrames, jpegWithExif, jpegWithSecondFrame, lossyWebp, pngDeclaring, pngWithText, webpChunks,
  webpWithMetadata,
} from '../image-fixtures.ts';
import { decodeWebp } from '../../../api/adapters/webp-reencode.ts';

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
  t.match(refused.json().error, /not a PNG, JPEG, GIF or WebP image/);
  t.equal((await s.call('GET', base)).statusCode, 404, 'still no avatar');

  const key = await upload(png);
  t.match(key, /^avatars\/[0-9a-f]{32}$/);
  t.equal((await s.call('POST', `/v1/account-holders/${h2.id}/avatar/confirm`, { object_key: key })).json().code, 'validation_failed', 'an upload granted for another holder');
  t.equal((await s.call('POST', `${base}/confirm`, { object_key: key }, otherOwner.token)).statusCode, 404, 'another tenant');
  t.equal((await s.call('POST', `${base}/confirm`, { object_key: 'avatars/nope' })).json().code, 'validation_failed');
  const ok = await s.call('POST', `${base}/confirm`, { object_key: key });
  t.equal(ok.statusCode, 200, ok.body);
  const stored = (await s.platform.objects.read(key))!;
  t.match(ok.json(), { account_holder_id: h.id, object_key: key, content_type: 'image/png', size: stored.length });
  t.equal((await s.call('POST', `${base}/confirm`, { object_key: key })).statusCode, 422, 'a grant is used once');

  const got = await s.call('GET', base, undefined, s.viewer.token);
  t.equal(got.statusCode, 200);
  t.ok(Date.parse(got.json().expires_at) - Date.now() <= 5 * 60_000 + 1000, 'a short-lived URL');
  const served = await s.app.inject({ method: 'GET', url: got.json().url.replace(/^https?:\/\/[^/]+/, '') });
  t.equal(served.statusCode, 200);
  t.equal(served.headers['content-type'], 'image/png');
  t.equal(served.headers['x-content-type-options'], 'nosniff');
  t.same(served.rawPayload, stored, 'the stored image, its size as recorded');
  t.same(PNG.sync.read(served.rawPayload).data, PNG.sync.read(png).data, 'the uploaded pixels');
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

t.test('avatar: the image is decoded and stored written again without metadata; what does not decode, or is too large, changes nothing', async (t) => {
  const s = await setupPlatform(t);
  const h = (await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Grace', family_name: 'Hopper' })).json();
  const base = `/v1/account-holders/${h.id}/avatar`;
  const upload = async (bytes: Buffer, ct: string) => {
    const r = await s.call('POST', `${base}/upload-url`, { content_type: ct, content_length: bytes.length });
    t.equal(r.statusCode, 201);
    const u = new URL(r.json().upload_url);
    t.equal((await s.app.inject({ method: 'PUT', url: u.pathname + u.search, headers: { 'content-type': ct }, payload: bytes })).statusCode, 204);
    return r.json().object_key as string;
  };
  const serve = async () => {
    const url = (await s.call('GET', base)).json().url as string;
    return s.app.inject({ method: 'GET', url: url.replace(/^https?:\/\/[^/]+/, '') });
  };
  const has = (b: Buffer, x: string) => b.includes(Buffer.from(x, 'latin1'));
  t.equal((await s.call('POST', `${base}/upload-url`, { content_type: 'image/svg+xml', content_length: 10 })).statusCode, 400, 'not an SVG');

  // A PNG with tEXt and iTXt chunks.
  const png = pngWithText(7, 5);
  const pngKey = await upload(png, 'image/png');
  const a = await s.call('POST', `${base}/confirm`, { object_key: pngKey });
  t.equal(a.statusCode, 200, 'a PNG with text chunks: confirmed');
  const p = await serve();
  t.equal(p.headers['content-type'], 'image/png');
  t.equal(a.json().size, p.rawPayload.length, 'the recorded size is the served size');
  t.not(p.rawPayload.length, png.length, 'not the uploaded bytes');
  t.notOk(has(p.rawPayload, SECRET) || has(p.rawPayload, 'tEXt') || has(p.rawPayload, 'iTXt'), 'no text chunk is served');
  t.same(decoded(p.rawPayload).data, decoded(png).data, 'the same pixels');
  t.same([decoded(p.rawPayload).width, decoded(p.rawPayload).height], [7, 5]);

  // A JPEG with EXIF, XMP and a comment, uploaded as declared.
  const jpeg = jpegWithExif(20, 12);
  const jpegKey = await upload(jpeg, 'image/jpeg');
  const b = await s.call('POST', `${base}/confirm`, { object_key: jpegKey });
  t.equal(b.statusCode, 200, 'a JPEG with EXIF: confirmed');
  t.match(b.json(), { object_key: jpegKey, content_type: 'image/jpeg' });
  const j = await serve();
  t.equal(j.headers['content-type'], 'image/jpeg');
  t.equal(b.json().size, j.rawPayload.length);
  t.notOk(has(j.rawPayload, SECRET) || has(j.rawPayload, 'Exif'), 'no EXIF, XMP or comment is served');
  t.same([decoded(j.rawPayload).width, decoded(j.rawPayload).height], [20, 12]);

  // An animated GIF with a comment and bytes after its trailer, and a lossy WebP with EXIF, XMP and ICC.
  const gif = Buffer.concat([animatedGif(), Buffer.from(SECRET, 'latin1')]);
  const c = await s.call('POST', `${base}/confirm`, { object_key: await upload(gif, 'image/gif') });
  t.equal(c.statusCode, 200, 'an animated GIF: confirmed');
  const gs = await serve();
  t.equal(gs.headers['content-type'], 'image/gif');
  t.equal(c.json().size, gs.rawPayload.length);
  t.notOk(has(gs.rawPayload, SECRET), 'nothing after the trailer is served');
  t.same(gifFrames(gs.rawPayload).frames.map((f) => f.rgba), gifFrames(gif).frames.map((f) => f.rgba), 'every frame, the same pixels');
  const webp = webpWithMetadata(await lossyWebp(20, 12), 20, 12);
  const d = await s.call('POST', `${base}/confirm`, { object_key: await upload(webp, 'image/webp') });
  t.equal(d.statusCode, 200, 'a WebP with metadata: confirmed');
  const ws = await serve();
  t.equal(ws.headers['content-type'], 'image/webp');
  t.equal(d.json().size, ws.rawPayload.length);
  t.notOk(has(ws.rawPayload, SECRET), 'no EXIF, XMP or ICC is served');
  t.same(webpChunks(ws.rawPayload).map((x) => x.fourcc), ['VP8 '], 'a plain lossy WebP');
  t.same([(await decodeWebp(ws.rawPayload))!.width, (await decodeWebp(ws.rawPayload))!.height], [20, 12]);

  // Refused, 422 validation_failed naming object_key: the upload stays unconfirmed and untouched.
  const refusals: [string, Buffer, string, RegExp][] = [
    ['a truncated PNG', png.subarray(0, png.length - 20), 'image/png', /not a complete, valid PNG/],
    ['a JPEG whose scan is garbage', garbageJpeg(16, 16), 'image/jpeg', /not a complete, valid JPEG/],
    ['a PNG header claiming 100000x100000', pngDeclaring(100_000, 100_000), 'image/png', /is 100000x100000; at most 4096x4096 pixels/],
    ['a JPEG whose second frame claims 60000x60000', jpegWithSecondFrame(60_000), 'image/jpeg', /declares more pixels than accepted/],
    ['a GIF cut inside its pixel data', GIF_1X1.subarray(0, GIF_1X1.length - 4), 'image/gif', /not a complete, valid GIF/],
    ['a GIF with a frame past its screen', gifFrameOffScreen(), 'image/gif', /not a complete, valid GIF/],
    ['a GIF of 501 frames', gifOfFrames(501), 'image/gif', /has 501 frames; at most 500 are accepted/],
    ['a truncated WebP', webp.subarray(0, webp.length - 60), 'image/webp', /not a complete, valid WebP/],
  ];
  const audits = async () => (await s.platform.audit.list(s.sandbox.id)).filter((x) => x.resource_id === h.id).length;
  for (const [what, bytes, ct, why] of refusals) {
    const before = (await s.call('GET', base)).json();
    const n = await audits();
    const key = await upload(bytes, ct);
    const r = await s.call('POST', `${base}/confirm`, { object_key: key });
    t.equal(r.statusCode, 422, what);
    t.equal(r.json().code, 'validation_failed', what);
    t.match(r.json().error, /^object_key: /, what);
    t.match(r.json().error, why, what);
    const after = (await s.call('GET', base)).json();
    t.same([after.object_key, after.size, after.confirmed_at], [before.object_key, before.size, before.confirmed_at], `${what}: the avatar is unchanged`);
    t.equal(await audits(), n, `${what}: nothing audited`);
    t.same(await s.platform.objects.read(key), bytes, `${what}: the stored upload is untouched`);
  }
});
