// Member actions through the API (docs/platform/member-actions.md), against the real OpenID provider of
// oidc-provider-fixture.ts: a member signed in by the BYO exchange begins an action for one exact EVM
// intent of a hosted vault, completes it with a fresh ID token carrying the action's nonce, and the vault
// API takes the signing session once. Every refusal changes nothing.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { walletApp } from '../wallets/wallet-app.ts';
import { newExchangeId } from './member-auth-harness.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { memberActionNonce } from '../../../core/auth/member-action.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import { TX_JOBS } from '../../../api/transactions/collections.ts';
import { HOSTED_COLLECTIONS } from '../../../api/member-auth/hosted-records.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { MemberAuthClient } from '../../../api/sdk/member-auth-client.ts';
import { memberActionSetup as setup, P, type Begun, type Completed } from './member-action-harness.ts';

t.test('begin, a fresh proof from the provider, complete, and one transaction with member_signing_session', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const i = h.intent();
  const b = await h.begin(session, i);
  t.equal(b.statusCode, 201, b.body);
  const begun = b.json() as Begun;
  t.match(begun, { id: /^mac_[A-Za-z0-9_-]{43}$/, status: 'pending_proof', intent_sha256: bytesToHex(sha256(i.bytes)), proof: { nonce: /^[A-Za-z0-9_-]{43}$/, max_age: 300, prompt: 'login' } });
  t.ok(Date.parse(begun.expires_at) - Date.now() <= 600_000 && Date.parse(begun.expires_at) > Date.now(), 'expires within 10 minutes');
  const again = (await h.begin(session, i)).json() as Begun;
  t.not(again.proof.nonce, begun.proof.nonce, 'the same intent begun twice: another action, another salt, another nonce');

  // The member authenticates again at the provider, with the action's nonce.
  const idToken = await h.op.signIn({ sub: 'alice', nonce: begun.proof.nonce, maxAge: begun.proof.max_age });
  const c = await h.complete(session, begun.id, idToken);
  t.equal(c.statusCode, 200, c.body);
  const done = c.json() as Completed;
  t.match(done, { id: begun.id, status: 'completed', signing_session: { id: /^mas_[A-Za-z0-9_-]{43}$/, signing_url: new RegExp(`/v1/member-actions/signing-sessions/${done.signing_session.id}$`) } });
  t.notOk(c.body.includes(idToken.split('.')[2]!), 'the answer carries no token');
  t.ok(Date.parse(done.signing_session.expires_at) <= Date.now() + 300_000 + 1000);

  // The locator: with the same BFF credentials, the status and the frozen operation; nothing else.
  const url = new URL(done.signing_session.signing_url, 'http://api.test').pathname;
  const view = await h.bff('GET', url, undefined, { session });
  t.equal(view.statusCode, 200, view.body);
  t.same(view.json(), { status: 'active', expires_at: done.signing_session.expires_at, action_id: begun.id, operation: { kind: 'transaction.sign', wallet_id: h.wallet.id, intent_sha256: begun.intent_sha256 }, transaction_id: null });
  t.equal((await h.bff('GET', url, undefined, {})).statusCode, 400, 'without the member session it is nothing');
  t.equal((await h.bff('GET', url, undefined, { session: await h.signIn('alice') })).statusCode, 404, 'another sign-in of the same member does not see it');

  // Both token kinds at once: 400, nothing stored.
  const both = await h.submit(i, { member_signing_session: done.signing_session.id, end_user_token: idToken });
  t.equal(both.statusCode, 400, both.body);
  // Another intent of the same wallet: the session is for these exact bytes.
  const other = await h.submit(h.intent(), { member_signing_session: done.signing_session.id });
  t.match([other.statusCode, other.json().code], [403, 'signing_session_mismatch']);

  const tx = await h.submit(i, { member_signing_session: done.signing_session.id });
  t.equal(tx.statusCode, 202, tx.body);
  t.notOk(tx.body.includes(idToken.split('.')[1]!), 'the transaction view carries no part of the proof');
  // What the worker forwards to the nodes: the ID token and the binding whose nonce the provider signed.
  const job = (await TX_JOBS.in(h.store).get(tx.json().id))!;
  t.equal(job.end_user_token, idToken, 'the job holds the proof until the signature');
  t.equal(memberActionNonce(job.member_action!.action_id, hexToBytes(job.member_action!.salt), bytesToHex(sha256(i.bytes))), begun.proof.nonce, 'the forwarded binding recomputes the nonce, as each node does');
  const used = await h.bff('GET', url, undefined, { session });
  t.match(used.json(), { status: 'used', transaction_id: tx.json().id });
  t.equal((await ACTION_COLLECTIONS.actions.in(h.store).get(begun.id))!.status, 'used');
  t.equal((await ACTION_COLLECTIONS.signing.in(h.store).get(bytesToHex(sha256(new TextEncoder().encode(done.signing_session.id)))))!.sealed_proof, null, 'the sealed proof is dropped once used');

  // Used once: another submission (another idempotency key) is refused; a retry of the same one replays.
  const j = h.intent();
  const reuse = await h.submit({ ...i, key: j.key }, { member_signing_session: done.signing_session.id });
  t.equal(reuse.statusCode, 400, 'the intent names its own idempotency key');
  const replay = await h.submit(i, { member_signing_session: done.signing_session.id });
  t.equal(replay.json().id, tx.json().id, 'the same request replays the same transaction');
  // A second action, its submission raced against itself: one transaction is created, the other call replays it.
  const k = h.intent(h.wallet, '2000');
  const b2 = (await h.begin(session, k)).json() as Begun;
  const d2 = (await h.complete(session, b2.id, await h.op.signIn({ sub: 'alice', nonce: b2.proof.nonce, maxAge: 300 }))).json() as Completed;
  const raced = await Promise.all([h.submit(k, { member_signing_session: d2.signing_session.id }), h.submit(k, { member_signing_session: d2.signing_session.id })]);
  t.same(raced.map((r) => r.statusCode), [202, 202], raced.map((r) => r.body.slice(0, 120)).join(' | '));
  t.equal(raced[0]!.json().id, raced[1]!.json().id, 'exactly one transaction took the session');
  const k3 = h.intent(h.wallet, '3000');
  const late = await h.submit(k3, { member_signing_session: d2.signing_session.id });
  t.match([late.statusCode, late.json().code], [409, 'signing_session_used'], 'a used session takes no other transaction');
});

