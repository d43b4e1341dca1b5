// POST /member-auth/proof/challenges and /proof/exchange against a real OpenID provider on loopback
// (platform-api.md "Confidential exchange rules" 1, 3, 4, 6, 8, 9 and 11; docs/platform/member-auth.md
// "Member sessions"). Every refusal is also shown to change nothing: the member-auth records and the
// audit log read the same before and after.
import t, { type Test } from 'tap';
import { SignJWT, importJWK, decodeJwt } from 'jose';
import { setupMemberAuth, newExchangeId, PATHS, type MemberAuthHarness } from './member-auth-harness.ts';
import { startProvider } from './oidc-provider-fixture.ts';
import { ProofExchange } from '../../../api/member-auth/proof-exchange.ts';
import { ProofVerifier } from '../../../api/member-auth/proof-verifier.ts';
import { MemberBindings } from '../../../api/member-auth/member-bindings.ts';
import { MemberSessions } from '../../../api/member-auth/member-sessions.ts';
import { loadExchangeCipher } from '../../../api/member-auth/exchange-cipher.ts';
import { resolvePublishableKey } from '../../../api/member-auth/publishable-keys.ts';
import { OutboundHttp } from '../../../api/webhooks/outbound-http.ts';
import { SESSION_COLLECTIONS as S, LIFETIMES } from '../../../api/member-auth/member-session-records.ts';

/** Sends an exchange that must be refused with `code`, and checks that nothing changed. */
async function refused(t: Test, h: MemberAuthHarness, body: unknown, code: string, status: number, what: string, o: Parameters<MemberAuthHarness['bff']>[3] = {}) {
  const before = await h.snapshot();
  const r = await h.bff('POST', PATHS.exchange, body, o);
  t.equal(r.statusCode, status, `${what}: status (${r.body})`);
  t.equal(r.json().code, code, `${what}: code`);
  t.equal(await h.snapshot(), before, `${what}: nothing changed`);
  return r;
}

/** A token signed with the provider's own key, for claims the provider cannot be asked for. */
async function minted(h: MemberAuthHarness, claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  const key = await importJWK(h.op.signingJwk, 'RS256');
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: 'alice', iat: now, auth_time: now, exp: now + 600, iss: h.op.issuer, aud: 'bff-client', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: h.op.signingJwk.kid!, ...header }).sign(key);
}

t.test('rule 1: challenge, provider proof, exchange: a member session held by the BFF', async (t) => {
  const h = await setupMemberAuth(t);
  const c = await h.bff('POST', PATHS.challenges, {});
  t.equal(c.statusCode, 201, c.body);
  t.match(c.json(), { nonce: /^[A-Za-z0-9_-]{43}$/, application_id: h.app.id });
  t.ok(Date.parse(c.json().expires_at) - Date.now() <= LIFETIMES.challenge * 1000, 'a short-lived challenge');
  const idToken = await h.op.signIn({ sub: 'alice', nonce: c.json().nonce, maxAge: 300 });
  t.equal(decodeJwt(idToken).nonce, c.json().nonce, 'the provider put the challenge in the proof');
  const r = await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: idToken });
  t.equal(r.statusCode, 201, r.body);
  const g = r.json();
  t.match(g, { session_id: /^mss_[A-Za-z0-9_-]{43}$/, refresh_credential: /^mrc_[A-Za-z0-9_-]{43}$/, application_id: h.app.id, member: { id: /^mem_/, created: true } });
  t.equal(Date.parse(g.expires_at) - Date.parse(g.refresh_expires_at) < 0, true, 'the session ends before its refresh credential');
  const ctx = await h.bff('GET', PATHS.session, undefined, { session: g.session_id });
  t.equal(ctx.statusCode, 200, ctx.body);
  t.equal(ctx.json().member.id, g.member.id);

  const again = await h.signIn('alice');
  t.equal(again.member.id, g.member.id, 'the same (issuer, sub) is the same member');
  t.equal(again.member.created, false);
  const bob = await h.signIn('bob');
  t.not(bob.member.id, g.member.id);
  const created = (await h.platform.audit.list(h.sandbox.id)).filter((e) => e.action === 'member_auth.session.create');
  t.equal(created.length, 3, 'each session creation is audited');
  t.notMatch(JSON.stringify(created), /mss_|mrc_|eyJ/, 'no session id, refresh credential or token in the audit log');
});

