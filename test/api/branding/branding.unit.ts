// Branding: every theme validation rule, table-driven; resolution over the platform default; permissions;
// audit entries; the public bundle always 200 and rate-limited per client IP.
import t from 'tap';
import { confirmAndServeLogo, setupPlatform, tinyPng } from '../setup-platform.ts';
import {
  GIF_1X1, SECRET, animatedWebp, decoded, garbageJpeg, garbageWebp, gifFrames, gifOfFrames, gifWithMetadata, jpegWithExif, jpegWithSecondFrame, losslessWebp, pixelsWithAlpha,
  pngDeclaring, pngWithText, webpChunks, webpWithMetadata,
} from '../image-fixtures.ts';
import { decodeWebp } from '../../../api/adapters/webp-reencode.ts';
import { PLATFORM_DEFAULT, PUBLIC_FIELDS } from '../../../api/branding/branding-service.ts';

const rejected: [string, unknown][] = [
  ['primary_color', 'red'], ['primary_color', '#FFF'], ['primary_color', '#FFFFFFFF'], ['primary_color', 'FFFFFF'], ['accent_color_dark', '#GGGGGG'],
  ['brand_name', 'x'.repeat(121)], ['legal_name', 'x'.repeat(161)], ['brand_name', 'Line\nbreak'], ['app_title', 'a <b> c'], ['footer_text', 'x\r'], ['subject_override', '>'],
  ['copy_overrides', { singular: 'm<' }],
  ['terms_url', 'http://example.com/terms'], ['privacy_url', 'javascript:alert(1)'], ['privacy_url', 'not a url'],
  ['from_email', 'no-at-sign'], ['support_email', 'a@b'], ['reply_to_email', 'x y@example.com'],
  ['display_term_preset', 'partner'],
];
// Not the theme's shape: an unknown field, or a wrong JSON type (docs/platform/errors.md: 400 invalid_request).
const malformed: [string, unknown][] = [
  ['email_bg_color', 123], ['copy_overrides', { other: 'x' }], ['copy_overrides', 'text'], ['logo_url', 'https://example.com/logo.png'], ['unknown_field', 'x'],
];
const accepted: [string, unknown][] = [
  ['primary_color', '#A1b2C3'], ['primary_color_dark', null], ['brand_name', 'x'.repeat(120)], ['legal_name', 'Acme Holdings, Inc.'], ['terms_url', 'https://acme.example/terms'],
  ['from_email', 'hello@acme.example'], ['display_term_preset', 'client'], ['copy_overrides', { singular: 'patron', plural: 'patrons', possessive: "patron's" }], ['intro_override', 'Welcome back'],
];

t.test('theme validation: each rule refuses with 422 validation_failed, an unknown field or wrong type with 400 invalid_request, and changes nothing', async (t) => {
  const s = await setupPlatform(t);
  const before = (await s.call('GET', '/v1/branding')).json();
  for (const [field, value, status, code] of [...rejected.map(([f, v]) => [f, v, 422, 'validation_failed'] as const), ...malformed.map(([f, v]) => [f, v, 400, 'invalid_request'] as const)]) {
    const r = await s.call('PUT', '/v1/branding', { brand_name: 'Fine', [field]: value });
    t.equal(r.statusCode, status, `${field}=${JSON.stringify(value).slice(0, 30)}`);
    t.same(r.json(), { error: r.json().error, code, fields: r.json().fields, request_id: r.headers['x-request-id'] });
    t.match(r.json().error, field.split('.')[0]!);
  }
  t.same((await s.call('GET', '/v1/branding')).json(), before, 'nothing changed');
  for (const [field, value] of accepted) {
    const r = await s.call('PUT', '/v1/branding', { [field]: value });
    t.equal(r.statusCode, 200, `${field} accepted`);
    t.same(r.json().theme[field], value);
  }
});