t.test('completion refuses a wrong nonce, subject, stale or auth_time-less proof, a replay, and a configuration the nodes would refuse; each changes nothing', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const begun = (await h.begin(session)).json() as Begun;
  const refuse = async (what: string, idToken: string, status: number, code: string, o: { session?: string; actionId?: string; token?: string } = {}) => {
    const before = await h.snapshot();
    const r = await h.complete(o.session ?? session, o.actionId ?? begun.id, idToken, o.token ? { token: o.token } : {});
    t.match([r.statusCode, r.json().code], [status, code], `${what}: ${r.body.slice(0, 200)}`);
    t.equal(await h.snapshot(), before, `${what}: nothing changed`);
  };
  const now = Math.floor(Date.now() / 1000);
  await refuse('a proof for another nonce (a sign-in challenge)', await h.op.signIn({ sub: 'alice', nonce: randomBytes(32).toString('base64url'), maxAge: 300 }), 403, 'member_action_mismatch');
  await refuse('another subject', await h.op.signIn({ sub: 'mallory', nonce: begun.proof.nonce, maxAge: 300 }), 403, 'member_subject_mismatch');
  await refuse('a stale auth_time', await h.op.mint({ nonce: begun.proof.nonce, auth_time: now - 400 }), 403, 'member_proof_stale');
  await refuse('no auth_time', await h.op.mint({ nonce: begun.proof.nonce, auth_time: undefined }), 401, 'proof_invalid');
  await refuse('no nonce', await h.op.mint({ nonce: undefined }), 401, 'proof_invalid');
  await refuse('another audience', await h.op.mint({ nonce: begun.proof.nonce, aud: 'other-client' }), 401, 'proof_invalid');
  // The organization registered another audience for end-user auth: the nodes would refuse, so the API does now.
  await h.registerEndUserAuth('custody-test');
  await refuse('a registration whose audience is not the OIDC client id', await h.op.mint({ nonce: begun.proof.nonce }), 403, 'member_proof_not_signable');
  await h.registerEndUserAuth();

  // Actions of another sign-in, member, principal or tenant are unknown.
  const good = await h.op.mint({ nonce: begun.proof.nonce });
  await refuse('from another sign-in of the same member', good, 404, 'not_found', { session: await h.signIn('alice') });
  await refuse('from another member', good, 404, 'not_found', { session: await h.signIn('bob') });
  const secondKey = await h.acme.key('owner');
  await refuse('from another BFF principal of the workspace', good, 404, 'not_found', { session: await h.signIn('alice', secondKey), token: secondKey });
  await refuse('an unknown action id', good, 404, 'not_found', { actionId: `mac_${randomBytes(32).toString('base64url')}` });
  await refuse('a malformed action id', good, 404, 'not_found', { actionId: 'mac_1' });

  const ok = await h.complete(session, begun.id, good);
  t.equal(ok.statusCode, 200, ok.body);
  await refuse('the same proof again', good, 409, 'proof_replayed');
  await refuse('a new proof for a completed action', await h.op.mint({ nonce: begun.proof.nonce, iat: now - 1 }), 409, 'member_action_not_pending');

  // An action left past its 10 minutes.
  const late = (await h.begin(session)).json() as Begun;
  h.advance(601);
  await refuse('an expired action', await h.op.mint({ nonce: late.proof.nonce }), 409, 'member_action_expired', { actionId: late.id });
});

