// A node's check of a passkey member-action proof (docs/platform/member-actions.md "Passkey proofs",
// threat-model.md claim 21): a WebAuthn assertion whose challenge is the action's nonce, by a passkey a
// member credential names, the credential a JWT under the organization's registered end-user JWKS.
// The assertions here come from a software authenticator that writes the W3C WebAuthn formats
// (test/support/software-passkey.ts); the verifier is @simplewebauthn/server, written against the same
// specification. Every refusal happens before a grant exists, so nothing is signed.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { SignJWT, generateKeyPair, type JWTPayload } from 'jose';
import { memberActionNonce, type MemberActionBinding } from '../../core/auth/member-action.ts';
import { MAX_CREDENTIAL_LIFETIME_S, MEMBER_CREDENTIAL_TYP } from '../../core/auth/member-credential.ts';
import type { PasskeyAssertion } from '../../core/session/member-action-binding.ts';
import { signParams } from '../../core/session/session-contract.ts';
import type { SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { memberOrganization, newBinding, now, refusal } from './member-authorizer-fixture.ts';
import { softwarePasskey } from '../support/software-passkey.ts';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
const { request, authorizer: nodeAuthorizer } = memberOrganization('org_passkeys');
const RP = 'bank.example';
const ORIGIN = 'https://app.bank.example';
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');

const passkey = (kind: 'p256' | 'ed25519' = 'p256') => softwarePasskey({ rpId: RP, origin: ORIGIN }, kind);

async function setup(t: Test) {
  // The organization's end-user auth: its identity key, and the audience its credentials name.
  const { authorizer, idp } = await nodeAuthorizer(t, 'ES256', 'id-1', 'bff-client');
  /** A member credential as the customer signs it; `claims` overrides or (undefined) removes. */
  const credential = (pk: ReturnType<typeof passkey>, claims: Record<string, unknown> = {}, opts: { key?: PrivateKey; typ?: string | undefined } = {}) => {
    const payload: JWTPayload = { sub: 'member-7', aud: 'bff-client', iat: now - 86_400, exp: now + 86_400 * 30, cnf: { jwk: pk.jwk }, webauthn: { rp_id: RP, origins: [ORIGIN] }, ...claims };
    for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
    const typ = 'typ' in opts ? opts.typ : MEMBER_CREDENTIAL_TYP;
    return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: 'id-1', ...(typ ? { typ } : {}) }).sign(opts.key ?? idp.privateKey);
  };
  const nonceFor = (req: SignRequestView, b: MemberActionBinding) => memberActionNonce(b.actionId, b.salt, bytesToHex(sha256(req.intent)));
  return { authorizer, credential, nonceFor, idp };
}

t.test('a passkey assertion over the action nonce, by the passkey a member credential names, signs (P-256 and Ed25519)', async (t) => {
  const { authorizer, credential, nonceFor } = await setup(t);
  for (const kind of ['p256', 'ed25519'] as const) {
    const pk = passkey(kind);
    const req = request();
    const b = newBinding();
    const grant = await authorizer.authorize({ ...req, endUserToken: await credential(pk), memberAction: { ...b, passkey: pk.assert(nonceFor(req, b)) } });
    t.equal(grant.intentHash, bytesToHex(sha256(req.intent)), `${kind}: granted for this intent`);
  }
  // A vault bound to no subject takes any member's credential; a second origin of the credential works.
  const pk = passkey();
  const req = request({ endUser: { required: true } });
  const b = newBinding();
  const cred = await credential(pk, { sub: 'someone-else', webauthn: { rp_id: RP, origins: [ORIGIN, 'https://bank.example'] } });
  t.ok(await authorizer.authorize({ ...req, endUserToken: cred, memberAction: { ...b, passkey: pk.assert(nonceFor(req, b), { origin: 'https://bank.example' }) } }), 'unbound vault, second origin');
});

