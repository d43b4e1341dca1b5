// Passkey member actions through the API (docs/platform/member-actions.md "Passkey proofs"): a Hosted
// Auth member (the sandbox demo persona's session) begins an action for one exact EVM intent of a hosted
// vault bound to it, answers the action's nonce with its passkey (a software authenticator writing the
// WebAuthn formats), and the customer's member credential, signed with the SDK under the key of its
// end-user-auth registration, vouches for that passkey. The API runs the nodes' check, opens a signing
// session, and the vault API forwards credential and assertion to the nodes' job. Every refusal changes
// nothing.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { exportJWK, generateKeyPair } from 'jose';
import { walletApp } from '../wallets/wallet-app.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../../core/intents/evm-fields.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import { TX_JOBS } from '../../../api/transactions/collections.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { signMemberCredential, passkeyAssertionBody } from '../../../api/sdk/member-credential.ts';
import { softwarePasskey } from '../../support/software-passkey.ts';
import type { PasskeyAssertion } from '../../../core/session/member-action-binding.ts';

const SITE = { rpId: 'bank.example', origin: 'https://app.bank.example' };
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
/** What a browser's PublicKeyCredential.toJSON() gives for an assertion. */
const browserJson = (a: PasskeyAssertion) => ({ id: b64(a.credentialId), rawId: b64(a.credentialId), type: 'public-key', response: { authenticatorData: b64(a.authenticatorData), clientDataJSON: b64(a.clientDataJson), signature: b64(a.signature), userHandle: null } });