t.test('rule 3: a publishable key selects an application only with a bearer key of its workspace', async (t) => {
  const h = await setupMemberAuth(t);
  const otherPk = (await h.call('PUT', PATHS.byo, { issuer: h.op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' }, h.otherOwner.token)).json().publishable_key;
  const nonce = await h.challenge();
  const idToken = await h.op.signIn({ sub: 'alice', nonce });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: idToken }, 'not_found', 404, 'our key with another tenant\'s bearer', { token: h.otherOwner.token });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: idToken }, 'not_found', 404, 'another tenant\'s key with our bearer', { pk: otherPk });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: idToken }, 'publishable_key_mismatch', 403, 'a live key with a sandbox bearer', { pk: h.app.publishable_key.replace('pk_test_', 'pk_live_') });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: idToken }, 'invalid_request', 400, 'no publishable key', { pk: null });
  const noKey = await h.bff('POST', PATHS.challenges, {}, { pk: null });
  t.equal(noKey.json().code, 'invalid_request');
  const noBearer = await h.server.inject({ method: 'POST', url: PATHS.challenges, headers: { 'x-svc-publishable-key': h.app.publishable_key, 'content-type': 'application/json' }, payload: '{}' });
  t.equal(noBearer.statusCode, 401, 'the publishable key alone grants nothing');
  t.equal((await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: idToken })).statusCode, 201, 'the right pair still works: nothing was used up');
});

t.test('rule 4: a provider proof is accepted exactly once', async (t) => {
  const h = await setupMemberAuth(t);
  const first = await h.signIn('alice');
  const r = await refused(t, h, { exchange_id: newExchangeId(), id_token: first.idToken }, 'proof_replayed', 409, 'the same proof under a new exchange_id');
  t.match(r.json().error, /already used/);
  // The same signed part under another signature does not verify, so it is not a way around the record.
  const [hd, pl] = first.idToken.split('.');
  await refused(t, h, { exchange_id: newExchangeId(), id_token: `${hd}.${pl}.AAAA` }, 'proof_invalid', 401, 'the signed part with another signature');
});

t.test('rule 6: a concurrent trust change between verification and commit rejects creation', async (t) => {
  const h = await setupMemberAuth(t);
  const http = new OutboundHttp({ policy: h.platform.endpoints.http.policy, timeoutMs: 10_000, maxResponseBytes: 65537 });
  t.teardown(() => http.close());
  let patched = 0;
  const exchange = new ProofExchange({
    store: h.store, audit: h.platform.audit, cipher: await loadExchangeCipher(h.store), verifier: new ProofVerifier(http, h.platform.clock),
    bindings: new MemberBindings(h.store, h.platform.clock), sessions: new MemberSessions(h.store, h.platform.audit, h.platform.clock), clock: h.platform.clock,
    // Exactly between verification and commit, the application's policy is tightened.
    afterVerify: async () => {
      const p = await h.call('PATCH', `${PATHS.apps}/${h.app.id}`, { max_proof_age_sec: 60 + ++patched });
      t.equal(p.statusCode, 200, 'the configuration change went through');
    },
  });
  const principal = { tenant: h.tenant.id, workspace: h.sandbox.id, environment: 'sandbox' as const };
  const application = await resolvePublishableKey(h.store, principal, h.app.publishable_key);
  const caller = { ...principal, principal: h.owner.key.id, publishable_key: h.app.publishable_key, application };
  const nonce = await h.challenge();
  const idToken = await h.op.signIn({ sub: 'alice', nonce });
  const before = await h.snapshot();
  await t.rejects(exchange.exchange(caller, { type: 'api_key', id: h.owner.key.id }, newExchangeId(), idToken), { code: 'member_auth_changed' });
  const after = JSON.parse(await h.snapshot());
  const was = JSON.parse(before);
  for (const c of Object.values(S).map((s) => s.name)) t.same(after[c], was[c], `${c}: unchanged`);
  t.equal(after.member_auth_applications[0].version, application.version + 1, 'only the configuration change landed');

  // Through the API, racing: whichever wins, no session is ever live under a version it was not made for.
  for (let i = 0; i < 3; i++) {
    const n = await h.challenge();
    const tok = await h.op.signIn({ sub: `racer-${i}`, nonce: n });
    const [ex, pa] = await Promise.all([
      h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: tok }),
      h.call('PATCH', `${PATHS.apps}/${h.app.id}`, { max_proof_age_sec: 200 + i }),
    ]);
    t.equal(pa.statusCode, 200);
    if (ex.statusCode === 201) {
      // Either the exchange committed first, under the old version, and the change ended its session;
      // or the change landed before the exchange read the application, and the session is the new version's.
      const s = await h.bff('GET', PATHS.session, undefined, { session: ex.json().session_id });
      if (s.statusCode === 200) t.equal(s.json().application.version, pa.json().version, `race ${i}: live only under the version it was made for`);
      else t.equal(s.json().code, 'member_session_invalid', `race ${i}: created before the change: ended by it`);
    } else {
      t.equal(ex.json().code, 'member_auth_changed', `race ${i}: refused as a trust change`);
    }
  }
});

