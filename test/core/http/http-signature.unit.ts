// RFC 9421 request signatures: the RFC's own Ed25519 example (B.2.6) verifies byte for byte, and our
// profile refuses every way a signature can be wrong. RFC 9530 Content-Digest matches the RFC example.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { signatureBase, signRequest, verifyRequest, SignatureError, type SignedRequest, type VerifyPolicy } from '../../../core/http/http-signature.ts';
import { contentDigest, verifyContentDigest } from '../../../core/http/content-digest.ts';

const text = readFileSync(new URL('../../../../shared/vectors/http/rfc9421-ed25519.txt', import.meta.url), 'utf8');
const grab = (prefix: string) => text.split('\n').findLast((l) => l.startsWith(prefix))!.slice(prefix.length).trim();
const jwk = JSON.parse(text.slice(text.indexOf('{\n  "kty"'), text.indexOf('}', text.indexOf('{\n  "kty"')) + 1)) as { x: string; d: string };
const pub = new Uint8Array(Buffer.from(jwk.x, 'base64url'));
const secret = new Uint8Array(Buffer.from(jwk.d, 'base64url'));

const rfcRequest: SignedRequest = {
  method: 'POST',
  url: 'http://example.com/foo?param=Value&Pet=dog',
  headers: {
    host: 'example.com',
    date: 'Tue, 20 Apr 2021 02:07:55 GMT',
    'content-type': 'application/json',
    'content-digest': grab('Content-Digest (sha-512, matches B.2):'),
    'content-length': '18',
    'signature-input': grab('Signature-Input:'),
    signature: grab('Signature:'),
  },
};

t.test('RFC 9421 B.2.6: the signature base and the Ed25519 signature verify', async (t) => {
  const created = 1618884473;
  const v = verifyRequest(rfcRequest, (k) => (k === 'test-key-ed25519' ? pub : undefined), created + 10, {
    requiredComponents: ['@method'], requiredParams: ['created', 'keyid'], maxValiditySeconds: 300, skewSeconds: 0,
  });
  t.equal(v.keyId, 'test-key-ed25519');
  t.equal(v.label, 'sig-b26');
  t.same(v.components, ['date', '@method', '@path', '@authority', 'content-type', 'content-length']);
  const start = text.indexOf('signature-base (no trailing LF):\n') + 'signature-base (no trailing LF):\n'.length;
  const base = text.slice(start, text.indexOf('\nSignature-Input: sig-b26', start));
  const { parseDictionary } = await import('structured-headers');
  const input = parseDictionary(grab('Signature-Input:')).get('sig-b26') as never;
  t.equal(signatureBase(rfcRequest, input), base, 'our signature base is the RFC\'s');
  t.ok(ed25519.getPublicKey(secret).every((b, i) => b === pub[i]), 'test key pair is consistent');
});

t.test('RFC 9530: content digests of the RFC body', async (t) => {
  const body = new TextEncoder().encode('{"hello": "world"}');
  t.equal(contentDigest(body, 'sha-512'), grab('Content-Digest (sha-512, matches B.2):'));
  t.equal(contentDigest(body), grab('Content-Digest (sha-256, RFC 9530 alt):'));
  t.ok(verifyContentDigest(contentDigest(body), body));
  t.notOk(verifyContentDigest(contentDigest(body), new TextEncoder().encode('{"hello": "World"}')), 'another body');
  t.notOk(verifyContentDigest('md5=:AAAA:', body), 'no accepted algorithm');
  t.notOk(verifyContentDigest('not a dictionary ((', body), 'malformed');
});

const profile: VerifyPolicy = {
  requiredComponents: ['@method', '@target-uri', 'content-digest'],
  requiredParams: ['created', 'expires', 'nonce', 'keyid'],
  maxValiditySeconds: 300,
  skewSeconds: 30,
};
const key = ed25519.utils.randomSecretKey();
const keyPub = ed25519.getPublicKey(key);
const now = 1_800_000_000;
const body = new TextEncoder().encode('{"chain":"evm-local"}');

function signed(over: Partial<Parameters<typeof signRequest>[1]> = {}, reqOver: Partial<SignedRequest> = {}): SignedRequest {
  const req: SignedRequest = { method: 'POST', url: 'https://api.example.test/v1/vaults?x=1', headers: { 'content-digest': contentDigest(body), 'content-type': 'application/json' }, ...reqOver };
  const h = signRequest(req, { keyId: 'key_1', secretKey: key, components: ['@method', '@target-uri', 'content-digest'], created: now, expires: now + 60, nonce: 'n0nce-0123456789ab', ...over });
  return { ...req, headers: { ...req.headers, ...h } };
}
const lookup = (k: string) => (k === 'key_1' ? keyPub : undefined);
const reason = (f: () => unknown) => {
  try {
    f();
    return 'verified';
  } catch (err) {
    return err instanceof SignatureError ? err.reason : String(err);
  }
};

