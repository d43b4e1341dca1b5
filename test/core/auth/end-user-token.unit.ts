// Hosted-tier end-user tokens (core/auth/end-user-token.ts) with real JWTs made by jose: ES256 and EdDSA
// keys verify; every way a token can be wrong is refused with its reason; JWK Sets holding private or
// unusable keys are refused at registration.
import t from 'tap';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK } from 'jose';
import { EndUserTokenError, intentSha256, MAX_TOKEN_LIFETIME_S, validateJwks, verifyEndUserToken, type EndUserAuthConfig } from '../../../core/auth/end-user-token.ts';

const NOW = 1_800_000_000;
const AUDIENCE = 'https://wallet.example.test';
const INTENT = new TextEncoder().encode('custody-intent\0 stand-in bytes');
const OTHER_INTENT = new TextEncoder().encode('custody-intent\0 other bytes');

const es = await generateKeyPair('ES256', { extractable: true });
const ed = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
const esJwk: JWK = { ...(await exportJWK(es.publicKey)), kid: 'es-1', alg: 'ES256' };
const edJwk: JWK = { ...(await exportJWK(ed.publicKey)), kid: 'ed-1' };
const config: EndUserAuthConfig = { jwks: { keys: [esJwk, edJwk] }, audience: AUDIENCE };

interface TokenSpec {
  key?: CryptoKey | Uint8Array;
  alg?: string;
  kid?: string;
  sub?: string;
  aud?: string;
  intent?: Uint8Array | null;
  iat?: number;
  exp?: number;
}
function token(s: TokenSpec = {}): Promise<string> {
  const claims = s.intent === null ? {} : { intent_sha256: intentSha256(s.intent ?? INTENT) };
  const iat = s.iat ?? NOW - 10;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: s.alg ?? 'ES256', kid: s.kid ?? 'es-1' })
    .setSubject(s.sub ?? 'user-1')
    .setAudience(s.aud ?? AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(s.exp ?? iat + 300)
    .sign(s.key ?? es.privateKey);
}
const verify = (tok: string | undefined, subject: string | null = 'user-1', intent = INTENT, now = NOW) => verifyEndUserToken(config, tok, intent, subject, now);
const refused = (reason: EndUserTokenError['reason'], message: RegExp) => ({ name: 'EndUserTokenError', reason, message });

t.test('valid tokens verify: ES256 and EdDSA, bound subject or none', async (t) => {
  await t.resolves(verify(await token()));
  await t.resolves(verify(await token({ key: ed.privateKey, alg: 'EdDSA', kid: 'ed-1' })));
  await t.resolves(verify(await token({ sub: 'anyone' }), null), 'a vault without a bound subject takes any end user');
  await t.resolves(verify(await token({ iat: NOW, exp: NOW + MAX_TOKEN_LIFETIME_S })), `a lifetime of exactly ${MAX_TOKEN_LIFETIME_S} s`);
});

t.test('no token: end_user_token_required', async (t) => {
  await t.rejects(verify(undefined), refused('end_user_token_required', /needs an end-user token/));
  await t.rejects(verify(''), refused('end_user_token_required', /needs an end-user token/));
});

t.test('expired, beyond the 30 s of skew; within the skew it still verifies', async (t) => {
  await t.rejects(verify(await token({ iat: NOW - 400, exp: NOW - 31 })), refused('bad_end_user_token', /does not verify: .*"exp"/));
  await t.resolves(verify(await token({ iat: NOW - 400, exp: NOW - 29 })));
  await t.rejects(verify(await token({ iat: NOW + 120, exp: NOW + 300 })), refused('bad_end_user_token', /issued in the future/), 'issued in the future: the 900 s bound would not hold');
  await t.resolves(verify(await token({ iat: NOW + 29, exp: NOW + 300 })), 'within the skew');
});

t.test('wrong audience', async (t) => {
  await t.rejects(verify(await token({ aud: 'https://other.example.test' })), refused('bad_end_user_token', /"aud"/));
});

t.test('wrong subject: wrong_end_user', async (t) => {
  await t.rejects(verify(await token({ sub: 'user-2' })), refused('wrong_end_user', /another subject/));
});

t.test('wrong intent hash, or none: the token authorizes one intent only', async (t) => {
  await t.rejects(verify(await token({ intent: OTHER_INTENT })), refused('token_intent_mismatch', /another intent/));
  await t.rejects(verify(await token({ intent: null })), refused('bad_end_user_token', /intent_sha256/));
});