t.test('what a malicious API or coordinator can send beside a passkey proof is refused with its code', async (t) => {
  const { authorizer, credential, nonceFor, idp } = await setup(t);
  const pk = passkey();
  const req = request();
  const b = newBinding();
  const nonce = nonceFor(req, b);
  const good = await credential(pk);
  const goodAssertion = pk.assert(nonce);
  const other = passkey();
  const withPasskey = (token: string, a: PasskeyAssertion, binding = b): SignRequestView => ({ ...req, endUserToken: token, memberAction: { ...binding, passkey: a } });
  const cases: [string, () => Promise<SignRequestView>, string][] = [
    ['the assertion of another intent', async () => withPasskey(good, pk.assert(nonceFor(request(), b))), 'member_action_mismatch'],
    ['a changed salt', async () => withPasskey(good, goodAssertion, { ...b, salt: new Uint8Array(randomBytes(32)) }), 'member_action_mismatch'],
    ['a changed action id', async () => withPasskey(good, goodAssertion, { ...b, actionId: newBinding().actionId }), 'member_action_mismatch'],
    ['an origin the credential does not name', async () => withPasskey(good, pk.assert(nonce, { origin: 'https://api.custody.example' })), 'bad_end_user_token'],
    ['another RP ID', async () => withPasskey(good, pk.assert(nonce, { rpId: 'custody.example' })), 'bad_end_user_token'],
    ['no user verification (UV flag clear)', async () => withPasskey(good, pk.assert(nonce, { flags: 0x01 })), 'bad_end_user_token'],
    ['no user presence (UP flag clear)', async () => withPasskey(good, pk.assert(nonce, { flags: 0x04 })), 'bad_end_user_token'],
    ['a registration answer, not an assertion', async () => withPasskey(good, pk.assert(nonce, { type: 'webauthn.create' })), 'bad_end_user_token'],
    ['an assertion made in a cross-origin frame', async () => withPasskey(good, pk.assert(nonce, { crossOrigin: true })), 'bad_end_user_token'],
    ['a top origin (embedded in another site)', async () => withPasskey(good, pk.assert(nonce, { extra: { topOrigin: 'https://evil.example' } })), 'bad_end_user_token'],
    ['a signature by another key (a passkey the API made) under the member\'s credential', async () => withPasskey(good, { ...other.assert(nonce), credentialId: pk.id }), 'bad_end_user_token'],
    ['the API\'s own passkey with its own credential, under a key the organization did not register', async () => withPasskey(await credential(other, {}, { key: (await generateKeyPair('ES256')).privateKey }), other.assert(nonce)), 'bad_end_user_token'],
    ['an assertion by another passkey than the credential names', async () => withPasskey(good, other.assert(nonce)), 'bad_end_user_token'],
    ['a credential for another member of a bound vault', async () => withPasskey(await credential(pk, { sub: 'member-8' }), goodAssertion), 'wrong_end_user'],
    ['an expired credential', async () => withPasskey(await credential(pk, { iat: now - 86_400 * 30, exp: now - 60 }), goodAssertion), 'bad_end_user_token'],
    ['a credential issued in the future', async () => withPasskey(await credential(pk, { iat: now + 3600, exp: now + 7200 }), goodAssertion), 'bad_end_user_token'],
    ['a credential living longer than 400 days', async () => withPasskey(await credential(pk, { iat: now - 10, exp: now - 10 + MAX_CREDENTIAL_LIFETIME_S + 1 }), goodAssertion), 'bad_end_user_token'],
    ['a credential for another audience', async () => withPasskey(await credential(pk, { aud: 'other-client' }), goodAssertion), 'bad_end_user_token'],
    ['a credential without its typ (a plain JWT)', async () => withPasskey(await credential(pk, {}, { typ: undefined }), goodAssertion), 'bad_end_user_token'],
    ['an ID token in place of the credential', async () => withPasskey(await new SignJWT({ sub: 'member-7', aud: 'bff-client', iat: now - 5, exp: now + 600, auth_time: now - 5, nonce }).setProtectedHeader({ alg: 'ES256', kid: 'id-1' }).sign(idp.privateKey), goodAssertion), 'bad_end_user_token'],
    ['a credential whose key holds private material', async () => withPasskey(await credential(pk, { cnf: { jwk: { ...pk.jwk, d: b64(new Uint8Array(32).fill(1)) } } }), goodAssertion), 'bad_end_user_token'],
    ['a credential whose P-256 key is off the curve', async () => withPasskey(await credential(pk, { cnf: { jwk: { ...pk.jwk, y: b64(new Uint8Array(32).fill(3)) } } }), goodAssertion), 'bad_end_user_token'],
    ['a credential whose origin is not on its RP ID', async () => withPasskey(await credential(pk, { webauthn: { rp_id: RP, origins: ['https://evil.example'] } }), pk.assert(nonce, { origin: 'https://evil.example' })), 'bad_end_user_token'],
    ['a credential naming a plain-http origin', async () => withPasskey(await credential(pk, { webauthn: { rp_id: RP, origins: ['http://app.bank.example'] } }), pk.assert(nonce, { origin: 'http://app.bank.example' })), 'bad_end_user_token'],
    ['a credential without its credential id', async () => withPasskey(await credential(pk, { cnf: { jwk: { ...pk.jwk, kid: undefined } } }), goodAssertion), 'bad_end_user_token'],
    ['authenticator data shorter than 37 bytes', async () => withPasskey(good, { ...goodAssertion, authenticatorData: goodAssertion.authenticatorData.slice(0, 36) }), 'bad_end_user_token'],
    ['client data that is not JSON', async () => withPasskey(good, { ...goodAssertion, clientDataJson: utf8ToBytes('{not json') }), 'bad_end_user_token'],
    ['the credential sent as an ID-token proof (no passkey in the binding)', async () => ({ ...req, endUserToken: good, memberAction: b }), 'bad_end_user_token'],
  ];
  for (const [what, make, code] of cases) {
    const sent = await make();
    const err = await authorizer.authorize(sent).catch((e: unknown) => e);
    t.match(err, refusal(code), what);
    t.notOk((err as Error).message.includes(sent.endUserToken.split('.')[2]!), `${what}: the refusal does not quote the credential`);
    t.notOk((err as Error).message.includes(nonce), `${what}: nor the nonce`);
  }
  // The refusals consumed nothing: the genuine proof for this intent still signs.
  t.ok(await authorizer.authorize(withPasskey(good, goodAssertion)), 'the honest request signs afterwards');
});

