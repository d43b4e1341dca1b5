// A node's check of a member-action proof (docs/platform/member-actions.md, threat-model.md claim 20):
// what a malicious API or coordinator can send beside an intent, and what an honest node does with it.
// The proof is the end user's OIDC ID token, signed by the key the organization registered for end-user
// auth; its nonce must be the one the action binding (id, salt) and the intent being signed give, its
// iat and auth_time fresh, its subject the vault's. Every refusal happens before a grant exists, so
// nothing is signed and the intent stays unused.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SignJWT, generateKeyPair, type JWTPayload } from 'jose';
import { memberActionNonce, MEMBER_PROOF_MAX_AGE_S, type MemberActionBinding } from '../../core/auth/member-action.ts';
import { signParams } from '../../core/session/session-contract.ts';
import type { SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { memberOrganization, newBinding, now, refusal } from './member-authorizer-fixture.ts';

const { request, authorizer: nodeAuthorizer } = memberOrganization('org_members');

async function setup(t: Test) {
  // The organization's end-user auth: the identity provider's key, and the OIDC client id as audience.
  const { authorizer, idp } = await nodeAuthorizer(t, 'RS256', 'op-1', 'bff-client');
  /** An ID token as the provider issues it for a member action; `claims` overrides or (undefined) removes. */
  const proof = (req: SignRequestView, b: MemberActionBinding, claims: Record<string, unknown> = {}, key = idp.privateKey) => {
    const payload: JWTPayload = {
      iss: 'https://id.example', sub: 'member-7', aud: 'bff-client', iat: now - 20, exp: now + 3600, auth_time: now - 30,
      nonce: memberActionNonce(b.actionId, b.salt, bytesToHex(sha256(req.intent))), ...claims,
    };
    for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: 'op-1' }).sign(key);
  };
  return { authorizer, proof, idp };
}

t.test('a fresh proof whose nonce commits to the binding and this intent signs; an hour-long ID token is fine', async (t) => {
  const { authorizer, proof } = await setup(t);
  const req = request();
  const b = newBinding();
  const grant = await authorizer.authorize({ ...req, endUserToken: await proof(req, b), memberAction: b });
  t.equal(grant.intentHash, bytesToHex(sha256(req.intent)));
  // At the edge of the freshness bound (plus the 30 s skew), and with no bound subject any member counts.
  const edge = request();
  await authorizer.authorize({ ...edge, endUserToken: await proof(edge, b, { iat: now - MEMBER_PROOF_MAX_AGE_S, auth_time: now - MEMBER_PROOF_MAX_AGE_S - 29 }), memberAction: b });
  const unbound = request({ endUser: { required: true } });
  await authorizer.authorize({ ...unbound, endUserToken: await proof(unbound, b, { sub: 'someone-else' }), memberAction: b });
});