t.test('begin checks the wallet, the vault\'s kind and subject, the intent and the caller; pending actions are bounded', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const code = async (what: string, r: Promise<{ statusCode: number; json(): { code: string }; body: string }>, status: number, c: string) => {
    const got = await r;
    t.match([got.statusCode, got.json().code], [status, c], `${what}: ${got.body.slice(0, 200)}`);
  };
  const globexVault = await h.vaults.createVault(h.globex.org, { tier: 'hosted' });
  await h.store.batch([h.vaults.vaultOp({ ...globexVault, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) })]);
  const globexWallet = await h.newWallet(h.globex.org, globexVault.id);
  await code('a wallet of another organization', h.begin(session, h.intent(globexWallet), globexWallet), 404, 'not_found');
  const plain = await h.hostedWallet(undefined, { end_user_auth: false });
  await code('a hosted vault without end-user auth', h.begin(session, h.intent(plain), plain), 409, 'member_action_unsupported');
  const bobs = await h.hostedWallet('bob');
  await code('a vault bound to another end user', h.begin(session, h.intent(bobs), bobs), 403, 'member_subject_mismatch');
  const unbound = await h.hostedWallet();
  t.equal((await h.begin(session, h.intent(unbound), unbound)).statusCode, 201, 'an unbound hosted vault: any member of the organization');
  await code('an intent of another wallet', h.begin(session, h.intent(), unbound), 400, 'invalid_request');
  await code('intent bytes that are not an intent', h.bff('POST', P.begin, { kind: 'transaction.sign', wallet_id: h.wallet.id, intent: Buffer.from('not an intent').toString('base64') }, { session }), 400, 'invalid_request');
  await code('another kind', h.bff('POST', P.begin, { kind: 'payment.sign', wallet_id: h.wallet.id, intent: h.intent().b64 }, { session }), 400, 'invalid_request');
  await code('a caller-named member', h.bff('POST', P.begin, { kind: 'transaction.sign', wallet_id: h.wallet.id, intent: h.intent().b64 }, { session, headers: { 'x-end-user-id': 'alice' } }), 400, 'caller_identity_refused');
  await code('no member session', h.bff('POST', P.begin, { kind: 'transaction.sign', wallet_id: h.wallet.id, intent: h.intent().b64 }, {}), 400, 'invalid_request');
  await code('an unknown member session', h.begin(`mss_${randomBytes(32).toString('base64url')}`), 401, 'member_session_invalid');
  await code('a viewer key', h.begin(session, h.intent(), h.wallet, { token: await h.acme.key('viewer') }), 403, 'role_denied');

  // One pending action was begun above; four more fit, the sixth is refused until one is completed.
  for (let n = 0; n < 4; n++) t.equal((await h.begin(session)).statusCode, 201);
  const before = await h.snapshot();
  await code('a sixth pending action', h.begin(session), 429, 'member_action_limit');
  t.equal(await h.snapshot(), before, 'nothing stored');
  h.advance(601);
  t.equal((await h.begin(session)).statusCode, 201, 'expired actions no longer count');
  const pendingLeft = await ACTION_COLLECTIONS.actions.in(h.store).byIndex('', 100);
  t.equal(pendingLeft.length, 1, 'and leave the pending index');
});