async function setup(t: Test) {
  const s = await walletApp(t);
  // The customer's own identity key, registered for end-user auth: it signs member credentials.
  const idKey = await generateKeyPair('ES256', { extractable: true });
  const reg = await s.signed('PUT', '/v1/config/end-user-auth', { jwks: { keys: [{ ...(await exportJWK(idKey.publicKey)), kid: 'members-1', alg: 'ES256' }] }, audience: 'acme-members' });
  if (reg.statusCode !== 200) throw new Error(`end-user auth: ${reg.body}`);
  // A Hosted Auth application of Acme's sandbox, its BFF key, and the demo persona's session.
  const origin = 'http://127.0.0.1:9';
  for (const [url, body] of [['/v1/tenant/member-auth/allowed-origins', { origin }], ['/v1/tenant/member-auth/redirect-urls', { url: `${origin}/callback` }]] as const) {
    const r = await s.bearer('POST', url, body);
    if (r.statusCode !== 201) throw new Error(`${url}: ${r.body}`);
  }
  const bffKey = await s.platform.tenancy.createKey(s.acme.sandbox.id, 'member_auth', { label: 'bff' });
  const made = await s.bearer('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'open', origin, result_callback_url: `${origin}/callback`, bff_key_id: bffKey.key.id });
  if (made.statusCode !== 201) throw new Error(`hosted application: ${made.body}`);
  const app = made.json() as { publishable_key: string };
  const bff = (method: 'GET' | 'POST', url: string, body: unknown, session?: string) =>
    s.bearer(method, url, body, bffKey.token, { 'x-svc-publishable-key': app.publishable_key, ...(session ? { 'x-member-session-id': session } : {}) });
  const demo = await bff('POST', '/v1/member-auth/hosted/authorizations/sandbox-demo', {});
  if (demo.statusCode !== 201) throw new Error(`demo: ${demo.body}`);
  const session = demo.json().session_id as string;
  const member = demo.json().member.id as string;

  const hostedWallet = async (subject?: string) => {
    const v = await s.vaults.createVault(s.acme.org, { tier: 'hosted', ...(subject ? { end_user_subject: subject } : {}) });
    const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) };
    await s.store.batch([s.vaults.vaultOp(active)]);
    return s.wallet(s.acme.org, active.id);
  };
  const wallet = await hostedWallet(member);
  let seq = 0;
  const intent = (w = wallet) => {
    const bytes = encodeIntent(evmIntentFromFields({
      organization: s.acme.org, walletId: w.id, chainId: 31337n, nonce: BigInt(seq), from: w.address, to: '0x00000000000000000000000000000000000a11ce', amount: '1000',
      idempotencyKey: `pk-${process.pid}-${++seq}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    }));
    return { bytes, b64: Buffer.from(bytes).toString('base64'), hex: bytesToHex(bytes), key: `pk-${process.pid}-${seq}`, sig: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  };
  const passkey = softwarePasskey(SITE);
  /** The customer vouches for `pk` as `subject`'s passkey (with another key: a credential nobody registered). */
  const credential = async (pk = passkey, subject = member, key = idKey.privateKey) =>
    signMemberCredential({ key, kid: 'members-1', alg: 'ES256', audience: 'acme-members', subject, credentialId: pk.id, publicKey: pk.jwk, rpId: SITE.rpId, origins: [SITE.origin] });
  const begin = (i = intent(), w = wallet, sess = session) => bff('POST', '/v1/member-actions', { kind: 'transaction.sign', wallet_id: w.id, intent: i.b64 }, sess);
  const complete = (actionId: string, cred: string, a: PasskeyAssertion, sess = session) =>
    bff('POST', '/v1/member-actions/passkey/complete', { action_id: actionId, credential: cred, assertion: passkeyAssertionBody(browserJson(a)) }, sess);
  const submit = (i: ReturnType<typeof intent>, extra: Record<string, unknown>, w = wallet) =>
    s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: i.hex, idempotency_key: i.key, intent_signature: i.sig, ...extra });
  const snapshot = async () => {
    const out: unknown[] = [];
    for (const c of [ACTION_COLLECTIONS.actions.name, ACTION_COLLECTIONS.signing.name, 'audit_log', 'transactions']) for await (const r of s.store.all(c)) out.push(r);
    return JSON.stringify(out);
  };
  return { ...s, bff, session, member, wallet, hostedWallet, intent, passkey, credential, begin, complete, submit, snapshot };
}

t.test('a Hosted Auth member approves with its passkey; the vault API forwards credential and assertion to the nodes\' job', async (t) => {
  const h = await setup(t);
  const i = h.intent();
  const b = await h.begin(i);
  t.equal(b.statusCode, 201, b.body);
  const begun = b.json() as { id: string; proof: Record<string, unknown> };
  t.same(Object.keys(begun.proof), ['nonce'], 'a hosted application\'s action asks for no OpenID parameters');
  const nonce = begun.proof['nonce'] as string;
  const cred = await h.credential();
  const external = await h.bff('POST', '/v1/member-actions/external/complete', { action_id: begun.id, id_token: cred }, h.session);
  t.match({ status: external.statusCode, code: external.json().code }, { status: 403, code: 'forbidden' }, 'a hosted member has no external proof');

  const c = await h.complete(begun.id, cred, h.passkey.assert(nonce));
  t.equal(c.statusCode, 200, c.body);
  const done = c.json() as { signing_session: { id: string; expires_at: string } };
  t.match(done, { id: begun.id, status: 'completed', signing_session: { id: /^mas_[A-Za-z0-9_-]{43}$/ } });
  t.notOk(c.body.includes(cred.split('.')[2]!), 'the answer carries no part of the credential');
  const record = (await ACTION_COLLECTIONS.signing.in(h.store).get(bytesToHex(sha256(new TextEncoder().encode(done.signing_session.id)))))!;
  t.equal(record.proof_kind, 'passkey');
  t.notOk(record.sealed_proof!.includes(cred.split('.')[1]!), 'the proof is sealed at rest');
  const again = await h.complete(begun.id, cred, h.passkey.assert(nonce));
  t.match({ status: again.statusCode, code: again.json().code }, { status: 409, code: 'member_action_not_pending' }, 'an action completes once');

  const tx = await h.submit(i, { member_signing_session: done.signing_session.id });
  t.equal(tx.statusCode, 202, tx.body);
  const job = (await TX_JOBS.in(h.store).get(tx.json().id))!;
  t.equal(job.end_user_token, cred, 'the job holds the member credential until the signature');
  t.equal(job.member_action!.action_id, begun.id);
  t.equal(job.member_action!.passkey!.credential_id, bytesToHex(h.passkey.id), 'and the assertion the nodes check');
  t.equal((await ACTION_COLLECTIONS.actions.in(h.store).get(begun.id))!.status, 'used');
  const reuse = await h.submit(h.intent(), { member_signing_session: done.signing_session.id });
  t.match({ status: reuse.statusCode, code: reuse.json().code }, { status: 409, code: 'signing_session_used' }, 'the session is used once');
});

t.test('what the API refuses at completion, each with its code, changing nothing', async (t) => {
  const h = await setup(t);
  const i = h.intent();
  const begun = (await h.begin(i)).json() as { id: string; proof: { nonce: string } };
  const nonce = begun.proof.nonce;
  const cred = await h.credential();
  const other = softwarePasskey(SITE);
  const before = await h.snapshot();
  const cases: [string, () => Promise<Awaited<ReturnType<typeof h.complete>>>, number, string?, string?][] = [
    ['an assertion over another action\'s nonce', async () => h.complete(begun.id, cred, h.passkey.assert((await h.begin()).json().proof.nonce)), 403, 'member_proof_not_signable', 'member_action_mismatch'],
    ['another passkey under the member\'s credential', async () => h.complete(begun.id, cred, { ...other.assert(nonce), credentialId: h.passkey.id }), 403, 'member_proof_not_signable', 'bad_end_user_token'],
    ['a credential signed by a key the customer did not register', async () => h.complete(begun.id, await h.credential(other, h.member, (await generateKeyPair('ES256')).privateKey), other.assert(nonce)), 403, 'member_proof_not_signable', 'bad_end_user_token'],
    ['a credential for another subject (the vault is bound)', async () => h.complete(begun.id, await h.credential(h.passkey, 'hsub_00000000000000000000000000'), h.passkey.assert(nonce)), 403, 'member_proof_not_signable', 'wrong_end_user'],
    ['an assertion without user verification', async () => h.complete(begun.id, cred, h.passkey.assert(nonce, { flags: 0x01 })), 403, 'member_proof_not_signable', 'bad_end_user_token'],
    ['an assertion from another origin', async () => h.complete(begun.id, cred, h.passkey.assert(nonce, { origin: 'https://bank.example.evil.test' })), 403, 'member_proof_not_signable', 'bad_end_user_token'],
    ['an id that is not canonical base64url', async () => h.bff('POST', '/v1/member-actions/passkey/complete', { action_id: begun.id, credential: cred, assertion: { ...passkeyAssertionBody(browserJson(h.passkey.assert(nonce))), id: 'AB' } }, h.session), 422, 'validation_failed'],
    ['an assertion with an extra field', async () => h.bff('POST', '/v1/member-actions/passkey/complete', { action_id: begun.id, credential: cred, assertion: { ...passkeyAssertionBody(browserJson(h.passkey.assert(nonce))), user_handle: 'x' } }, h.session), 400, 'invalid_request'],
    ['an unknown action', async () => h.complete(`mac_${randomBytes(32).toString('base64url')}`, cred, h.passkey.assert(nonce)), 404, 'not_found'],
    ['no member session', async () => h.complete(begun.id, cred, h.passkey.assert(nonce), `mss_${randomBytes(32).toString('base64url')}`), 401],
  ];
  for (const [what, make, status, code, reason] of cases) {
    const r = await make();
    t.equal(r.statusCode, status, `${what}: ${r.body}`);
    if (code) t.equal(r.json().code, code, what);
    if (reason) t.match(r.json().error, reason, `${what}: the nodes' reason is named`);
    t.notOk(r.body.includes(cred.split('.')[2]!), `${what}: the refusal does not quote the credential`);
  }
  // The begun action of the first case is new; nothing else changed, and the honest answer still completes.
  const after = JSON.parse(await h.snapshot()) as { id?: string }[];
  t.same(after.filter((r) => !(JSON.parse(before) as { id?: string }[]).some((x) => JSON.stringify(x) === JSON.stringify(r))).map((r) => r.id?.slice(0, 4)), ['mac_', 'aud_'], 'only the extra action and its audit entry were written');
  t.equal((await h.complete(begun.id, cred, h.passkey.assert(nonce))).statusCode, 200, 'the honest answer completes afterwards');

  // A vault bound to nobody: the nodes take any member's credential, the API only this member's.
  const open = await h.hostedWallet();
  const oi = h.intent(open);
  const ob = (await h.begin(oi, open)).json() as { id: string; proof: { nonce: string } };
  const r = await h.complete(ob.id, await h.credential(h.passkey, 'hsub_00000000000000000000000000'), h.passkey.assert(ob.proof.nonce));
  t.match({ status: r.statusCode, code: r.json().code }, { status: 403, code: 'member_subject_mismatch' });
});