t.test('the sign parameters carry a passkey assertion and refuse a malformed one before any session opens', async (t) => {
  const pk = passkey();
  const b = { ...newBinding(), passkey: pk.assert('x') };
  const base = { keyId: 'k', epoch: 0, path: [], scheme: 'ecdsa' as const, digests: [new Uint8Array(32)], intent: new Uint8Array(8), intentSignature: new Uint8Array(64), apiKeyId: 'a', template: new Uint8Array(1), endUserToken: 'x' };
  t.same(signParams.decode(signParams.encode({ ...base, memberAction: b })).memberAction, b, 'round trip');
  const bad: [string, unknown][] = [
    ['authenticator data of 36 bytes', { ...b.passkey, authenticatorData: new Uint8Array(36) }],
    ['a signature of 513 bytes', { ...b.passkey, signature: new Uint8Array(513) }],
    ['an empty credential id', { ...b.passkey, credentialId: new Uint8Array(0) }],
    ['client data as text', { ...b.passkey, clientDataJson: '{}' }],
    ['an extra field', { ...b.passkey, userHandle: new Uint8Array(4) }],
    ['a missing signature', { ...b.passkey, signature: undefined }],
  ];
  for (const [what, passkeyValue] of bad) {
    t.throws(() => signParams.encode({ ...base, memberAction: { ...b, passkey: passkeyValue as PasskeyAssertion } }), { code: 'bad_params' }, what);
  }
});
