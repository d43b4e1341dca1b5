// A token's documents (docs/platform/rwa.md "Documents and metadata") through the app with the embedded
// object store: the signed upload URL, the direct PUT, confirmation by magic bytes, size and SHA-256, the
// `document` and `document_entitlement` log entries, reads by grantees only through a 5-minute presigned
// GET; refusals change nothing (read back), another tenant's token is 404.
import t from 'tap';
import { createHash } from 'node:crypto';
import { putToken, setupDocuments } from './documents-fixture.ts';

const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(200, 0x20), Buffer.from('\n%%EOF\n')]);
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]);
const html = Buffer.from('<html><body>not a document</body></html>'.padEnd(120, ' '));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, '');

t.test('documents: upload, confirm by type and hash, log entries, grantee-only short-lived reads; refusals change nothing', async (t) => {
  let skew = 0;
  const s = await setupDocuments(t, { clock: () => Date.now() + skew });
  const tok = await putToken(s.store, s.scope);
  const other = await putToken(s.store, s.otherScope);
  const base = `/v1/rwa/tokens/${tok}`;
  const put = (url: string, bytes: Buffer, ct: string) => s.app.inject({ method: 'PUT', url: local(url), headers: { 'content-type': ct }, payload: bytes });
  const upload = async (bytes: Buffer, ct = 'application/pdf') => {
    const r = await s.call('POST', `${base}/documents/upload-url`, { name: 'Prospectus', content_type: ct, content_length: bytes.length });
    t.equal(r.statusCode, 201, r.body);
    t.equal((await put(r.json().upload_url, bytes, ct)).statusCode, 204);
    return r.json().object_key as string;
  };

  // Bad requests for an upload URL: no Idempotency-Key, a type outside the list, over the cap, no permission, another tenant's token.
  const noKey = await s.app.inject({ method: 'POST', url: `${base}/documents/upload-url`, headers: { authorization: `Bearer ${s.owner.token}`, 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x', content_type: 'application/pdf', content_length: 10 }) });
  t.equal(noKey.statusCode, 400);
  t.match(noKey.json().error, /Idempotency-Key is required/);
  t.equal((await s.call('POST', `${base}/documents/upload-url`, { name: 'x', content_type: 'text/html', content_length: 10 })).statusCode, 400, 'a type of the list');
  t.equal((await s.call('POST', `${base}/documents/upload-url`, { name: 'x', content_type: 'application/pdf', content_length: 20 * 1024 * 1024 + 1 })).statusCode, 400, 'at most 20 MiB');
  const bigImage = await s.call('POST', `${base}/documents/upload-url`, { name: 'x', content_type: 'image/png', content_length: 5 * 1024 * 1024 + 1 });
  t.equal(bigImage.statusCode, 422, 'an image document at most 5 MiB');
  t.match(bigImage.json().error, /^content_length:/);
  t.equal((await s.call('POST', `${base}/documents/upload-url`, { name: 'x', content_type: 'application/pdf', content_length: 10 }, s.developer.token)).json().code, 'role_denied', 'tokenization.manage');
  t.equal((await s.call('POST', `${base}/documents/upload-url`, { name: 'x', content_type: 'application/pdf', content_length: 10 }, s.otherOwner.token)).statusCode, 404, 'another tenant\'s token');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${other}/documents/upload-url`, { name: 'x', content_type: 'application/pdf', content_length: 10 })).statusCode, 404, 'a token of another tenant by id');

  // The PUT is held to the signed grant: more bytes than granted, another content type, a tampered signature.
  const g = (await s.call('POST', `${base}/documents/upload-url`, { name: 'x', content_type: 'application/pdf', content_length: 50 })).json();
  t.equal((await put(g.upload_url, pdf, 'application/pdf')).statusCode, 413, 'larger than granted');
  t.equal((await put(g.upload_url, png, 'image/png')).statusCode, 415, 'another type than granted');
  t.equal((await put(g.upload_url.replace(/sig=[^&]+/, 'sig=AAAA'), pdf.subarray(0, 50), 'application/pdf')).json().code, 'upload_denied');

  // Bytes that are not a PDF or image, whatever was declared, and a wrong hash are refused: nothing is recorded or logged.
  const fake = await upload(html);
  const notDoc = await s.call('POST', `${base}/documents/confirm`, { object_key: fake, sha256: sha(html) });
  t.equal(notDoc.statusCode, 422);
  t.match(notDoc.json().error, /not a PDF, PNG, JPEG, WebP or GIF/);
  const key = await upload(pdf);
  const mismatch = await s.call('POST', `${base}/documents/confirm`, { object_key: key, sha256: sha(png) });
  t.equal(mismatch.statusCode, 422);
  t.match(mismatch.json().error, /^sha256:/);
  t.equal((await s.call('POST', `${base}/documents/confirm`, { object_key: key, sha256: 'ABC' })).statusCode, 400, 'a malformed hash');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${other}/documents/confirm`, { object_key: key, sha256: sha(pdf) }, s.otherOwner.token)).statusCode, 422, 'another tenant cannot confirm this upload');
  t.same(s.log.of(tok), [], 'nothing appended to the log');

  // Confirmed: the document, one `document` entry with its hash; confirming again answers the same document.
  const ok = await s.call('POST', `${base}/documents/confirm`, { object_key: key, sha256: sha(pdf) });
  t.equal(ok.statusCode, 201, ok.body);
  const doc = ok.json();
  t.match(doc, { token_id: tok, name: 'Prospectus', content_type: 'application/pdf', size: pdf.length, sha256: sha(pdf), log_index: 0 });
  t.same(s.log.of(tok), [{ kind: 'document', body: { document_id: doc.id, name: 'Prospectus', content_type: 'application/pdf', size: pdf.length, sha256: sha(pdf) } }]);
  t.same((await s.call('POST', `${base}/documents/confirm`, { object_key: key, sha256: sha(pdf) })).json(), doc, 'the same document again');
  t.equal(s.log.of(tok).length, 1, 'logged once');
  const img = (await s.call('POST', `${base}/documents/confirm`, { object_key: await upload(png, 'image/png'), sha256: sha(png) })).json();
  t.equal(img.content_type, 'image/png');

  // Nobody reads it without an entitlement: not the owner who uploaded it, not a viewer.
  t.equal((await s.call('GET', `${base}/documents/${doc.id}`)).json().code, 'document_not_entitled');
  t.equal((await s.call('GET', `${base}/documents/${doc.id}`, undefined, s.viewer.token)).statusCode, 403);
  t.equal((await s.call('GET', `${base}/documents/${doc.id}`, undefined, s.otherOwner.token)).statusCode, 404, 'another tenant');
  t.equal((await s.call('GET', `${base}/documents/doc_nope`, undefined, s.viewer.token)).statusCode, 404);

  // Entitlements: bad grantees refused and nothing logged; a viewer key entitled to this one document.
  for (const grantee of ['someone', 'role:superuser', 'key:', 'key:key_nope', `key:${s.otherOwnerKeyId}`] as const) t.equal((await s.call('POST', `${base}/document-entitlements`, { grantee })).statusCode, 422, grantee);
  t.equal((await s.call('POST', `${base}/document-entitlements`, { grantee: `key:${s.viewer.key.id}`, document_ids: ['doc_nope'] })).statusCode, 422, 'an unknown document');
  t.equal((await s.call('POST', `${base}/document-entitlements`, { grantee: `key:${s.viewer.key.id}`, expires_at: new Date(Date.now() - 1000).toISOString() })).statusCode, 422, 'an expiry in the past');
  t.equal((await s.call('POST', `${base}/document-entitlements`, { grantee: `key:${s.viewer.key.id}` }, s.viewer.token)).json().code, 'role_denied');
  t.equal(s.log.of(tok).length, 2, 'no entitlement logged');
  const granted = await s.call('POST', `${base}/document-entitlements`, { grantee: `key:${s.viewer.key.id}`, document_ids: [doc.id] });
  t.equal(granted.statusCode, 201, granted.body);
  t.same(s.log.of(tok).at(-1), { kind: 'document_entitlement', body: { action: 'grant', grantee: `key:${s.viewer.key.id}`, document_ids: [doc.id], expires_at: null } });

  const r = await s.call('GET', `${base}/documents/${doc.id}`, undefined, s.viewer.token);
  t.equal(r.statusCode, 200, r.body);
  t.equal(Date.parse(r.json().url_expires_at) - Date.now() <= 5 * 60_000 + 1000, true, 'the URL lives 5 minutes');
  const got = await s.app.inject({ method: 'GET', url: local(r.json().url) });
  t.equal(got.statusCode, 200);
  t.equal(got.headers['content-type'], 'application/pdf');
  t.equal(sha(got.rawPayload), sha(pdf), 'the confirmed bytes');
  t.equal((await s.call('GET', `${base}/documents/${img.id}`, undefined, s.viewer.token)).statusCode, 403, 'only the listed document');
  t.equal((await s.call('GET', `${base}/documents/${doc.id}`, undefined, s.developer.token)).statusCode, 403, 'another key of the workspace');
  const tampered = await s.app.inject({ method: 'GET', url: local(r.json().url).replace(/exp=\d+/, `exp=${Date.now() + 3_600_000}`) });
  t.equal(tampered.json().code, 'upload_denied', 'a lengthened URL');

  // The URL expires: 5 minutes later it is refused.
  skew = 5 * 60_000 + 1000;
  t.equal((await s.app.inject({ method: 'GET', url: local(r.json().url) })).json().code, 'upload_denied', 'an expired URL');
  skew = 0;

  // By role, until a time: a developer key reads every document until its entitlement expires.
  const until = new Date(Date.now() + 60_000).toISOString();
  t.equal((await s.call('POST', `${base}/document-entitlements`, { grantee: 'role:developer', expires_at: until })).statusCode, 201);
  t.equal((await s.call('GET', `${base}/documents/${img.id}`, undefined, s.developer.token)).statusCode, 200);
  skew = 61_000;
  t.equal((await s.call('GET', `${base}/documents/${img.id}`, undefined, s.developer.token)).json().code, 'document_not_entitled', 'the entitlement expired');
  skew = 0;

  // Revocation: logged; the grantee is refused again; revoking twice is 404 and logs nothing.
  t.equal((await s.call('DELETE', `${base}/document-entitlements/key:${s.viewer.key.id}`)).statusCode, 204);
  t.same(s.log.of(tok).at(-1), { kind: 'document_entitlement', body: { action: 'revoke', grantee: `key:${s.viewer.key.id}` } });
  const n = s.log.of(tok).length;
  t.equal((await s.call('DELETE', `${base}/document-entitlements/key:${s.viewer.key.id}`)).statusCode, 404);
  t.equal((await s.call('DELETE', `${base}/document-entitlements/role:developer`, undefined, s.otherOwner.token)).statusCode, 404, 'another tenant');
  t.equal(s.log.of(tok).length, n);
  t.equal((await s.call('GET', `${base}/documents/${doc.id}`, undefined, s.viewer.token)).statusCode, 403, 'revoked');
});

t.test('documents: a log that refuses the entry leaves no document and no entitlement', async (t) => {
  const s = await setupDocuments(t, { failingLog: true });
  const tok = await putToken(s.store, s.scope);
  const g = (await s.call('POST', `/v1/rwa/tokens/${tok}/documents/upload-url`, { name: 'x', content_type: 'application/pdf', content_length: pdf.length })).json();
  t.equal((await s.app.inject({ method: 'PUT', url: local(g.upload_url), headers: { 'content-type': 'application/pdf' }, payload: pdf })).statusCode, 204);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${tok}/documents/confirm`, { object_key: g.object_key, sha256: sha(pdf) })).statusCode, 500);
  t.equal(await s.store.count('rwa_documents'), 0, 'no document');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${tok}/document-entitlements`, { grantee: 'role:viewer' })).statusCode, 500);
  t.equal(await s.store.count('rwa_document_entitlements'), 0, 'no entitlement');
});