t.test('POST /v1/transactions: member_signing_session is checked against the organization, the vault kind and time', async (t) => {
  const h = await setup(t);
  const session = await h.signIn('alice');
  const i = h.intent();
  const begun = (await h.begin(session, i)).json() as Begun;
  const done = (await h.complete(session, begun.id, await h.op.mint({ nonce: begun.proof.nonce }))).json() as Completed;
  const mss = done.signing_session.id;
  const before = await h.snapshot();
  const unknown = await h.submit(i, { member_signing_session: `mas_${randomBytes(32).toString('base64url')}` });
  t.match([unknown.statusCode, unknown.json().code], [403, 'signing_session_invalid']);
  const plain = await h.hostedWallet(undefined, { end_user_auth: false });
  const p = h.intent(plain);
  t.equal((await h.submit(p, { member_signing_session: mss }, plain)).statusCode, 400, 'a vault without end-user auth takes none');
  t.equal((await h.submit(i, { member_signing_session: 'mas_short' })).statusCode, 400, 'malformed');
  t.equal((await h.submit(i, {})).json().code, 'forbidden', 'nothing at all: the end-user token is required');
  h.advance(301);
  const expired = await h.submit(i, { member_signing_session: mss });
  t.match([expired.statusCode, expired.json().code], [403, 'signing_session_invalid'], 'expired');
  t.equal(await h.snapshot(), before, 'the refusals changed nothing');
});

t.test('the application\'s ACR and AMR policy applies to the action\'s proof, and begin names it', async (t) => {
  const h = await setup(t, { required_acr: ['urn:acme:loa2'], required_amr: ['mfa'] });
  // The code flow of the fixture cannot be asked for acr/amr: the member signs in with a minted proof.
  const c = (await h.bff('POST', P.challenges, {})).json() as { nonce: string };
  const ex = await h.bff('POST', P.exchange, { exchange_id: newExchangeId(), id_token: await h.op.mint({ nonce: c.nonce, acr: 'urn:acme:loa2', amr: ['pwd', 'mfa'] }) });
  t.equal(ex.statusCode, 201, ex.body);
  const session = ex.json().session_id as string;
  const begun = (await h.begin(session)).json() as Begun;
  t.match(begun.proof, { acr_values: 'urn:acme:loa2', required_amr: ['mfa'] });
  const before = await h.snapshot();
  for (const [what, claims] of [['no acr', { amr: ['mfa'] }], ['another acr', { acr: 'urn:acme:loa1', amr: ['mfa'] }], ['amr without mfa', { acr: 'urn:acme:loa2', amr: ['pwd'] }]] as const) {
    const r = await h.complete(session, begun.id, await h.op.mint({ nonce: begun.proof.nonce, ...claims }));
    t.match([r.statusCode, r.json().code], [401, 'proof_invalid'], what);
  }
  t.equal(await h.snapshot(), before, 'nothing changed');
  const ok = await h.complete(session, begun.id, await h.op.mint({ nonce: begun.proof.nonce, acr: 'urn:acme:loa2', amr: ['mfa', 'otp'] }));
  t.equal(ok.statusCode, 200, ok.body);
});

