// A node's check of a batch member action (docs/platform/member-actions.md "Batch actions",
// threat-model.md claim 22): one fresh human proof approves an ordered list of intents (a payment's
// principal and fee transfers), its nonce committing to the list of their SHA-256 digests. The API
// forwards the list with the binding; each node recomputes the nonce from it and signs only an intent
// whose own digest is in it. What a malicious API or coordinator can do with the list (add, drop,
// reorder, swap an entry, send it for an intent outside it, strip it) is refused before a grant exists.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SignJWT, type JWTPayload } from 'jose';
import {
  MEMBER_ACTION_BATCH_MAX, memberActionBatchNonce, memberActionNonce, memberActionNonceFor, memberActionProblem, type MemberActionBinding,
} from '../../core/auth/member-action.ts';
import { MEMBER_CREDENTIAL_TYP } from '../../core/auth/member-credential.ts';
import { signParams } from '../../core/session/session-contract.ts';
import type { SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { memberOrganization, newBinding, now, refusal } from './member-authorizer-fixture.ts';
import { softwarePasskey } from '../support/software-passkey.ts';

const { request, authorizer: nodeAuthorizer } = memberOrganization('org_batches');
const digest = (req: SignRequestView) => sha256(req.intent);
const hex = (b: Uint8Array) => bytesToHex(b);

async function setup(t: Test) {
  const { authorizer, idp } = await nodeAuthorizer(t, 'RS256', 'op-1', 'bff-client');
  /** The provider's ID token for a batch action: its nonce over `b` (its own list), or `nonce` given. */
  const proof = (b: MemberActionBinding, claims: Record<string, unknown> = {}) => {
    const payload: JWTPayload = {
      iss: 'https://id.example', sub: 'member-7', aud: 'bff-client', iat: now - 20, exp: now + 3600, auth_time: now - 30,
      nonce: memberActionBatchNonce(b.actionId, b.salt, b.batch!.map(hex)), ...claims,
    };
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: 'op-1' }).sign(idp.privateKey);
  };
  return { authorizer, proof, idp };
}

t.test('the batch nonce: domain-separated from the one-intent nonce, bound to order, count, salt and action', async (t) => {
  const b = newBinding();
  const [d1, d2, d3] = [randomBytes(32), randomBytes(32), randomBytes(32)].map((x) => hex(x));
  const n12 = memberActionBatchNonce(b.actionId, b.salt, [d1!, d2!]);
  t.match(n12, /^[A-Za-z0-9_-]{43}$/, 'a 43-character base64url nonce');
  t.equal(memberActionBatchNonce(b.actionId, b.salt, [d1!, d2!]), n12, 'deterministic');
  t.not(memberActionBatchNonce(b.actionId, b.salt, [d2!, d1!]), n12, 'order matters');
  t.not(memberActionBatchNonce(b.actionId, b.salt, [d1!, d2!, d3!]), n12, 'an added intent changes it');
  t.not(memberActionBatchNonce(b.actionId, b.salt, [d1!]), memberActionNonce(b.actionId, b.salt, d1!), 'a batch of one is not the one-intent nonce');
  t.not(memberActionBatchNonce(newBinding().actionId, b.salt, [d1!, d2!]), n12, 'another action');
  t.not(memberActionBatchNonce(b.actionId, new Uint8Array(randomBytes(32)), [d1!, d2!]), n12, 'another salt');
  // The nonce a proof must carry for an intent: the batch's, for an intent of the batch, and none otherwise.
  const batch = { ...b, batch: [d1!, d2!].map((d) => Uint8Array.from(Buffer.from(d, 'hex'))) };
  t.equal(memberActionNonceFor(batch, d2!), n12);
  t.equal(memberActionNonceFor(batch, d2!.toUpperCase()), n12, 'hex case does not matter');
  t.equal(memberActionNonceFor(batch, d3!), undefined, 'an intent outside the batch has no nonce');
  t.equal(memberActionNonceFor(b, d3!), memberActionNonce(b.actionId, b.salt, d3!), 'no batch: the one-intent nonce');
  t.throws(() => memberActionBatchNonce(b.actionId, b.salt, []), 'an empty batch has no nonce');
  t.throws(() => memberActionBatchNonce(b.actionId, b.salt, Array.from({ length: MEMBER_ACTION_BATCH_MAX + 1 }, () => hex(randomBytes(32)))), 'nor one over the bound');
  // The binding's shape, as every node checks it.
  const bad: [string, MemberActionBinding][] = [
    ['an empty list', { ...b, batch: [] }],
    [`${MEMBER_ACTION_BATCH_MAX + 1} digests`, { ...b, batch: Array.from({ length: MEMBER_ACTION_BATCH_MAX + 1 }, () => new Uint8Array(randomBytes(32))) }],
    ['a 31-byte digest', { ...b, batch: [new Uint8Array(31)] }],
    ['a digest twice', { ...b, batch: [batch.batch[0]!, batch.batch[0]!] }],
  ];
  for (const [what, binding] of bad) t.ok(memberActionProblem(binding), what);
  t.equal(memberActionProblem(batch), undefined, 'a well-formed batch');
});

t.test('one proof for a batch signs each intent of it, and nothing else', async (t) => {
  const { authorizer, proof } = await setup(t);
  const [a, b, c] = [request(), request(), request()];
  const binding = { ...newBinding(), batch: [digest(a), digest(b)] };
  const token = await proof(binding);
  for (const [what, req] of [['the first', a], ['the second', b]] as const) {
    const grant = await authorizer.authorize({ ...req, endUserToken: token, memberAction: binding });
    t.equal(grant.intentHash, hex(digest(req)), `${what} intent of the batch is granted`);
  }
  t.match(await authorizer.authorize({ ...c, endUserToken: token, memberAction: binding }).catch((e: unknown) => e), refusal('member_action_mismatch'), 'an intent outside the batch is refused');
});