t.test('what a malicious API or coordinator can send is refused by the node, with its code, before anything is signed', async (t) => {
  const { authorizer, proof } = await setup(t);
  const req = request();
  const b = newBinding();
  const good = await proof(req, b);
  const cases: [string, () => Promise<SignRequestView>, string][] = [
    ['the proof of another intent', async () => ({ ...req, endUserToken: await proof(request(), b), memberAction: b }), 'member_action_mismatch'],
    ['a changed salt', async () => ({ ...req, endUserToken: good, memberAction: { ...b, salt: new Uint8Array(randomBytes(32)) } }), 'member_action_mismatch'],
    ['a changed action id', async () => ({ ...req, endUserToken: good, memberAction: { ...b, actionId: newBinding().actionId } }), 'member_action_mismatch'],
    ['a stale auth_time', async () => ({ ...req, endUserToken: await proof(req, b, { auth_time: now - MEMBER_PROOF_MAX_AGE_S - 31 }), memberAction: b }), 'member_proof_stale'],
    ['a stale iat', async () => ({ ...req, endUserToken: await proof(req, b, { iat: now - MEMBER_PROOF_MAX_AGE_S - 31, auth_time: now - 40 }), memberAction: b }), 'member_proof_stale'],
    ['an auth_time in the future', async () => ({ ...req, endUserToken: await proof(req, b, { auth_time: now + 120 }), memberAction: b }), 'member_proof_stale'],
    ['an iat in the future', async () => ({ ...req, endUserToken: await proof(req, b, { iat: now + 120 }), memberAction: b }), 'member_proof_stale'],
    ['another subject for a bound vault', async () => ({ ...req, endUserToken: await proof(req, b, { sub: 'member-8' }), memberAction: b }), 'wrong_end_user'],
    ['a token with no nonce', async () => ({ ...req, endUserToken: await proof(req, b, { nonce: undefined }), memberAction: b }), 'bad_end_user_token'],
    ['a token with no auth_time', async () => ({ ...req, endUserToken: await proof(req, b, { auth_time: undefined }), memberAction: b }), 'bad_end_user_token'],
    ['an intent_sha256 token paired with a binding', async () => ({ ...req, endUserToken: await proof(req, b, { nonce: undefined, intent_sha256: bytesToHex(sha256(req.intent)) }), memberAction: b }), 'bad_end_user_token'],
    ['an intent_sha256 token that also carries the right nonce', async () => ({ ...req, endUserToken: await proof(req, b, { intent_sha256: bytesToHex(sha256(req.intent)) }), memberAction: b }), 'member_action_mismatch'],
    ['a member proof without its binding (the intent_sha256 rule applies)', async () => ({ ...req, endUserToken: good }), 'bad_end_user_token'],
    ['an expired ID token', async () => ({ ...req, endUserToken: await proof(req, b, { iat: now - 100, exp: now - 31 }), memberAction: b }), 'bad_end_user_token'],
    ['another audience (not the registered client id)', async () => ({ ...req, endUserToken: await proof(req, b, { aud: 'other-client' }), memberAction: b }), 'bad_end_user_token'],
    ['signed by a key the organization did not register (one the API found)', async () => ({ ...req, endUserToken: await proof(req, b, {}, (await generateKeyPair('RS256')).privateKey), memberAction: b }), 'bad_end_user_token'],
    ['a binding whose salt is 31 bytes', async () => ({ ...req, endUserToken: good, memberAction: { ...b, salt: b.salt.slice(1) } }), 'member_action_mismatch'],
    ['a binding whose id is malformed', async () => ({ ...req, endUserToken: good, memberAction: { ...b, actionId: 'mac_short' } }), 'member_action_mismatch'],
    ['a binding for a key that needs no end-user authorization', async () => ({ ...request({ endUser: { required: false } }), endUserToken: good, memberAction: b }), 'member_action_mismatch'],
  ];
  for (const [what, make, code] of cases) {
    const sent = await make();
    const err = await authorizer.authorize(sent).catch((e: unknown) => e);
    t.match(err, refusal(code), what);
    if (sent.endUserToken) t.notOk((err as Error).message.includes(sent.endUserToken.split('.')[2]!), `${what}: the refusal does not quote the token`);
  }
  // The refusals consumed nothing: the genuine proof for this intent still signs.
  t.ok(await authorizer.authorize({ ...req, endUserToken: good, memberAction: b }), 'the honest request signs afterwards');
});

t.test('the sign parameters carry the binding and refuse a malformed one before any session opens', async (t) => {
  const b = newBinding();
  const base = { keyId: 'k', epoch: 0, path: [], scheme: 'ecdsa' as const, digests: [new Uint8Array(32)], intent: new Uint8Array(8), intentSignature: new Uint8Array(64), apiKeyId: 'a', template: new Uint8Array(1), endUserToken: 'x' };
  const decoded = signParams.decode(signParams.encode({ ...base, memberAction: b }));
  t.same(decoded.memberAction, b, 'round trip');
  t.equal(signParams.decode(signParams.encode(base)).memberAction, undefined, 'absent stays absent');
  const bad: [string, unknown][] = [
    ['a short salt', { ...b, salt: new Uint8Array(31) }],
    ['a hex salt', { ...b, salt: bytesToHex(b.salt) }],
    ['a malformed id', { ...b, actionId: 'mac_!!' }],
    ['an id of another prefix', { ...b, actionId: `txn_${b.actionId.slice(4)}` }],
    ['an extra field', { ...b, subject: 'member-7' }],
    ['no salt', { actionId: b.actionId }],
  ];
  for (const [what, memberAction] of bad) t.throws(() => signParams.encode({ ...base, memberAction } as never), { code: 'bad_params' }, what);
});