t.test('our profile: a good signature verifies', async (t) => {
  const v = verifyRequest(signed(), lookup, now + 5, profile);
  t.match(v, { keyId: 'key_1', created: now, expires: now + 60, nonce: 'n0nce-0123456789ab' });
});

t.test('our profile refuses every kind of bad signature', async (t) => {
  const good = signed();
  const cases: [string, () => unknown, string][] = [
    ['no headers', () => verifyRequest({ ...good, headers: { 'content-digest': 'x' } }, lookup, now, profile), 'missing_signature'],
    ['unknown key', () => verifyRequest(signed({ keyId: 'key_9' }), lookup, now, profile), 'unknown_signing_key'],
    ['other method', () => verifyRequest({ ...good, method: 'PUT' }, lookup, now, profile), 'bad_signature'],
    ['other path', () => verifyRequest({ ...good, url: 'https://api.example.test/v1/api-keys?x=1' }, lookup, now, profile), 'bad_signature'],
    ['other query', () => verifyRequest({ ...good, url: 'https://api.example.test/v1/vaults?x=2' }, lookup, now, profile), 'bad_signature'],
    ['other digest', () => verifyRequest({ ...good, headers: { ...good.headers, 'content-digest': contentDigest(new Uint8Array([1])) } }, lookup, now, profile), 'bad_signature'],
    ['expired', () => verifyRequest(good, lookup, now + 60 + 31, profile), 'expired'],
    ['from the future', () => verifyRequest(good, lookup, now - 31, profile), 'not_yet_valid'],
    ['valid too long', () => verifyRequest(signed({ expires: now + 3600 }), lookup, now, profile), 'validity_too_long'],
    ['no nonce', () => verifyRequest(signed({ nonce: undefined }), lookup, now, profile), 'missing_parameter'],
    ['no expires', () => verifyRequest(signed({ expires: undefined }), lookup, now, profile), 'missing_parameter'],
    ['digest not covered', () => verifyRequest(signed({ components: ['@method', '@target-uri'] }), lookup, now, profile), 'missing_component'],
    ['an extra covered header that is present', () => verifyRequest(signed({ components: ['@method', '@target-uri', 'content-digest', 'x-missing'] }, { headers: { 'content-digest': contentDigest(body), 'x-missing': 'y' } }) as never, lookup, now, profile), 'verified'],
    ['signed by another key', () => verifyRequest(signed({ secretKey: ed25519.utils.randomSecretKey() }), lookup, now, profile), 'bad_signature'],
    ['garbage header', () => verifyRequest({ ...good, headers: { ...good.headers, signature: 'sig=((' } }, lookup, now, profile), 'malformed_signature'],
    ['two signatures', () => verifyRequest({ ...good, headers: { ...good.headers, 'signature-input': `${good.headers['signature-input']}, b=("@method");created=1;keyid="key_1"`, signature: `${good.headers.signature}, b=:AAAA:` } }, lookup, now, profile), 'malformed_signature'],
  ];
  for (const [what, f, want] of cases) t.equal(reason(f), want, what);
  // A covered header that is missing from the request being verified:
  const withHeader = signed({ components: ['@method', '@target-uri', 'content-digest', 'x-client'] }, { headers: { 'content-digest': contentDigest(body), 'x-client': 'sdk' } });
  const { ['x-client']: _drop, ...rest } = withHeader.headers;
  t.equal(reason(() => verifyRequest({ ...withHeader, headers: rest }, lookup, now, profile)), 'missing_component');
});

t.test('expiry is hard: the skew applies to a created ahead of the clock only', async (t) => {
  const good = signed(); // created = now, expires = now + 60
  t.equal(reason(() => verifyRequest(good, lookup, now + 60, profile)), 'verified', 'at expires');
  t.equal(reason(() => verifyRequest(good, lookup, now + 61, profile)), 'expired', '1 s after expires, whatever the skew');
  t.equal(reason(() => verifyRequest(good, lookup, now + 60 + profile.skewSeconds, profile)), 'expired', 'within the skew after expires');
  t.equal(reason(() => verifyRequest(good, lookup, now - profile.skewSeconds, profile)), 'verified', 'created up to the skew ahead of this clock');
  t.equal(reason(() => verifyRequest(good, lookup, now - profile.skewSeconds - 1, profile)), 'not_yet_valid', 'created further ahead');
  // Without expires (a profile that does not require it), maxValiditySeconds after created is the end.
  const noExpiry = { ...profile, requiredParams: ['created', 'nonce', 'keyid'] };
  const open = signed({ expires: undefined });
  t.equal(reason(() => verifyRequest(open, lookup, now + 300, noExpiry)), 'verified');
  t.equal(reason(() => verifyRequest(open, lookup, now + 301, noExpiry)), 'expired', 'no skew added to the implied window either');
});