t.test('the SDK: MemberAuthClient begins and completes the action, CustodyClient submits with memberSigningSession', async (t) => {
  const h = await setup(t);
  const base = await h.server.listen({ port: 0, host: '127.0.0.1' });
  const members = new MemberAuthClient({ baseUrl: base, apiKey: h.acme.owner, publishableKey: h.app.publishable_key });
  const custody = new CustodyClient({ baseUrl: base, organization: h.acme.org, keyId: h.acme.creds.keyId, secretKey: h.acme.creds.secretKey });
  const session = (await members.exchange(newExchangeId(), await h.op.signIn({ sub: 'alice', nonce: (await members.createChallenge()).nonce, maxAge: 300 }))).grant.session_id;
  const p = { wallet: h.wallet, to: '0x00000000000000000000000000000000000a11ce', amount: 5n, idempotencyKey: 'sdk-member-1', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600) };
  const intent = await custody.evmIntent(p);
  const begun = await members.beginMemberAction(session, { walletId: h.wallet.id, intent });
  t.equal(begun.intent_sha256, bytesToHex(sha256(intent)));
  const done = await members.completeMemberAction(session, begun.id, await h.op.signIn({ sub: 'alice', nonce: begun.proof.nonce, maxAge: begun.proof.max_age }));
  t.equal(done.status, 'completed');
  const tx = await custody.sendEvm({ ...p, memberSigningSession: done.signing_session.id });
  t.equal(tx.state, 'created');
  await t.rejects(members.completeMemberAction(session, begun.id, await h.op.mint({ nonce: begun.proof.nonce })), { status: 409, code: 'member_action_not_pending' });
});

t.test('a hosted member restricted by lost-all-factor recovery is refused with member_recovery_restricted', async (t) => {
  const s = await walletApp(t);
  const bff = await s.platform.tenancy.createKey(s.acme.sandbox.id, 'member_auth', { label: 'bff' });
  const origin = 'http://127.0.0.1:9';
  for (const [url, body] of [['/v1/tenant/member-auth/allowed-origins', { origin }], ['/v1/tenant/member-auth/redirect-urls', { url: `${origin}/callback` }]] as const) {
    t.equal((await s.bearer('POST', url, body)).statusCode, 201);
  }
  const made = await s.bearer('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'invite_only', origin, result_callback_url: `${origin}/callback`, bff_key_id: bff.key.id, require_totp: false });
  t.equal(made.statusCode, 201, made.body);
  const pk = made.json().publishable_key as string;
  const headers = { 'x-svc-publishable-key': pk };
  // The sandbox demo persona: a hosted member with a session, without the email ceremony.
  const grant = (await s.bearer('POST', '/v1/member-auth/hosted/authorizations/sandbox-demo', {}, bff.token, headers)).json() as { session_id: string; member: { id: string } };
  const body = { kind: 'transaction.sign', wallet_id: 'wal_x', intent: Buffer.from('x').toString('base64') };
  const call = () => s.bearer('POST', P.begin, body, bff.token, { ...headers, 'x-member-session-id': grant.session_id });
  const plain = await call();
  t.equal(plain.statusCode, 404, 'a hosted member may begin an action (this wallet is unknown)');
  t.equal(plain.json().code, 'not_found');
  const m = (await HOSTED_COLLECTIONS.members.in(s.store).get(grant.member.id))!;
  await HOSTED_COLLECTIONS.members.in(s.store).put(m.id, { ...m, restricted_until: new Date(Date.now() + 86_400_000).toISOString() }, [`${m.application}\x00${m.id}`]);
  const restricted = await call();
  t.equal(restricted.statusCode, 403);
  t.equal(restricted.json().code, 'member_recovery_restricted', 'the restriction is checked before anything else');
  const passkey = await s.bearer('POST', '/v1/member-actions/passkey/complete', { action_id: 'mac_x', credential: 'x', assertion: { id: 'AA', authenticator_data: 'AA', client_data_json: 'AA', signature: 'AA' } }, bff.token, { ...headers, 'x-member-session-id': grant.session_id });
  t.equal(passkey.json().code, 'member_recovery_restricted', 'and at a passkey completion');
});