t.test('rule 8: expired challenges and accepted proofs are retired only after their replay window', async (t) => {
  const h = await setupMemberAuth(t, { max_proof_age_sec: 86_400 });
  const used = await h.signIn('alice');
  const stale = await h.challenge();
  const tok = await h.op.signIn({ sub: 'alice', nonce: stale });
  h.advance(LIFETIMES.challenge + 1);
  const r = await refused(t, h, { exchange_id: newExchangeId(), id_token: tok }, 'proof_invalid', 401, 'a proof for an expired challenge');
  t.match(r.json().error, /challenge expired/);
  await h.challenge(); // runs the sweep
  t.equal(await h.store.count(S.challenges.name), 3, 'expired and used challenges are kept inside the window');
  t.equal(await h.store.count(S.acceptedProofs.name), 1);
  h.advance(LIFETIMES.replayWindow - 10);
  await h.challenge();
  t.equal(await h.store.count(S.challenges.name), 4, 'still inside the window: nothing retired');
  h.advance(60);
  const fresh = await h.challenge();
  t.equal(await h.store.count(S.challenges.name), 3, "past the window: the two first challenges are retired, the three later ones kept");
  t.equal(await h.store.count(S.acceptedProofs.name), 0, 'the accepted proof with them');
  t.equal(await h.store.count(S.exchanges.name), 0, 'and the exchange record, whose recovery window ended long before');
  t.ok(fresh && used.session_id);
});

t.test('rule 9: exchange_id recovers the same session after a lost acknowledgement, and only that', async (t) => {
  const h = await setupMemberAuth(t, { max_proof_age_sec: 3600 });
  const g = await h.signIn('alice');
  const before = await h.snapshot();
  const again = await h.bff('POST', PATHS.exchange, { exchange_id: g.exchangeId, id_token: g.idToken });
  t.equal(again.statusCode, 201);
  t.equal(again.headers['member-exchange-recovered'], 'true');
  t.same(again.json(), { session_id: g.session_id, refresh_credential: g.refresh_credential, expires_at: g.expires_at, refresh_expires_at: g.refresh_expires_at, application_id: h.app.id, member: g.member }, 'the same session result');
  t.equal(await h.snapshot(), before, 'a recovery writes nothing');

  const nonce = await h.challenge();
  const other = await h.op.signIn({ sub: 'alice', nonce });
  await refused(t, h, { exchange_id: g.exchangeId, id_token: other }, 'exchange_id_reused', 409, 'another proof under the same exchange_id');
  t.equal((await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: other })).statusCode, 201, 'that proof was not used up');

  const raw = await h.store.get<Record<string, unknown>>(S.exchanges.name, `${h.sandbox.id}\x00${h.app.id}\x00${g.exchangeId}`);
  t.match(raw, { sealed: /^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/ }, 'the result is sealed');
  const everything = await h.snapshot();
  for (const secret of [g.session_id, g.refresh_credential, g.nonce, g.idToken]) t.notOk(everything.includes(secret), 'no session id, refresh credential, nonce or proof is stored in the clear');

  // Past the recovery window the same request is a replay of a used proof.
  h.advance(LIFETIMES.exchangeRecovery + 1);
  await refused(t, h, { exchange_id: g.exchangeId, id_token: g.idToken }, 'proof_replayed', 409, 'after the recovery window');

  // Once the session moved on (refreshed), it was clearly received: no recovery.
  const g2 = await h.signIn('bob');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: g2.refresh_credential })).statusCode, 200);
  await refused(t, h, { exchange_id: g2.exchangeId, id_token: g2.idToken }, 'exchange_id_reused', 409, 'after the session was refreshed');
  t.equal((await h.bff('POST', PATHS.exchange, { exchange_id: 'short', id_token: g2.idToken })).statusCode, 400, 'exchange_id is 16 to 128 characters');
});

