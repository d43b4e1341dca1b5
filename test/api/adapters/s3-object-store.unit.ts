// The S3-compatible object store: the AWS documentation's SigV4 examples reproduced byte for byte by the
// signer and by the test double's independent verifier; the adapter against a local S3 double that checks
// every signature; and the whole logo flow through the API with the store selected by configuration.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { presignUrl, signHeaders, sigv4Signer } from '../../../api/adapters/aws-sigv4.ts';
import { S3ObjectStore } from '../../../api/adapters/s3-object-store.ts';
import { ObjectStoreError } from '../../../api/adapters/object-store.ts';
import { objectStoreFromConfig } from '../../../api/adapters/adapters-from-config.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { ConfigError } from '../../../common/config.ts';
import { signingKey, verifySigV4 } from './sigv4-verifier.ts';
import { s3Double } from './s3-double.ts';
import { confirmAndServeLogo, setupPlatform } from '../setup-platform.ts';
import { bytesToHex } from '@noble/hashes/utils.js';
import { tinyPng } from '../setup-platform.ts';

const V = JSON.parse(readFileSync(join(import.meta.dirname, 'aws-sigv4-vectors.json'), 'utf8'));
const creds = V.credentials as { accessKeyId: string; secretAccessKey: string };
const keys = { [creds.accessKeyId]: creds.secretAccessKey };
// A real image: confirmation reads its header's size.
const PNG = tinyPng();

t.test('AWS SigV4 examples: the signer and the double\'s verifier reproduce them byte for byte', async (t) => {
  const signer = sigv4Signer('s3', V.region, creds);
  const p = V.presignedGet;
  t.equal(await presignUrl(signer, { method: 'GET', url: new URL(p.url), expiresInSeconds: p.expires, signingDate: new Date(p.date) }), p.presignedUrl, 'presigned GET URL');
  const h = V.headerGet;
  const signed = await signHeaders(signer, { method: 'GET', url: new URL(h.url), headers: h.headers, signingDate: new Date(h.date) });
  t.equal(signed.authorization, h.authorization, 'Authorization header');

  const u = new URL(p.presignedUrl);
  const during = Date.parse(p.date) + 3600_000;
  const vq = verifySigV4({ method: 'GET', rawUrl: u.pathname + u.search, headers: { host: u.host } }, { service: 's3', region: V.region, keys, nowMs: during, doubleEncodePath: false });
  t.ok(vq.ok, 'the verifier accepts the example URL');
  if (vq.ok) {
    t.equal(vq.canonicalRequest, p.canonicalRequest, 'canonical request');
    t.equal(vq.stringToSign, p.stringToSign, 'string to sign');
    t.equal(vq.signature, p.signature, 'signature');
  }
  const vh = verifySigV4({ method: 'GET', rawUrl: '/test.txt', headers: { host: 'examplebucket.s3.amazonaws.com', ...h.headers, 'x-amz-date': signed['x-amz-date'], 'x-amz-content-sha256': signed['x-amz-content-sha256'], authorization: h.authorization } },
    { service: 's3', region: V.region, keys, nowMs: Date.parse(h.date), doubleEncodePath: false });
  t.ok(vh.ok, 'the verifier accepts the example header-signed request');
  if (vh.ok) {
    t.equal(vh.canonicalRequest, h.canonicalRequest);
    t.equal(vh.stringToSign, h.stringToSign);
  }
  const sk = V.signingKey;
  t.equal(bytesToHex(signingKey(sk.secretAccessKey, sk.date, sk.region, sk.service)), sk.key, 'signing-key derivation');

  const refused: [string, string, number, string][] = [
    ['expired', u.pathname + u.search, Date.parse(p.date) + 86_401_000, 'AccessDenied'],
    ['signature changed', u.pathname + u.search.replace('aeeed9', 'aeeed8'), during, 'SignatureDoesNotMatch'],
    ['other object', '/test2.txt' + u.search, during, 'SignatureDoesNotMatch'],
    ['longer expiry', u.pathname + u.search.replace('Expires=86400', 'Expires=86401'), during, 'SignatureDoesNotMatch'],
    ['expiry over a week', u.pathname + u.search.replace('Expires=86400', 'Expires=604801'), during, 'AuthorizationQueryParametersError'],
    ['unknown key id', u.pathname + u.search.replace('AKIAIOSFODNN7EXAMPLE', 'AKIAIOSFODNN7EXAMPLF'), during, 'InvalidAccessKeyId'],
    ['unsigned', '/test.txt', during, 'AccessDenied'],
  ];
  for (const [what, rawUrl, nowMs, code] of refused) {
    const r = verifySigV4({ method: 'GET', rawUrl, headers: { host: u.host } }, { service: 's3', region: V.region, keys, nowMs, doubleEncodePath: false });
    t.equal(r.ok ? 'ok' : r.code, code, what);
  }
  const put = verifySigV4({ method: 'PUT', rawUrl: u.pathname + u.search, headers: { host: u.host } }, { service: 's3', region: V.region, keys, nowMs: during, doubleEncodePath: false });
  t.equal(put.ok ? 'ok' : put.code, 'SignatureDoesNotMatch', 'a GET URL does not allow a PUT');
});