t.test(`lifetime over ${MAX_TOKEN_LIFETIME_S} s is refused`, async (t) => {
  await t.rejects(verify(await token({ iat: NOW - 10, exp: NOW - 10 + MAX_TOKEN_LIFETIME_S + 1 })), refused('bad_end_user_token', /lives longer than 900 s/));
});

t.test('unknown kid, or a key not in the set', async (t) => {
  await t.rejects(verify(await token({ kid: 'es-9' })), refused('bad_end_user_token', /does not verify/));
  const stranger = await generateKeyPair('ES256');
  await t.rejects(verify(await token({ key: stranger.privateKey })), refused('bad_end_user_token', /signature verification failed/));
  await t.rejects(verify(await token({ key: ed.privateKey, alg: 'EdDSA', kid: 'es-1' })), refused('bad_end_user_token', /does not verify/), 'an EdDSA token under the ES256 kid');
});

t.test('alg none and HS256 are refused', async (t) => {
  const unsecured = new UnsecuredJWT({ intent_sha256: intentSha256(INTENT) }).setSubject('user-1').setAudience(AUDIENCE).setIssuedAt(NOW - 10).setExpirationTime(NOW + 100).encode();
  await t.rejects(verify(unsecured), refused('bad_end_user_token', /does not verify/));
  // HS256 keyed with the public x coordinate: the classic confusion of an asymmetric key for a secret.
  const hs = await token({ alg: 'HS256', key: new Uint8Array(Buffer.from(esJwk.x!, 'base64url')) });
  await t.rejects(verify(hs), refused('bad_end_user_token', /does not verify/));
});

t.test('an over-long token is refused, and no message repeats the token', async (t) => {
  await t.rejects(verify('a'.repeat(16_385)), refused('bad_end_user_token', /too long/));
  const tok = await token({ aud: 'x' });
  const err = await verify(tok).catch((e: unknown) => e as Error);
  t.ok(err instanceof EndUserTokenError);
  t.notOk(err!.message.includes(tok), 'the token is not echoed');
});

t.test('validateJwks accepts public ES256, EdDSA and RSA keys', async (t) => {
  const rsa = await generateKeyPair('RS256', { extractable: true });
  t.equal(await validateJwks({ keys: [esJwk, edJwk, await exportJWK(rsa.publicKey)] }), undefined);
  t.equal(await validateJwks({ keys: [{ ...esJwk, alg: undefined }] }), undefined, 'alg may be left out');
});

t.test('validateJwks refuses private JWKs, bad kty, refused algs, unusable keys and bad shapes', async (t) => {
  t.match(await validateJwks({ keys: [await exportJWK(es.privateKey)] }), /keys\[0\] holds private key material/);
  t.match(await validateJwks({ keys: [esJwk, await exportJWK(ed.privateKey)] }), /keys\[1\] holds private key material/);
  t.match(await validateJwks({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }), /private key material/, 'a symmetric key is a secret');
  t.match(await validateJwks({ keys: [{ kty: 'DSA', y: 'AAAA' }] }), /kty must be EC, OKP or RSA/);
  t.match(await validateJwks({ keys: [{ ...esJwk, alg: 'HS256' }] }), /alg HS256 is not accepted/);
  t.match(await validateJwks({ keys: [{ ...esJwk, alg: 'none' }] }), /alg none is not accepted/);
  t.match(await validateJwks({ keys: [{ ...esJwk, x: Buffer.alloc(32, 1).toString('base64url') }] }), /not a usable ES256 key/);
  t.match(await validateJwks({ keys: [{ kty: 'OKP', crv: 'Ed25519' }] }), /jwks.keys\[0\].x is not a valid Ed25519 public key/);
  t.match(await validateJwks({ keys: [] }), /1 to 20 keys/);
  t.match(await validateJwks({ keys: Array.from({ length: 21 }, () => esJwk) }), /1 to 20 keys/);
  t.match(await validateJwks({ keys: [null] }), /keys\[0\] is not a JWK/);
  t.match(await validateJwks({ keys: [[esJwk]] }), /keys\[0\] is not a JWK/);
  t.match(await validateJwks(null), /1 to 20 keys/);
});