t.test('rule 11: identity is (issuer, sub) in the pinned namespace; other issuer, audience, tenant or application refused', async (t) => {
  const h = await setupMemberAuth(t);
  // Two accounts with the same email are two members: email is never read.
  const a = await minted(h, { sub: 'acct-1', email: 'same@example.com', email_verified: true, nonce: await h.challenge() });
  const b = await minted(h, { sub: 'acct-2', email: 'same@example.com', email_verified: true, nonce: await h.challenge() });
  const ma = (await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: a })).json();
  const mb = (await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: b })).json();
  t.not(ma.member.id, mb.member.id, 'same email, different subjects: different members');

  const nonce = await h.challenge();
  const wrongAud = await h.op.signIn({ sub: 'alice', nonce, clientId: 'other-client' });
  const r1 = await refused(t, h, { exchange_id: newExchangeId(), id_token: wrongAud }, 'proof_invalid', 401, 'wrong audience');
  t.match(r1.json().error, /aud/);
  const otherOp = await startProvider(t);
  const wrongIss = await otherOp.signIn({ sub: 'alice', nonce });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: wrongIss }, 'proof_invalid', 401, 'another issuer');

  // Another tenant with the same issuer and audience cannot use our challenge's proof, nor we theirs.
  const otherPk = (await h.call('PUT', PATHS.byo, { issuer: h.op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' }, h.otherOwner.token)).json().publishable_key;
  const ours = await h.op.signIn({ sub: 'alice', nonce });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: ours }, 'proof_invalid', 401, 'our proof in another tenant', { token: h.otherOwner.token, pk: otherPk });
  t.equal((await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: ours })).statusCode, 201, 'the same proof at home: the refusal used nothing up');

  // Another application: the workspace's BYO application replaced; a challenge of the old one is refused.
  const oldNonce = await h.challenge();
  t.equal((await h.call('DELETE', `${PATHS.apps}/${h.app.id}`)).statusCode, 204);
  const next = (await h.call('PUT', PATHS.byo, { issuer: h.op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' })).json();
  const forOld = await h.op.signIn({ sub: 'alice', nonce: oldNonce });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: forOld }, 'proof_invalid', 401, 'a challenge of another application', { pk: next.publishable_key });
  await refused(t, h, { exchange_id: newExchangeId(), id_token: forOld }, 'not_found', 404, 'the deleted application\'s key');
  const live = await h.op.signIn({ sub: 'alice', nonce: await h.challenge({ pk: next.publishable_key }) });
  const same = (await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: live }, { pk: next.publishable_key }));
  t.equal(same.statusCode, 201, 'a proof for the new application\'s own challenge');

  // Another namespace is another identity space: never linked.
  t.equal((await h.call('PATCH', `${PATHS.apps}/${next.id}`, { provider_namespace: 'acme-idp-2' })).statusCode, 200);
  const n2 = await h.challenge({ pk: next.publishable_key });
  const moved = (await h.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: await h.op.signIn({ sub: 'alice', nonce: n2 }) }, { pk: next.publishable_key })).json();
  t.equal(moved.member.created, true, 'the same (issuer, sub) in another namespace is a new member');
  t.not(moved.member.id, same.json().member.id);

  // A Hosted application's key does not take BYO proofs.
  await h.call('POST', '/v1/tenant/member-auth/allowed-origins', { origin: 'https://app.example.com' });
  await h.call('POST', '/v1/tenant/member-auth/redirect-urls', { url: 'https://app.example.com/cb' });
  const hosted = (await h.call('POST', `${PATHS.apps}/hosted`, { enrollment: 'open', origin: 'https://app.example.com', result_callback_url: 'https://app.example.com/cb', bff_key_id: h.owner.key.id })).json();
  t.equal((await h.bff('POST', PATHS.challenges, {}, { pk: hosted.publishable_key })).json().code, 'forbidden');
});

