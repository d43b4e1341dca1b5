// Account Center passkeys as a per-tenant opt-in (docs/end-user-auth.md "Account Center passkeys",
// threat-model.md claim 34): a member credential signed by the service's Account Center key counts at a
// node only for an organization whose customer-signed end-user-auth registration names that key and the
// Account Center's origin, only for passkeys on that origin, and only as a passkey credential (never as
// an ID token or an end-user token). A malicious API holding the service's key cannot give a tenant that
// did not opt in an Account Center passkey; an opt-in it forges is not a customer-signed entry.
import t, { type Test } from 'tap';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SignJWT, exportJWK, generateKeyPair, type JWTPayload } from 'jose';
import { memberActionNonce, type MemberActionBinding } from '../../core/auth/member-action.ts';
import { MEMBER_CREDENTIAL_TYP, accountCenterOptInProblem } from '../../core/auth/member-credential.ts';
import type { SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { memberOrganization, newBinding, now, refusal } from './member-authorizer-fixture.ts';
import { softwarePasskey } from '../support/software-passkey.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const AC_ORIGIN = 'https://api.custody.example';
const AC_RP = 'api.custody.example';
const AC_KID = 'account-center-1';

/** The service's Account Center key, as the API holds it, and the opt-in a customer registers for it. */
async function serviceKey() {
  const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: AC_KID, alg: 'EdDSA' };
  return { pair, optIn: { jwk, origin: AC_ORIGIN } };
}

async function setup(t: Test, org: string, optedIn: boolean) {
  const service = await serviceKey();
  const { request, authorizer: nodeAuthorizer } = memberOrganization(org);
  const node = await nodeAuthorizer(t, 'ES256', 'id-1', 'bff-client', optedIn ? { account_center: service.optIn } : {});
  const passkey = softwarePasskey({ rpId: AC_RP, origin: AC_ORIGIN });
  /** A member credential signed by the service's Account Center key (what a malicious API can make at will). */
  const byService = (claims: Record<string, unknown> = {}, pk = passkey) => {
    const payload: JWTPayload = { sub: 'member-7', aud: 'bff-client', iat: now - 60, exp: now + 86_400, cnf: { jwk: pk.jwk }, webauthn: { rp_id: AC_RP, origins: [AC_ORIGIN] }, ...claims };
    return new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', kid: AC_KID, typ: MEMBER_CREDENTIAL_TYP }).sign(service.pair.privateKey);
  };
  const nonceFor = (req: SignRequestView, b: MemberActionBinding) => memberActionNonce(b.actionId, b.salt, bytesToHex(sha256(req.intent)));
  /** A request approved by `passkey` on the Account Center, with `credential`. */
  const approved = async (credential: string, pk = passkey, answer: Parameters<typeof passkey.assert>[1] = {}) => {
    const req = request();
    const b = newBinding();
    return { ...req, endUserToken: credential, memberAction: { ...b, passkey: pk.assert(nonceFor(req, b), answer) } } satisfies SignRequestView;
  };
  return { ...node, service, passkey, byService, approved, request, nonceFor, org };
}

t.test('a tenant that did not opt in cannot be given an Account Center passkey by a malicious API', async (t) => {
  const s = await setup(t, 'org_no_optin', false);
  // Everything the service's key can make is refused: the node holds no key of the service for this organization.
  await t.rejects(s.authorizer.authorize(await s.approved(await s.byService())), refusal('bad_end_user_token'), 'a credential under the service\'s key');
  await t.rejects(s.authorizer.authorize(await s.approved(await s.byService({ webauthn: { rp_id: 'bank.example', origins: ['https://app.bank.example'] } }), s.passkey, { origin: 'https://app.bank.example', rpId: 'bank.example' })),
    refusal('bad_end_user_token'), 'also for a passkey on the customer\'s own origin');

  // The API can put an entry in the log it carries, but not one the customer signed: an opt-in signed by
  // any other key refuses the whole log, and the registry keeps the registration without the opt-in.
  const attacker = signer(s.org, sha256(new TextEncoder().encode('not the customer')));
  const forged = signedEntry(attacker, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [{ ...(await exportJWK(s.idp.publicKey)), kid: 'id-1', alg: 'ES256' }] }, audience: 'bff-client', account_center: s.service.optIn }, { created: 1_795_099_000 });
  await t.rejects(s.trust.apply(s.org, [forged]), { code: 'bad_trust_log' }, 'a forged opt-in is refused');
  t.notOk((await s.trust.state(s.org))?.endUser?.accountCenter, 'no opt-in on the node');
  await t.rejects(s.authorizer.authorize(await s.approved(await s.byService())), refusal('bad_end_user_token'), 'and the credential is still refused');
});

