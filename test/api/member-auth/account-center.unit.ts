// The Hosted Account Center over HTTP, without a browser (platform-api.md "Confidential exchange rules"
// 13; docs/platform/account-center.md): the handoff and its bindings, the expected member's sign-in on
// the page, TOTP enrolment and removal, recovery codes, the one-time result exchange, and each refusal
// shown to change nothing it should not. Real SMTP sink, the platform's clock moved where time matters.
import t from 'tap';
import { Secret } from 'otpauth';
import { setupHosted, pageError, pkcePair } from './hosted-auth-harness.ts';
import { AC, centerBrowser, codeOf, codesOf, enrolOnPage, openCenter, signIn, snapshot } from './account-center-harness.ts';
import { HOSTED_COLLECTIONS } from '../../../api/member-auth/hosted-records.ts';

t.test('a handoff: the member signs in, enrols TOTP, gets recovery codes, finishes; the BFF exchanges a safe summary once', async (t) => {
  const h = await setupHosted(t);
  const member = await h.invite('ann@example.com');
  const grant = await signIn(h, 'ann@example.com');
  const { handoff, pkce, b, page } = await openCenter(h, grant.session_id, 'ann@example.com');
  t.match(handoff, { id: /^hac_[A-Za-z0-9_-]{43}$/, handoff_url: /\/v1\/account-center\/hac_/ });
  t.ok(Date.parse(handoff.expires_at) - h.platform.clock() <= 900_000, 'short-lived: 15 minutes at most');
  t.equal(page.statusCode, 200);
  t.match(page.body, /Authenticator app: not set up/, 'signed in: the account page');
  t.match(String(page.headers['content-security-policy']), /default-src 'none'.*form-action 'self' http:\/\/127\.0\.0\.1:9/, 'the Hosted Auth page\'s CSP');

  // Enrolment: a wrong code does not count; a current one confirms.
  const setup = await b.submit('enrol');
  const base32 = /id="totp-secret">([A-Z2-7]+)</.exec(setup.body)![1]!;
  t.match(setup.body, /otpauth:\/\/totp\//, 'an otpauth URI beside the key');
  const current = codeOf(h, base32);
  const wrong = await b.submit('enrol-confirm', { code: current === '000000' ? '111111' : '000000' });
  t.match(wrong.body, /not right/, 'a wrong code is refused');
  let stored = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!;
  t.equal(stored.totp_secret, null, 'nothing counts before a confirming code');
  const ok = await b.submit('enrol-confirm', { code: current });
  t.match(ok.body, /Authenticator app: set up/);
  stored = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!;
  t.equal(Secret.fromHex(stored.totp_secret!).base32, base32, 'the confirmed secret is the member\'s factor');

  // Recovery codes: ten, shown once, stored as digests only.
  const shown = await b.post('recovery-codes');
  t.equal(shown.statusCode, 200, 'the codes are in the POST\'s answer');
  t.equal(shown.headers['cache-control'], 'no-store');
  const codes = codesOf(shown.body);
  t.equal(codes.length, 10);
  t.equal(new Set(codes).size, 10);
  const again = await b.get();
  t.notMatch(again.body, /<li>[a-z0-9]{5}-[a-z0-9]{5}<\/li>/, 'never shown again');
  t.match(again.body, /Recovery codes left: 10/);
  const snap = await snapshot(h);
  for (const c of codes) t.notOk(snap.includes(c) || snap.includes(c.replace('-', '')), 'no recovery code in the store');
  stored = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!;
  t.match(stored.recovery_codes, Array(10).fill({ digest: /^[0-9a-f]{64}$/, used_at: null }), 'ten HMAC-SHA-256 digests');

  const fin = await b.post('finish');
  t.equal(fin.statusCode, 303);
  const loc = new URL(String(fin.headers.location));
  t.equal(`${loc.origin}${loc.pathname}`, h.callback, 'back to the return URL');
  t.equal(loc.searchParams.get('state'), 'ac-state');
  const code = loc.searchParams.get('code')!;
  t.match(code, /^acr_[A-Za-z0-9_-]{43}$/);
  t.equal(pageError((await b.get()).body), 'hosted_authorization_used', 'the page is done once finished');

  // The exchange is bound to the caller and the session family; refusals change nothing.
  const body = { code, code_verifier: pkce.verifier, return_url: h.callback };
  const other = await signIn(h, 'ann@example.com', () => codeOf(h, base32, 1));
  const otherApp = await h.createApp('open');
  const otherAppSession = (await h.exchange(await h.ceremony('ann@example.com', { pk: otherApp.publishable_key }), { pk: otherApp.publishable_key })).json().session_id as string;
  const before = await snapshot(h);
  const refusals: [string, Awaited<ReturnType<typeof h.bff>>, number, string][] = [
    ['another session family of the same member', await h.bff('POST', AC.exchange, body, { session: other.session_id }), 404, 'not_found'],
    ['another application\'s publishable key (with its own session)', await h.bff('POST', AC.exchange, body, { session: otherAppSession, pk: otherApp.publishable_key }), 404, 'not_found'],
    ['another application\'s publishable key with this session', await h.bff('POST', AC.exchange, body, { session: grant.session_id, pk: otherApp.publishable_key }), 401, 'member_session_invalid'],
    ['another bearer key', await h.bff('POST', AC.exchange, body, { session: grant.session_id, token: h.owner.token }), 403, 'forbidden'],
    ['a wrong verifier', await h.bff('POST', AC.exchange, { ...body, code_verifier: pkcePair().verifier }, { session: grant.session_id }), 400, 'account_center_result_invalid'],
    ['another return_url', await h.bff('POST', AC.exchange, { ...body, return_url: `${h.callback}?x=1` }, { session: grant.session_id }), 400, 'account_center_return_url_invalid'],
    ['an unknown code', await h.bff('POST', AC.exchange, { ...body, code: `acr_${'A'.repeat(43)}` }, { session: grant.session_id }), 404, 'not_found'],
  ];
  for (const [what, r, status, errCode] of refusals) {
    t.equal(r.statusCode, status, `${what}: ${r.body}`);
    t.equal(r.json().code, errCode, what);
  }
  t.ok(await snapshot(h) === before, 'refused exchanges change nothing');
  const x = await h.bff('POST', AC.exchange, body, { session: grant.session_id });
  t.equal(x.statusCode, 200, x.body);
  t.same(x.json(), { member_id: member.id, changes: ['totp_enrolled', 'recovery_codes_generated'], factors: [{ type: 'totp', enrolled_at: stored.totp_enrolled_at }], recovery_codes_remaining: 10, restricted_until: null, approval: null });
  t.notOk(x.body.includes(base32) || codes.some((c) => x.body.includes(c)), 'no secret in the summary');
  const mid = await snapshot(h);
  const replay = await h.bff('POST', AC.exchange, body, { session: grant.session_id });
  t.equal(replay.statusCode, 409);
  t.equal(replay.json().code, 'account_center_result_replayed');
  t.ok(await snapshot(h) === mid, 'a replay changes nothing');

  const audit: { action: string; actor: { type: string; id: string } }[] = [];
  for await (const r of h.store.all<{ action: string; actor: { type: string; id: string } }>('audit_log')) audit.push(r);
  const changes = audit.filter((e) => e.action.startsWith('member_auth.hosted_member.'));
  t.same(changes.map((e) => e.action), ['member_auth.hosted_member.invite', 'member_auth.hosted_member.totp_enrol', 'member_auth.hosted_member.recovery_codes_generate']);
  t.same(changes.slice(1).map((e) => e.actor), [{ type: 'hosted_member', id: member.id }, { type: 'hosted_member', id: member.id }], 'the member is the actor');
  const auditText = JSON.stringify(audit);
  t.notOk(auditText.includes(stored.totp_secret!) || codes.some((c) => auditText.includes(c)) || stored.recovery_codes!.some((c) => auditText.includes(c.digest)), 'no secret or digest in the audit log');

  // The next sign-in asks for the new factor.
  h.advance(60);
  const c = await h.ceremony('ann@example.com', { totp: () => codeOf(h, base32) });
  t.match(c.code, /^hrc_/, 'a sign-in with the enrolled factor');
});

t.test('begin: the session\'s member, a registered return_url at the application\'s origin, S256; refusals change nothing', async (t) => {
  const h = await setupHosted(t);
  await h.invite('bo@example.com');
  const grant = await signIn(h, 'bo@example.com');
  await h.call('POST', '/v1/tenant/member-auth/redirect-urls', { url: 'http://127.0.0.2:9/back' });
  const { challenge } = pkcePair();
  const body = { return_url: h.callback, state: 's', code_challenge: challenge };
  const before = await snapshot(h);
  const cases: [string, Awaited<ReturnType<typeof h.bff>>, number, string][] = [
    ['an unregistered return_url', await h.bff('POST', AC.handoffs, { ...body, return_url: `${h.callback}/x` }, { session: grant.session_id }), 400, 'account_center_return_url_invalid'],
    ['a registered URL at another origin', await h.bff('POST', AC.handoffs, { ...body, return_url: 'http://127.0.0.2:9/back' }, { session: grant.session_id }), 400, 'account_center_return_url_invalid'],
    ['plain PKCE', await h.bff('POST', AC.handoffs, { ...body, code_challenge_method: 'plain' }, { session: grant.session_id }), 400, 'invalid_request'],
    ['no session', await h.bff('POST', AC.handoffs, body), 400, 'invalid_request'],
    ['an unknown session', await h.bff('POST', AC.handoffs, body, { session: `mss_${'A'.repeat(43)}` }), 401, 'member_session_invalid'],
    ['a key other than the BFF principal', await h.bff('POST', AC.handoffs, body, { session: grant.session_id, token: h.owner.token }), 403, 'forbidden'],
    ['a caller-named member', await h.bff('POST', AC.handoffs, { ...body, member_id: 'hsub_x' }, { session: grant.session_id }), 400, 'caller_identity_refused'],
  ];
  for (const [what, r, status, code] of cases) {
    t.equal(r.statusCode, status, `${what}: ${r.body}`);
    t.equal(r.json().code, code, what);
  }
  t.ok(await snapshot(h) === before, 'nothing was written');
});

t.test('the expected member only: another address gets the same page, no email, and no code works', async (t) => {
  const h = await setupHosted(t);
  await h.invite('cy@example.com');
  await h.invite('dee@example.com');
  const grant = await signIn(h, 'cy@example.com');
  const pkce = pkcePair();
  const handoff = (await h.bff('POST', AC.handoffs, { return_url: h.callback, state: 's', code_challenge: pkce.challenge }, { session: grant.session_id })).json();
  const b = centerBrowser(h, new URL(handoff.handoff_url).pathname);
  await b.get();
  const mailsBefore = h.sink.all.length;
  const page = await b.submit('email', { email: 'dee@example.com' });
  t.equal(page.statusCode, 200);
  t.match(page.body, /a six-digit code is on its way/, 'the same page as for the right address');
  t.notMatch(page.body, /dee@|cy@/, 'no address shown');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(h.sink.all.length, mailsBefore, 'no email to anyone');
  for (let i = 0; i < 4; i++) t.match((await b.submit('code', { code: String(100000 + i) })).body, /not right/);
  const locked = await b.post('code', { code: '123456' });
  t.equal(pageError(locked.body), 'hosted_attempts_exhausted', 'the fifth wrong code locks the visit');
  t.equal(pageError((await b.post('finish')).body), 'hosted_attempts_exhausted', 'nothing is issued');
});

t.test('removing a factor needs a current, unused code; page refusals (flow cookie, CSRF, order) change nothing', async (t) => {
  const h = await setupHosted(t);
  const member = await h.invite('eve@example.com');
  const grant = await signIn(h, 'eve@example.com');
  const { b } = await openCenter(h, grant.session_id, 'eve@example.com');
  const { base32 } = await enrolOnPage(h, b);
  const used = codeOf(h, base32);
  const before = await snapshot(h);
  const refusals: [string, Awaited<ReturnType<typeof b.post>>, number, string][] = [
    ['no flow cookie', await b.post('remove', { code: used }, { noCookie: true }), 403, 'hosted_flow_mismatch'],
    ['no CSRF token', await b.post('remove', { code: used }, { csrf: null }), 403, 'hosted_csrf_failed'],
    ['a forged CSRF token', await b.post('remove', { code: used }, { csrf: 'A'.repeat(43) }), 403, 'hosted_csrf_failed'],
    ['enrolling over an existing factor', await b.post('enrol'), 409, 'account_center_step_out_of_order'],
  ];
  for (const [what, r, status, code] of refusals) {
    t.equal(r.statusCode, status, `${what}: ${r.body.slice(0, 200)}`);
    t.equal(pageError(r.body), code, what);
  }
  t.ok(await snapshot(h) === before, 'refusals change nothing');
  const reused = await b.submit('remove', { code: used });
  t.match(reused.body, /not right, or was already used/, 'the code that confirmed enrolment is used');
  t.ok((await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!.totp_secret, 'still enrolled');
  h.advance(30);
  const removed = await b.submit('remove', { code: codeOf(h, base32) });
  t.match(removed.body, /Authenticator app: not set up/);
  t.equal((await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!.totp_secret, null, 'removed');

  // Before the member signed in on the page, no factor step runs.
  const pkce = pkcePair();
  const fresh = (await h.bff('POST', AC.handoffs, { return_url: h.callback, state: 's', code_challenge: pkce.challenge }, { session: grant.session_id })).json();
  const b2 = centerBrowser(h, new URL(fresh.handoff_url).pathname);
  await b2.get();
  const early = await b2.post('recovery-codes');
  t.equal(early.statusCode, 409);
  t.equal(pageError(early.body), 'account_center_step_out_of_order');
  t.equal(pageError((await b2.post('finish')).body), 'account_center_step_out_of_order', 'no result before the member authenticated');
  const stolen = centerBrowser(h, new URL(fresh.handoff_url).pathname);
  t.equal(pageError((await stolen.get()).body), 'hosted_flow_mismatch', 'another browser cannot open the visit');
});

t.test('regenerating recovery codes replaces the set: the old codes stop working', async (t) => {
  const h = await setupHosted(t);
  const member = await h.invite('fay@example.com');
  const grant = await signIn(h, 'fay@example.com');
  const { b } = await openCenter(h, grant.session_id, 'fay@example.com');
  const first = codesOf((await b.post('recovery-codes')).body);
  const digestsBefore = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!.recovery_codes!.map((c) => c.digest);
  const second = codesOf((await b.post('recovery-codes')).body);
  t.equal(second.length, 10);
  t.notOk(first.some((c) => second.includes(c)), 'a new set');
  const after = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!.recovery_codes!.map((c) => c.digest);
  t.notOk(digestsBefore.some((d) => after.includes(d)), 'no digest of the old set remains');
});

t.test('expiry: a handoff lives 15 minutes, its result 120 s; an expired one changes nothing', async (t) => {
  const h = await setupHosted(t);
  await h.invite('gus@example.com');
  const grant = await signIn(h, 'gus@example.com');
  const idle = (await h.bff('POST', AC.handoffs, { return_url: h.callback, state: 's', code_challenge: pkcePair().challenge }, { session: grant.session_id })).json();
  const { pkce, b } = await openCenter(h, grant.session_id, 'gus@example.com');
  const fin = await b.post('finish');
  const code = new URL(String(fin.headers.location)).searchParams.get('code')!;
  h.advance(121);
  const before = await snapshot(h);
  const late = await h.bff('POST', AC.exchange, { code, code_verifier: pkce.verifier, return_url: h.callback }, { session: grant.session_id });
  t.equal(late.statusCode, 400);
  t.equal(late.json().code, 'account_center_result_invalid', 'the result expired');
  t.ok(await snapshot(h) === before, 'nothing changed');
  h.advance(900);
  const page = await centerBrowser(h, new URL(idle.handoff_url).pathname).get();
  t.equal(page.statusCode, 403);
  t.equal(pageError(page.body), 'hosted_authorization_expired', 'the handoff expired');
});