t.test('adapter against the S3 double: presigned PUT bound to type, length and expiry; signed GET and HEAD', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const s3 = await s3Double(t, { bucket: 'logos-bucket', region: 'eu-west-1', keys, clock: () => now });
  const store = new S3ObjectStore({ endpoint: s3.endpoint, bucket: 'logos-bucket', region: 'eu-west-1', credentials: creds, clock: () => now });
  const key = 'logos/' + 'ab'.repeat(16);
  const url = await store.uploadUrl({ object_key: key, content_type: 'image/png', max_bytes: PNG.length, expires_at: now + 900_000 });
  const q = new URL(url).searchParams;
  t.equal(new URL(url).pathname, `/logos-bucket/${key}`, 'path-style URL');
  t.equal(q.get('X-Amz-SignedHeaders'), 'content-length;content-type;host');
  t.equal(q.get('X-Amz-Expires'), '900');
  t.notOk(url.includes(creds.secretAccessKey), 'the URL carries no secret');
  const put = (body: Buffer, ct = 'image/png', u = url) => fetch(u, { method: 'PUT', body, headers: { 'content-type': ct } });
  const r1 = await put(PNG, 'image/gif');
  t.equal(r1.status, 403, 'another content type breaks the signature');
  t.match(await r1.text(), /<Code>SignatureDoesNotMatch<\/Code>/);
  t.equal((await put(Buffer.concat([PNG, Buffer.alloc(1)]))).status, 403, 'another length breaks the signature');
  t.equal((await put(PNG, 'image/png', url.replace(key, 'logos/' + 'cd'.repeat(16)))).status, 403, 'another key breaks the signature');
  t.equal(s3.objects.size, 0, 'nothing stored by refused PUTs');
  t.equal((await put(PNG)).status, 200);
  t.same(s3.objects.get(key)?.bytes, PNG);
  t.same(await store.head(key), { size: PNG.length });
  t.same(await store.read(key), PNG);
  t.equal(await store.read('logos/' + '00'.repeat(16)), undefined, 'a missing object reads as undefined');
  t.equal(await store.head('logos/' + '00'.repeat(16)), undefined);
  t.equal(await store.read('../etc/passwd'), undefined, 'keys outside the key shape are never requested');
  t.same(s3.log.filter((l) => l.method !== 'PUT' && l.status === 200).map((l) => `${l.method} ${l.form}`), ['HEAD header', 'GET header'], 'reads are header-signed');
  // A presigned GET (an account holder's avatar read, docs/platform/account-holders.md): the object's bytes until it expires.
  const getUrl = await store.downloadUrl(key, now + 300_000);
  t.equal(new URL(getUrl).searchParams.get('X-Amz-Expires'), '300');
  t.notOk(getUrl.includes(creds.secretAccessKey), 'the URL carries no secret');
  const got = await fetch(getUrl);
  t.equal(got.status, 200);
  t.same(Buffer.from(await got.arrayBuffer()), PNG);
  t.equal((await fetch(getUrl.replace(key, 'logos/' + 'cd'.repeat(16)))).status, 403, 'another key breaks the signature');
  t.equal((await fetch(getUrl, { method: 'PUT', body: PNG, headers: { 'content-type': 'image/png' } })).status, 403, 'a GET URL does not allow a PUT');
  now += 301_000;
  t.equal((await fetch(getUrl)).status, 403, 'expired GET URL refused');
  now -= 301_000;
  now += 901_000;
  const late = await put(PNG);
  t.equal(late.status, 403, 'expired URL refused');
  t.match(await late.text(), /Request has expired/);

  const wrong = new S3ObjectStore({ endpoint: s3.endpoint, bucket: 'logos-bucket', region: 'eu-west-1', credentials: { ...creds, secretAccessKey: 'not-the-secret' }, clock: () => now });
  await t.rejects(wrong.read(key), ObjectStoreError, 'a refused read is an ObjectStoreError');
  const down = new S3ObjectStore({ endpoint: 'http://127.0.0.1:1', bucket: 'logos-bucket', region: 'eu-west-1', credentials: creds, clock: () => now });
  await t.rejects(down.head(key), ObjectStoreError, 'an unreachable store is an ObjectStoreError');
  const vhost = new S3ObjectStore({ endpoint: 'https://s3.eu-west-1.amazonaws.com', bucket: 'logos-bucket', region: 'eu-west-1', credentials: creds, pathStyle: false });
  t.equal(vhost.objectUrl(key).href, `https://logos-bucket.s3.eu-west-1.amazonaws.com/${key}`, 'virtual-hosted URL');
});