t.test('a tenant whose customer-signed registration names the opt-in: Account Center passkeys sign, on that origin only, until the opt-in ends', async (t) => {
  const s = await setup(t, 'org_optin', true);
  const req = await s.approved(await s.byService());
  t.equal((await s.authorizer.authorize(req)).intentHash, bytesToHex(sha256(req.intent)), 'granted for this intent');

  // The service's key vouches only for passkeys of its own page, and only as a passkey credential.
  const onCustomerOrigin = await s.byService({ webauthn: { rp_id: 'custody.example', origins: [AC_ORIGIN] } });
  await t.rejects(s.authorizer.authorize(await s.approved(onCustomerOrigin)), refusal('bad_end_user_token'), 'another RP ID than the Account Center\'s host');
  const customerOrigin = softwarePasskey({ rpId: 'bank.example', origin: 'https://app.bank.example' });
  await t.rejects(s.authorizer.authorize(await s.approved(await s.byService({ webauthn: { rp_id: 'bank.example', origins: ['https://app.bank.example'] } }, customerOrigin), customerOrigin)),
    refusal('bad_end_user_token'), 'a passkey on the customer\'s origin under the service\'s key');
  const twoOrigins = await s.byService({ webauthn: { rp_id: AC_RP, origins: [AC_ORIGIN, `https://x.${AC_RP}`] } });
  await t.rejects(s.authorizer.authorize(await s.approved(twoOrigins)), refusal('bad_end_user_token'), 'a second origin');
  await t.rejects(s.authorizer.authorize(await s.approved(await s.byService({ sub: 'member-8' }))), refusal('wrong_end_user'), 'another member than the vault\'s');

  // An ID-token member proof or an intent token under the service's key: verified under the customer's keys only.
  const plain = s.request();
  const b = newBinding();
  const idToken = await new SignJWT({ sub: 'member-7', aud: 'bff-client', iat: now - 5, auth_time: now - 5, exp: now + 300, nonce: s.nonceFor(plain, b) })
    .setProtectedHeader({ alg: 'EdDSA', kid: AC_KID }).sign(s.service.pair.privateKey);
  await t.rejects(s.authorizer.authorize({ ...plain, endUserToken: idToken, memberAction: b }),
    refusal('bad_end_user_token'), 'an ID-token member proof signed by the service');
  const intentToken = await new SignJWT({ sub: 'member-7', aud: 'bff-client', iat: now - 5, exp: now + 300, intent_sha256: bytesToHex(sha256(plain.intent)) }).setProtectedHeader({ alg: 'EdDSA', kid: AC_KID }).sign(s.service.pair.privateKey);
  await t.rejects(s.authorizer.authorize({ ...s.request(), endUserToken: intentToken }), refusal('bad_end_user_token'), 'an end-user token signed by the service');

  // A newer customer-signed registration without `account_center` ends the opt-in at once.
  await s.register({});
  t.notOk((await s.trust.state(s.org))?.endUser?.accountCenter, 'the opt-in is gone');
  await t.rejects(s.authorizer.authorize(await s.approved(await s.byService())), refusal('bad_end_user_token'), 'Account Center credentials stop counting');
});

t.test('an opt-in the node refuses to register', async (t) => {
  const jwks = { keys: [{ kid: 'id-1' }] };
  const { optIn } = await serviceKey();
  t.equal(accountCenterOptInProblem(optIn, jwks), undefined, 'a well-formed opt-in');
  const cases: [string, unknown, RegExp][] = [
    ['not an object', 'yes', /object/],
    ['an unknown member', { ...optIn, subjects: ['*'] }, /unknown members/],
    ['the kid of a customer key', { ...optIn, jwk: { ...optIn.jwk, kid: 'id-1' } }, /told apart/],
    ['private key material', { ...optIn, jwk: { ...optIn.jwk, d: optIn.jwk.x } }, /public key/],
    ['an RSA key', { ...optIn, jwk: { kty: 'RSA', n: 'AQAB', e: 'AQAB', kid: 'r' } }, /Ed25519|P-256/],
    ['another algorithm', { ...optIn, jwk: { ...optIn.jwk, alg: 'RS256' } }, /EdDSA or ES256/],
    ['an http origin', { ...optIn, origin: 'http://api.custody.example' }, /https/],
    ['a URL, not an origin', { ...optIn, origin: `${AC_ORIGIN}/account-center` }, /not an origin/],
  ];
  for (const [what, v, re] of cases) t.match(accountCenterOptInProblem(v, jwks), re, what);

  // The node applies no such entry: the whole log is refused and nothing is stored.
  const { request: _r, authorizer } = memberOrganization('org_bad_optin');
  await t.rejects(authorizer(t, 'ES256', 'id-1', 'bff-client', { account_center: { ...optIn, jwk: { ...optIn.jwk, kid: 'id-1' } } }), { code: 'bad_trust_log' });
});