t.test('what a malicious API or coordinator can do with the list is refused by the node, before anything is signed', async (t) => {
  const { authorizer, proof } = await setup(t);
  const [a, b, c] = [request(), request(), request()];
  const binding = { ...newBinding(), batch: [digest(a), digest(b)] };
  const token = await proof(binding);
  const cases: [string, SignRequestView, string][] = [
    ['the proof sent for an intent outside the batch, the list unchanged', { ...c, endUserToken: token, memberAction: binding }, 'member_action_mismatch'],
    ['an intent added to the list', { ...c, endUserToken: token, memberAction: { ...binding, batch: [digest(a), digest(b), digest(c)] } }, 'member_action_mismatch'],
    ['an entry of the list swapped for another intent', { ...c, endUserToken: token, memberAction: { ...binding, batch: [digest(a), digest(c)] } }, 'member_action_mismatch'],
    ['an entry dropped from the list', { ...a, endUserToken: token, memberAction: { ...binding, batch: [digest(a)] } }, 'member_action_mismatch'],
    ['the list reordered', { ...a, endUserToken: token, memberAction: { ...binding, batch: [digest(b), digest(a)] } }, 'member_action_mismatch'],
    ['the list stripped (the one-intent nonce applies)', { ...a, endUserToken: token, memberAction: { actionId: binding.actionId, salt: binding.salt } }, 'member_action_mismatch'],
    ['an entry repeated', { ...a, endUserToken: token, memberAction: { ...binding, batch: [digest(a), digest(a)] } }, 'member_action_mismatch'],
    ['another salt', { ...a, endUserToken: token, memberAction: { ...binding, salt: new Uint8Array(randomBytes(32)) } }, 'member_action_mismatch'],
    ['a list over the bound', { ...a, endUserToken: token, memberAction: { ...binding, batch: [digest(a), ...Array.from({ length: MEMBER_ACTION_BATCH_MAX }, () => new Uint8Array(randomBytes(32)))] } }, 'member_action_mismatch'],
    // A one-intent proof for `a` cannot pass as a batch of one containing `a`: the tags differ.
    ['a one-intent proof dressed as a batch of one', {
      ...a, memberAction: { ...binding, batch: [digest(a)] },
      endUserToken: await proof(binding, { nonce: memberActionNonce(binding.actionId, binding.salt, hex(digest(a))) }),
    }, 'member_action_mismatch'],
  ];
  for (const [what, sent, code] of cases) {
    const err = await authorizer.authorize(sent).catch((e: unknown) => e);
    t.match(err, refusal(code), what);
    t.notOk((err as Error).message.includes(token.split('.')[2]!), `${what}: the refusal does not quote the token`);
  }
  t.ok(await authorizer.authorize({ ...a, endUserToken: token, memberAction: binding }), 'the honest request signs afterwards');
});

t.test('a passkey approves a batch the same way: its challenge is the batch nonce', async (t) => {
  const { authorizer, idp } = await nodeAuthorizer(t, 'ES256', 'id-1', 'bff-client');
  const pk = softwarePasskey({ rpId: 'bank.example', origin: 'https://app.bank.example' });
  const credential = await new SignJWT({ sub: 'member-7', aud: 'bff-client', iat: now - 60, exp: now + 86_400, cnf: { jwk: pk.jwk }, webauthn: { rp_id: 'bank.example', origins: ['https://app.bank.example'] } })
    .setProtectedHeader({ alg: 'ES256', kid: 'id-1', typ: MEMBER_CREDENTIAL_TYP }).sign(idp.privateKey);
  const [a, b, c] = [request(), request(), request()];
  const binding = { ...newBinding(), batch: [digest(a), digest(b)] };
  const assertion = pk.assert(memberActionBatchNonce(binding.actionId, binding.salt, binding.batch.map(hex)));
  for (const req of [a, b]) t.ok(await authorizer.authorize({ ...req, endUserToken: credential, memberAction: { ...binding, passkey: assertion } }), 'an intent of the batch');
  t.match(await authorizer.authorize({ ...c, endUserToken: credential, memberAction: { ...binding, passkey: assertion } }).catch((e: unknown) => e), refusal('member_action_mismatch'), 'an intent outside it');
  t.match(await authorizer.authorize({ ...c, endUserToken: credential, memberAction: { ...binding, batch: [digest(a), digest(c)], passkey: assertion } }).catch((e: unknown) => e), refusal('member_action_mismatch'), 'a swapped entry');
});

t.test('the sign parameters carry the list and refuse a malformed one before any session opens', async (t) => {
  const b = { ...newBinding(), batch: [new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))] };
  const base = { keyId: 'k', epoch: 0, path: [], scheme: 'ecdsa' as const, digests: [new Uint8Array(32)], intent: new Uint8Array(8), intentSignature: new Uint8Array(64), apiKeyId: 'a', template: new Uint8Array(1), endUserToken: 'x' };
  t.same(signParams.decode(signParams.encode({ ...base, memberAction: b })).memberAction, b, 'round trip');
  const bad: [string, unknown][] = [
    ['an empty list', []],
    ['a 33-byte digest', [new Uint8Array(33)]],
    ['hex digests', b.batch.map(hex)],
    [`${MEMBER_ACTION_BATCH_MAX + 1} digests`, Array.from({ length: MEMBER_ACTION_BATCH_MAX + 1 }, () => new Uint8Array(32))],
    ['not a list', new Uint8Array(32)],
  ];
  for (const [what, batch] of bad) t.throws(() => signParams.encode({ ...base, memberAction: { ...b, batch } as never }), { code: 'bad_params' }, what);
});