function s3Env(endpoint: string, extra: Record<string, string> = {}) {
  return {
    API_DATA_DIR: '/tmp/unused', API_OBJECT_STORE: 's3', API_S3_ENDPOINT: endpoint, API_S3_BUCKET: 'logos-bucket', API_S3_REGION: 'eu-west-1',
    API_S3_ACCESS_KEY_ID: creds.accessKeyId, API_S3_SECRET_ACCESS_KEY: creds.secretAccessKey, ...extra,
  };
}

t.test('configuration: API_OBJECT_STORE=s3 needs its settings; plain http only on loopback; the secret is never printed', async (t) => {
  t.throws(() => loadApiConfig({ API_OBJECT_STORE: 's3', API_S3_SECRET_ACCESS_KEY: 'very-secret-value' }), ConfigError);
  try {
    loadApiConfig({ API_OBJECT_STORE: 's3', API_S3_SECRET_ACCESS_KEY: 'very-secret-value' });
  } catch (err) {
    t.match((err as Error).message, /API_S3_ENDPOINT, API_S3_BUCKET, API_S3_REGION$/);
    t.notMatch((err as Error).message, /very-secret-value/);
  }
  t.throws(() => loadApiConfig(s3Env('http://s3.example.com')), /plain http is allowed on loopback only/);
  t.throws(() => loadApiConfig(s3Env('https://s3.example.com', { API_S3_BUCKET: 'Bad_Bucket' })), /API_S3_BUCKET/);
  t.equal(loadApiConfig(s3Env('https://s3.eu-west-1.amazonaws.com')).objectStore, 's3');
  t.equal(loadApiConfig({}).objectStore, 'directory', 'the embedded store is the default');
  t.equal(objectStoreFromConfig(loadApiConfig({})), undefined);
});

t.test('adapter against the S3 double: header-signed PUT and DELETE of an object the API writes (a member\'s data export)', async (t) => {
  const now = Date.parse('2026-03-01T00:00:00Z');
  const s3 = await s3Double(t, { bucket: 'exports-bucket', region: 'eu-west-1', keys, clock: () => now });
  const store = new S3ObjectStore({ endpoint: s3.endpoint, bucket: 'exports-bucket', region: 'eu-west-1', credentials: creds, clock: () => now });
  const key = 'data_exports/' + 'ef'.repeat(16);
  const body = JSON.stringify({ format_version: 1, name: 'Zoë' });
  await store.put(key, body, 'application/json');
  t.same(s3.objects.get(key)?.bytes, Buffer.from(body, 'utf8'), 'the bytes as sent (UTF-8)');
  t.equal(s3.objects.get(key)?.contentType, 'application/json');
  t.same(s3.log.at(-1), { method: 'PUT', key, form: 'header', status: 200 }, 'header-signed, the payload hash signed');
  t.equal((await store.read(key))?.toString('utf8'), body);
  await store.delete(key);
  t.equal(s3.objects.has(key), false, 'deleted');
  t.same(s3.log.at(-1), { method: 'DELETE', key, form: 'header', status: 204 });
  await store.delete(key);
  t.equal(s3.log.at(-1)?.status, 204, 'deleting a missing object is no error');
  const wrong = new S3ObjectStore({ endpoint: s3.endpoint, bucket: 'exports-bucket', region: 'eu-west-1', credentials: { ...creds, secretAccessKey: 'x'.repeat(40) }, clock: () => now });
  await t.rejects(wrong.put(key, body, 'application/json'), ObjectStoreError, 'a refused PUT is an object store error');
  t.equal(s3.objects.has(key), false, 'nothing stored');
  await t.rejects(store.put('../etc/passwd', body, 'application/json'), /bad object key/, 'keys outside the key shape are never sent');
});