t.test('resolution: raw theme null means inherited; dark colors inherit the light value; permissions; audit', async (t) => {
  const s = await setupPlatform(t);
  const r0 = (await s.call('GET', '/v1/branding', undefined, s.viewer.token)).json();
  t.same(r0.resolution_order, ['surface', 'tenant', 'platform_default']);
  t.equal(r0.theme.brand_name, null);
  t.equal(r0.resolved.brand_name, PLATFORM_DEFAULT.brand_name);
  const r1 = (await s.call('PUT', '/v1/branding', { brand_name: 'Acme', primary_color: '#112233' })).json();
  t.equal(r1.resolved.brand_name, 'Acme');
  t.equal(r1.resolved.primary_color_dark, '#112233');
  t.equal(r1.resolved.secondary_color, PLATFORM_DEFAULT.secondary_color);
  const r2 = (await s.call('PUT', '/v1/branding', { brand_name: null })).json();
  t.equal(r2.theme.brand_name, null);
  t.equal(r2.resolved.brand_name, PLATFORM_DEFAULT.brand_name);
  const denied = await s.call('PUT', '/v1/branding', { brand_name: 'X' }, s.viewer.token);
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().code, 'role_denied');
  t.equal((await s.call('DELETE', '/v1/branding/logo', undefined, s.viewer.token)).json().code, 'role_denied');
  t.equal((await s.call('DELETE', '/v1/branding/logo')).json().theme.logo_url, null);
  const audit = (await s.platform.audit.list(s.sandbox.id)).filter((a) => a.action.startsWith('branding'));
  t.same(audit.map((a) => a.action), ['branding.update', 'branding.update', 'branding.logo.delete']);
  t.same(audit[0]!.before, {});
  t.same(audit[0]!.after, { brand_name: 'Acme', primary_color: '#112233' });
});

t.test('public bundle: tenant theme for a valid claim, the default for any bad claim, 429 past the per-IP limit', async (t) => {
  const s = await setupPlatform(t);
  const view = (await s.call('PUT', '/v1/branding', { brand_name: 'Acme', from_email: 'x@acme.example' })).json();
  const get = (q: string, ip = '127.0.0.2') => s.app.inject({ method: 'GET', url: `/v1/public/branding${q}`, remoteAddress: ip });
  const good = await get(`?claim_token=${encodeURIComponent(view.public_claim_token)}`);
  t.equal(good.statusCode, 200);
  t.equal(good.json().brand_name, 'Acme');
  t.same(Object.keys(good.json()).sort(), [...PUBLIC_FIELDS].sort());
  t.notOk('from_email' in good.json(), 'sender fields are omitted');
  const forged = Buffer.from(s.tenant.id).toString('base64url') + '.AAAA';
  for (const q of ['', '?claim_token=', '?claim_token=garbage', `?claim_token=${forged}`, `?claim_token=${'x'.repeat(500)}`]) {
    const r = await get(q, '127.0.0.3');
    t.equal(r.statusCode, 200, q.slice(0, 40));
    t.equal(r.json().brand_name, PLATFORM_DEFAULT.brand_name);
  }
  let last = 0;
  for (let i = 0; i < 61; i++) last = (await get('', '127.0.0.9')).statusCode;
  t.equal(last, 429, 'the 61st request in a minute from one IP is limited');
  t.equal((await get('', '127.0.0.10')).statusCode, 200, 'other addresses are not');
});