t.test('stale, expired, nonce-less, tampered, unsigned, access-token and policy-failing proofs are refused and change nothing', async (t) => {
  const h = await setupMemberAuth(t, { required_amr: ['mfa'] });
  const nonce = await h.challenge();
  const body = (id_token: string) => ({ exchange_id: newExchangeId(), id_token });
  const noAmr = await h.op.signIn({ sub: 'alice', nonce, maxAge: 300 });
  t.match((await refused(t, h, body(noAmr), 'proof_invalid', 401, 'amr lacks mfa')).json().error, /amr lacks mfa/);
  t.equal((await h.call('PATCH', `${PATHS.apps}/${h.app.id}`, { required_amr: [] })).statusCode, 200);
  const h2 = h; // the same harness, now without the amr rule
  const n = await h2.challenge();
  const good = await h2.op.signIn({ sub: 'alice', nonce: n, maxAge: 300 });
  const noNonce = await h2.op.signIn({ sub: 'alice' });
  t.match((await refused(t, h2, body(noNonce), 'proof_invalid', 401, 'no nonce')).json().error, /nonce/);
  const [hd, pl, sg] = good.split('.');
  const payload = JSON.parse(Buffer.from(pl!, 'base64url').toString());
  const forged = Buffer.from(JSON.stringify({ ...payload, sub: 'mallory' })).toString('base64url');
  t.match((await refused(t, h2, body(`${hd}.${forged}.${sg}`), 'proof_invalid', 401, 'a changed claim')).json().error, /signature/);
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${pl}.AA`;
  await refused(t, h2, body(none), 'proof_invalid', 401, 'alg none');
  const at = await minted(h2, { nonce: n }, { typ: 'at+jwt' });
  t.match((await refused(t, h2, body(at), 'proof_invalid', 401, 'an access token')).json().error, /not an ID token/);
  const multi = await minted(h2, { nonce: n, aud: ['bff-client', 'someone-else'] });
  t.match((await refused(t, h2, body(multi), 'proof_invalid', 401, 'several audiences without azp')).json().error, /azp/);
  t.equal((await h2.bff('POST', PATHS.exchange, { exchange_id: newExchangeId(), id_token: 'x'.repeat(20_000) })).statusCode, 400, 'too large');
  h2.advance(400);
  t.match((await refused(t, h2, body(good), 'proof_invalid', 401, 'stale: auth_time older than max_proof_age_sec')).json().error, /stale/);
  h2.advance(3600);
  t.match((await refused(t, h2, body(good), 'proof_invalid', 401, 'expired')).json().error, /expired/);
});

t.test('the exchange store seal: AES-256-GCM, bound to its record and proof, versioned, never printed', async (t) => {
  const { ExchangeCipher } = await import('../../../api/member-auth/exchange-cipher.ts');
  const c = new ExchangeCipher(Buffer.alloc(32, 7));
  const blob = c.seal('{"session_id":"mss_x"}', 'rec\x00proof');
  t.match(blob, /^v1\./);
  t.equal(c.open(blob, 'rec\x00proof'), '{"session_id":"mss_x"}');
  t.equal(c.open(blob, 'other\x00proof'), undefined, 'moved to another record: does not open');
  t.equal(c.open(blob, 'rec\x00other'), undefined, 'read for another proof: does not open');
  const [v, iv, ct, tag] = blob.split('.');
  t.equal(c.open([v, iv, Buffer.from(Buffer.from(ct!, 'base64url').map((b, i) => (i === 0 ? b ^ 1 : b))).toString('base64url'), tag].join('.'), 'rec\x00proof'), undefined, 'a changed byte');
  t.equal(c.open(`v2.${iv}.${ct}.${tag}`, 'rec\x00proof'), undefined, 'another version');
  t.equal(new ExchangeCipher(Buffer.alloc(32, 8)).open(blob, 'rec\x00proof'), undefined, 'another key');
  t.equal(JSON.stringify({ c }), '{"c":"<redacted>"}');
  t.throws(() => new ExchangeCipher(Buffer.alloc(16)), { code: 'bad_config' });
});

t.test('API_MEMBER_AUTH_EXCHANGE_KEY_FILE: the key the app seals with; a malformed file stops the app', async (t) => {
  const { readExchangeKeyFile, loadExchangeCipher } = await import('../../../api/member-auth/exchange-cipher.ts');
  const { buildApp } = await import('../../../api/app.ts');
  const { loadApiConfig } = await import('../../../api/config.ts');
  const { createLogger } = await import('../../../common/logger.ts');
  const { setupPlatform } = await import('../setup-platform.ts');
  const { writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const s = await setupPlatform(t);
  const good = join(s.dir, 'exchange.key');
  writeFileSync(good, `${'ab'.repeat(32)}\n`, { mode: 0o600 });
  t.same(await readExchangeKeyFile(good), Buffer.alloc(32, 0xab), 'read as 64 hex digits');
  const fromFile = await loadExchangeCipher(s.store, await readExchangeKeyFile(good));
  const stored = await loadExchangeCipher(s.store);
  t.equal(fromFile.open(stored.seal('x', 'ad'), 'ad'), undefined, 'not the generated store key');
  const bad = join(s.dir, 'bad.key');
  writeFileSync(bad, 'not-hex', { mode: 0o600 });
  const config = loadApiConfig({ API_DATA_DIR: s.dir, API_MEMBER_AUTH_EXCHANGE_KEY_FILE: bad });
  await t.rejects(buildApp({ config, logger: createLogger('api', 'silent'), platform: s.platform }), { code: 'bad_config', message: /64 hex digits/ });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: s.dir, API_MEMBER_AUTH_EXCHANGE_KEY_FILE: good }), logger: createLogger('api', 'silent'), platform: s.platform });
  await app.close();
  t.pass('an app with a good key file starts');
});