t.test('logo flow end to end with API_OBJECT_STORE=s3: upload target, direct PUT to the bucket, confirmation by magic bytes', async (t) => {
  let now = Date.parse('2026-03-01T00:00:00Z');
  const clock = () => now;
  const s3 = await s3Double(t, { bucket: 'logos-bucket', region: 'eu-west-1', keys, clock });
  const objectStore = objectStoreFromConfig(loadApiConfig(s3Env(s3.endpoint)), clock);
  t.ok(objectStore instanceof S3ObjectStore);
  const s = await setupPlatform(t, { clock, objectStore: objectStore! });
  const target = async (ct: string, len: number) => (await s.call('POST', '/v1/branding/logo/upload-url', { content_type: ct, content_length: len })).json();
  const tg = await target('image/png', PNG.length);
  t.match(tg, { object_key: /^logos\/[0-9a-f]{32}$/, expires_at: new Date(now + 900_000).toISOString() });
  t.ok(tg.upload_url.startsWith(`${s3.endpoint}/logos-bucket/${tg.object_key}?`), 'the URL points at the bucket, not the API');
  t.equal((await s.app.inject({ method: 'PUT', url: `/v1/uploads/${tg.object_key}`, payload: PNG, headers: { 'content-type': 'image/png' } })).statusCode, 404, 'the API takes no upload bytes');
  t.equal((await s.call('POST', '/v1/branding/logo', { object_key: tg.object_key })).json().code, 'validation_failed', 'confirming before the upload is refused');
  const put = await fetch(tg.upload_url, { method: 'PUT', body: PNG, headers: { 'content-type': 'image/png' } });
  t.equal(put.status, 200, 'direct PUT to the bucket');
  const clean = await confirmAndServeLogo(t, s, tg.object_key, PNG, 'image/png', 'the confirmed logo is served from the bucket');
  t.same(s3.objects.get(tg.object_key)?.bytes, clean, 'the image written again replaced the upload in the bucket');
  t.equal(s3.objects.get(tg.object_key)?.contentType, 'image/png');
  t.same(s3.log.filter((l) => l.method === 'PUT' && l.form === 'header').map((l) => [l.key, l.status]), [[tg.object_key, 200]], 'by a header-signed PUT, its binary payload hash signed');

  const fake = await target('image/jpeg', 18);
  t.equal((await fetch(fake.upload_url, { method: 'PUT', body: Buffer.from('<html>not an image'), headers: { 'content-type': 'image/jpeg' } })).status, 200, 'the bucket takes any bytes');
  const bad = await s.call('POST', '/v1/branding/logo', { object_key: fake.object_key });
  t.equal(bad.statusCode, 422);
  t.equal(bad.json().code, 'validation_failed', 'a non-image is refused on confirmation: the declared type is not trusted');
  t.equal((await s.app.inject({ method: 'GET', url: `/v1/objects/${fake.object_key}` })).statusCode, 404, 'unconfirmed objects are not served');
  const other = await s.platform.tenancy.createKey((await s.platform.tenancy.createTenant('Other')).sandbox.id, 'owner');
  t.equal((await s.call('POST', '/v1/branding/logo', { object_key: tg.object_key }, other.token)).json().code, 'validation_failed', 'another tenant cannot claim the object');

  const late = await target('image/png', PNG.length);
  now += 16 * 60_000;
  t.equal((await fetch(late.upload_url, { method: 'PUT', body: PNG, headers: { 'content-type': 'image/png' } })).status, 403, 'expired URL refused by the bucket');
  t.equal((await s.call('GET', '/v1/branding')).json().resolved.logo_url, `/v1/objects/${tg.object_key}`, 'the good logo stays');
  t.ok(s3.log.every((l) => l.status !== 403 || l.code === 'AccessDenied'), 'every request the API itself made was correctly signed');
});

t.test('an unreachable bucket is 502 object_store_error, not a 500', async (t) => {
  const objectStore = new S3ObjectStore({ endpoint: 'http://127.0.0.1:1', bucket: 'logos-bucket', region: 'eu-west-1', credentials: creds });
  const s = await setupPlatform(t, { objectStore });
  const tg = (await s.call('POST', '/v1/branding/logo/upload-url', { content_type: 'image/png', content_length: 10 })).json();
  const r = await s.call('POST', '/v1/branding/logo', { object_key: tg.object_key });
  t.equal(r.statusCode, 502);
  t.same(r.json(), { error: 'the object store failed; try again', code: 'object_store_error', request_id: r.headers['x-request-id'] });
  t.equal((await s.call('GET', '/v1/branding')).json().resolved.logo_url, null, 'nothing changed');
});