t.test('logo flow: upload target, direct PUT to the signed URL, confirmation checks magic bytes', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s = await setupPlatform(t, { clock: () => now });
  const png = tinyPng();
  const target = async (ct = 'image/png', len = png.length) => s.call('POST', '/v1/branding/logo/upload-url', { content_type: ct, content_length: len });
  t.equal((await target('image/svg+xml')).statusCode, 400, 'only the four image types');
  t.equal((await target('image/gif')).statusCode, 201, 'a GIF (platform-api.md "logo content types")');
  t.equal((await target('image/webp')).statusCode, 201, 'a WebP');
  t.equal((await target('image/png', 5 * 1024 * 1024 + 1)).statusCode, 400, 'at most 5 MB');
  t.equal((await s.call('POST', '/v1/branding/logo/upload-url', { content_type: 'image/png', content_length: 10 }, s.viewer.token)).json().code, 'role_denied');
  const tg = (await target()).json();
  t.match(tg, { object_key: /^logos\/[0-9a-f]{32}$/, upload_url: /\/v1\/uploads\/logos\// });
  const path = new URL(tg.upload_url).pathname + new URL(tg.upload_url).search;
  const put = (p: string, body: Buffer, ct = 'image/png') => s.app.inject({ method: 'PUT', url: p, payload: body, headers: { 'content-type': ct } });
  t.equal((await put(path.replace('sig=', 'sig=x'), png)).statusCode, 403, 'tampered URL refused');
  t.equal((await put(path, png, 'image/gif')).statusCode, 415, 'other content type refused');
  t.equal((await put(path, Buffer.concat([png, Buffer.alloc(1)]))).statusCode, 413, 'more bytes than declared refused');
  t.equal((await put(path, png)).statusCode, 204);
  await confirmAndServeLogo(t, s, tg.object_key, png, 'image/png', 'the confirmed logo is served publicly');

  const fake = (await target('image/png', 20)).json();
  const fakePath = new URL(fake.upload_url).pathname + new URL(fake.upload_url).search;
  t.equal((await put(fakePath, Buffer.from('<html>not an image'))).statusCode, 204, 'the store takes the bytes');
  const bad = await s.call('POST', '/v1/branding/logo', { object_key: fake.object_key });
  t.equal(bad.statusCode, 422);
  t.equal(bad.json().code, 'validation_failed', 'a non-image is refused on confirmation');
  t.equal((await s.app.inject({ method: 'GET', url: `/v1/objects/${fake.object_key}` })).statusCode, 404, 'unconfirmed objects are not served');
  t.equal((await s.call('POST', '/v1/branding/logo', { object_key: 'logos/' + '0'.repeat(32) })).json().code, 'validation_failed');
  const late = (await target()).json();
  now += 16 * 60_000;
  t.equal((await put(new URL(late.upload_url).pathname + new URL(late.upload_url).search, png)).statusCode, 403, 'expired URL refused');
  t.equal((await s.call('GET', '/v1/branding')).json().resolved.logo_url, `/v1/objects/${tg.object_key}`, 'the good logo stays');
});

t.test('logo confirmation decodes the image and stores it written again without metadata; what does not decode changes nothing', async (t) => {
  const s = await setupPlatform(t);
  const upload = async (bytes: Buffer, ct: string) => {
    const tg = (await s.call('POST', '/v1/branding/logo/upload-url', { content_type: ct, content_length: bytes.length })).json();
    const u = new URL(tg.upload_url);
    t.equal((await s.app.inject({ method: 'PUT', url: u.pathname + u.search, payload: bytes, headers: { 'content-type': ct } })).statusCode, 204);
    return tg.object_key as string;
  };
  const has = (b: Buffer, x: string) => b.includes(Buffer.from(x, 'latin1'));

  // A PNG with tEXt and iTXt chunks: served without them, the same size and pixels.
  const png = pngWithText(9, 5);
  const pngKey = await upload(png, 'image/png');
  const served = await confirmAndServeLogo(t, s, pngKey, png, 'image/png', 'a PNG with text chunks');
  t.notOk(has(served, SECRET) || has(served, 'tEXt') || has(served, 'iTXt'), 'no text chunk is served');

  // A JPEG with EXIF, XMP and a comment: served without them, the same size.
  const jpeg = jpegWithExif(24, 16);
  const jpegKey = await upload(jpeg, 'image/jpeg');
  const ok = await s.call('POST', '/v1/branding/logo', { object_key: jpegKey });
  t.equal(ok.statusCode, 200, 'a JPEG with EXIF: confirmed');
  const got = await s.app.inject({ method: 'GET', url: `/v1/objects/${jpegKey}` });
  t.equal(got.headers['content-type'], 'image/jpeg');
  t.notOk(has(got.rawPayload, SECRET) || has(got.rawPayload, 'Exif'), 'no EXIF, XMP or comment is served');
  t.same([decoded(got.rawPayload).width, decoded(got.rawPayload).height], [24, 16]);
  t.same(got.rawPayload, await s.platform.objects.read(jpegKey), 'the store holds what is served');

  // An animated GIF with a comment, an XMP extension and bytes after its trailer: every frame served, no metadata.
  const gif = gifWithMetadata();
  const gifKey = await upload(gif, 'image/gif');
  t.equal((await s.call('POST', '/v1/branding/logo', { object_key: gifKey })).statusCode, 200, 'an animated GIF with metadata: confirmed');
  const g = await s.app.inject({ method: 'GET', url: `/v1/objects/${gifKey}` });
  t.equal(g.headers['content-type'], 'image/gif');
  t.notOk(has(g.rawPayload, SECRET) || has(g.rawPayload, 'XMP DataXMP'), 'no comment, XMP or trailing bytes are served');
  t.same(gifFrames(g.rawPayload).frames.map((f) => f.rgba), gifFrames(gif).frames.map((f) => f.rgba), 'all three frames, the same pixels');
  t.same(g.rawPayload, await s.platform.objects.read(gifKey), 'the store holds what is served');

  // A lossless WebP with ICC, EXIF and XMP chunks, declared as a PNG: stored and served as the WebP it is.
  const px = pixelsWithAlpha(6, 4);
  const webp = webpWithMetadata(await losslessWebp(6, 4, px), 6, 4);
  const webpKey = await upload(webp, 'image/png');
  t.equal((await s.call('POST', '/v1/branding/logo', { object_key: webpKey })).statusCode, 200, 'a WebP with metadata: confirmed');
  const w = await s.app.inject({ method: 'GET', url: `/v1/objects/${webpKey}` });
  t.equal(w.headers['content-type'], 'image/webp', 'the sniffed type, not the declared one');
  t.same(webpChunks(w.rawPayload).map((c) => c.fourcc), ['VP8L'], 'no ICCP, EXIF or XMP chunk is served');
  t.ok(Buffer.from((await decodeWebp(w.rawPayload))!.data).equals(px), 'the same pixels');

  // Refused, 422 validation_failed naming object_key: nothing is stored, set or served.
  const refusals: [string, Buffer, string, RegExp][] = [
    ['a truncated PNG', png.subarray(0, png.length - 20), 'image/png', /not a complete, valid PNG/],
    ['a JPEG whose scan is garbage', garbageJpeg(16, 16), 'image/jpeg', /not a complete, valid JPEG/],
    ['a PNG header claiming 100000x100000', pngDeclaring(100_000, 100_000), 'image/png', /is 100000x100000; at most 4096x4096 pixels/],
    ['a JPEG whose second frame claims 60000x60000', jpegWithSecondFrame(60_000), 'image/jpeg', /declares more pixels than accepted/],
    ['a GIF without its trailer', GIF_1X1.subarray(0, GIF_1X1.length - 1), 'image/gif', /not a complete, valid GIF/],
    ['a GIF of 501 frames', gifOfFrames(501), 'image/gif', /has 501 frames; at most 500 are accepted/],
    ['a WebP whose image data is garbage', garbageWebp(await losslessWebp(6, 4)), 'image/webp', /not a complete, valid WebP/],
    ['an animated WebP', animatedWebp(await losslessWebp(6, 4), 6, 4), 'image/webp', /an animated WebP is not accepted/],
    ['an SVG', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), 'image/png', /not a PNG, JPEG, GIF or WebP image/],
  ];
  for (const [what, bytes, ct, why] of refusals) {
    const before = (await s.call('GET', '/v1/branding')).json();
    const key = await upload(bytes, ct);
    const r = await s.call('POST', '/v1/branding/logo', { object_key: key });
    t.equal(r.statusCode, 422, what);
    t.equal(r.json().code, 'validation_failed', what);
    t.match(r.json().error, /^object_key: /, what);
    t.match(r.json().error, why, what);
    t.same((await s.call('GET', '/v1/branding')).json(), before, `${what}: the branding is unchanged`);
    t.equal((await s.app.inject({ method: 'GET', url: `/v1/objects/${key}` })).statusCode, 404, `${what}: not served`);
    t.same(await s.platform.objects.read(key), bytes, `${what}: the stored upload is untouched`);
  }
  t.equal((await s.call('GET', '/v1/branding')).json().resolved.logo_url, `/v1/objects/${webpKey}`, 'the last good logo stays');
});

t.test('the public bundle: an unknown query parameter is 400 invalid_request naming it, like an unknown surface; the bundle is unchanged', async (t) => {
  const s = await setupPlatform(t);
  const get = (q: string) => s.app.inject({ method: 'GET', url: `/v1/public/branding?${q}` });
  const bundle = (await get('surface=email')).json();
  for (const [q, field] of [['colour=red', 'colour'], ['surface=email&colour=red', 'colour'], ['surface=web', 'surface']] as const) {
    const r = await get(q);
    t.equal(r.statusCode, 400, q);
    t.equal(r.json().code, 'invalid_request', q);
    t.same(r.json().fields.map((f: { field: string }) => f.field), [field], `${q}: names ${field}`);
  }
  t.same((await get('surface=email')).json(), bundle, 'the bundle itself still answers 200, unchanged');
});
