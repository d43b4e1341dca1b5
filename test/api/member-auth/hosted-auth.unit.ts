// Hosted Auth over HTTP, without a browser (platform-api.md "Confidential exchange rules" 11, 12 and
// "BFF helper and browser rules"; docs/platform/hosted-auth.md): the ceremony through the page's forms
// with a real SMTP sink, the exchange and the session, and each refusal with its status and code, shown
// to change nothing it should not.
import t from 'tap';
import { TOTP, Secret } from 'otpauth';
import { setupHosted, HOSTED, pageError, pkcePair } from './hosted-auth-harness.ts';

t.test('the ceremony: email code, one-time result to the callback, PKCE exchange, a member session', async (t) => {
  const h = await setupHosted(t, { enrollment: 'open' });
  const a = await h.begin({ state: 'bff-state-1' });
  t.match(a.authorization_url, /^http:\/\/localhost(:80)?\/v1\/hosted-auth\/hau_[A-Za-z0-9_-]{43}$/, 'the page on the API\'s public base');
  t.ok(Date.parse(a.expires_at) - Date.now() <= 600_000 && Date.parse(a.expires_at) - Date.now() > 590_000, 'expires in 10 minutes');
  const b = h.browser(a.path);
  const page = await b.get();
  t.equal(page.statusCode, 200);
  const csp = String(page.headers['content-security-policy']);
  t.match(csp, /default-src 'none'/, 'no script source at all');
  t.notMatch(csp, /script-src|unsafe-inline/);
  t.match(csp, /frame-ancestors 'none'/);
  t.match(csp, new RegExp(`form-action 'self' ${h.origin.replace(/[.:/]/g, '\\$&')}`), 'forms go to the page and the application only');
  t.equal(page.headers['x-frame-options'], 'DENY');
  t.equal(page.headers['cache-control'], 'no-store');
  t.equal(page.headers['referrer-policy'], 'no-referrer');
  const setCookie = String(page.headers['set-cookie']);
  t.match(setCookie, /^__Host-hauth-[A-Za-z0-9_-]+=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=\d+$/, 'a __Host- SameSite=Lax flow cookie');
  t.notMatch(page.body, /<script/i, 'no script in the page');

  const email = 'Alice@Example.com';
  const sent = await b.submit('email', { email });
  t.equal(sent.statusCode, 200);
  t.match(sent.body, /a\*\*\*@example\.com/, 'the address shown masked');
  const mail = await h.sink.next('alice@example.com');
  t.match(mail.subject, /sign-in code/);
  t.match(mail.from, /auth@platform\.test/);
  const code = /\b(\d{6})\b/.exec(mail.text)![1]!;
  const done = await b.post('code', { code });
  t.equal(done.statusCode, 303, 'back to the application');
  const loc = new URL(String(done.headers.location));
  t.equal(`${loc.origin}${loc.pathname}`, h.callback, 'exactly the registered callback');
  t.equal(loc.searchParams.get('state'), 'bff-state-1', 'the BFF\'s state, unchanged');
  t.match(loc.searchParams.get('code'), /^hrc_[A-Za-z0-9_-]{43}$/);

  const x = await h.exchange({ a, code: loc.searchParams.get('code')! });
  t.equal(x.statusCode, 201, x.body);
  const grant = x.json();
  t.match(grant, { session_id: /^mss_/, refresh_credential: /^mrc_/, application_id: h.app.id, member: { id: /^hsub_[0-9a-f]{26}$/, created: true } });
  const ctx = await h.bff('GET', HOSTED.session, undefined, { session: grant.session_id });
  t.equal(ctx.statusCode, 200, ctx.body);
  t.match(ctx.json(), { member: { id: grant.member.id }, application: { id: h.app.id, kind: 'hosted', version: h.app.version }, amr: ['email_otp'], acr: null });
  const refreshed = await h.bff('POST', HOSTED.refresh, { refresh_credential: grant.refresh_credential });
  t.equal(refreshed.statusCode, 200, 'the session refreshes as a BYO one does');

  // A second sign-in of the same address is the same member (open enrolment made it once).
  const again = await h.ceremony('alice@example.com');
  const x2 = await h.exchange(again);
  t.match(x2.json(), { member: { id: grant.member.id, created: false } });
  const list = await h.call('GET', `/v1/tenant/member-auth/applications/${h.app.id}/members`);
  t.match(list.json().data, [{ id: grant.member.id, email: 'alice@example.com', source: 'open', status: 'active', totp: false }]);
  const audit: { action: string }[] = [];
  for await (const r of h.store.all<{ action: string }>('audit_log')) audit.push(r);
  const creates = audit.filter((e) => e.action === 'member_auth.session.create');
  t.equal(creates.length, 2, 'each session is audit-logged');
  t.notOk(JSON.stringify(audit).includes(code), 'no code in the audit log');
  t.notOk(JSON.stringify(creates).includes('alice@'), 'no address in the session entries');
  const stored = await h.snapshot();
  t.notOk(stored.includes(code), 'the email code is not stored');
  t.notOk(stored.includes(loc.searchParams.get('code')!), 'the result code is not stored');
});

t.test('begin: the exact callback, S256 only, the application\'s BFF principal only; a refusal changes nothing', async (t) => {
  const h = await setupHosted(t);
  const before = await h.snapshot();
  const { challenge } = pkcePair();
  const body = { redirect_uri: h.callback, state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
  const cases: [string, Awaited<ReturnType<typeof h.bff>>, number, string][] = [
    ['another redirect_uri', await h.bff('POST', HOSTED.begin, { ...body, redirect_uri: `${h.callback}/` }), 400, 'hosted_redirect_mismatch'],
    ['a redirect_uri differing in case', await h.bff('POST', HOSTED.begin, { ...body, redirect_uri: h.callback.replace('callback', 'Callback') }), 400, 'hosted_redirect_mismatch'],
    ['plain PKCE', await h.bff('POST', HOSTED.begin, { ...body, code_challenge_method: 'plain' }), 400, 'invalid_request'],
    ['a malformed challenge', await h.bff('POST', HOSTED.begin, { ...body, code_challenge: 'short' }), 400, 'invalid_request'],
    ['a state over 512 characters', await h.bff('POST', HOSTED.begin, { ...body, state: 'x'.repeat(513) }), 400, 'invalid_request'],
    ['no PKCE', await h.bff('POST', HOSTED.begin, { redirect_uri: h.callback, state: 's' }), 400, 'invalid_request'],
    ['a key that is not the BFF principal', await h.bff('POST', HOSTED.begin, body, { token: h.owner.token }), 403, 'forbidden'],
    ['another tenant\'s key with this publishable key', await h.bff('POST', HOSTED.begin, body, { token: h.otherOwner.token }), 404, 'not_found'],
    ['a caller-chosen member', await h.call('POST', HOSTED.begin, { ...body, member_id: 'hsub_x' }, h.bffKey.token, { 'x-svc-publishable-key': h.app.publishable_key }), 400, 'caller_identity_refused'],
    ['no bearer key', await h.server.inject({ method: 'POST', url: HOSTED.begin, headers: { 'content-type': 'application/json', 'x-svc-publishable-key': h.app.publishable_key }, payload: JSON.stringify(body) }), 401, 'unauthorized'],
  ];
  for (const [what, r, status, code] of cases) {
    t.equal(r.statusCode, status, `${what}: ${status}`);
    t.equal(r.json().code, code, `${what}: ${code}`);
  }
  t.equal(await h.snapshot(), before, 'nothing changed');
});

t.test('the page: the flow cookie and the CSRF token bind the forms to the browser that opened it', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const a = await h.begin();
  const b = h.browser(a.path);
  t.equal((await b.get()).statusCode, 200);
  const before = await h.snapshot();
  const other = h.browser(a.path);
  const stolen = await other.get();
  t.equal(stolen.statusCode, 403, 'another browser opening the same URL');
  t.equal(pageError(stolen.body), 'hosted_flow_mismatch');
  t.equal(stolen.headers['set-cookie'], undefined, 'gets no cookie');
  t.equal(stolen.headers['x-frame-options'], 'DENY', 'refusal pages carry the same headers');
  for (const [what, r, code] of [
    ['no CSRF token', await b.post('email', { email: 'alice@acme.test' }, { csrf: null }), 'hosted_csrf_failed'],
    ['a wrong CSRF token', await b.post('email', { email: 'alice@acme.test' }, { csrf: 'A'.repeat(43) }), 'hosted_csrf_failed'],
    ['no flow cookie', await b.post('email', { email: 'alice@acme.test' }, { noCookie: true }), 'hosted_flow_mismatch'],
  ] as const) {
    t.equal(r.statusCode, 403, `${what}: 403`);
    t.equal(pageError(r.body), code, `${what}: ${code}`);
  }
  const unknown = await h.browser('/v1/hosted-auth/hau_' + 'A'.repeat(43)).get();
  t.equal(unknown.statusCode, 404);
  t.equal(pageError(unknown.body), 'not_found');
  t.equal(await h.snapshot(), before, 'nothing changed');
  t.same(h.sink.all, [], 'nothing was sent');
  const bad = await b.submit('email', { email: 'not an address' });
  t.match(bad.body, /Enter a valid email address/, 'a malformed address: the form again');
  t.equal(await h.snapshot(), before, 'still nothing changed');
});

t.test('five wrong email codes lock the sign-in; the right code then fails too', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const a = await h.begin();
  const b = h.browser(a.path);
  await b.get();
  await b.submit('email', { email: 'alice@acme.test' });
  const code = await h.sink.nextCode('alice@acme.test');
  const wrong = code === '000000' ? '111111' : '000000';
  const withoutAuthorizations = async () => { const s = JSON.parse(await h.snapshot()) as Record<string, unknown>; delete s.member_auth_hosted_authorizations; return JSON.stringify(s); };
  const before = await withoutAuthorizations();
  for (let i = 1; i <= 4; i++) {
    const r = await b.submit('code', { code: wrong });
    t.equal(r.statusCode, 200, `wrong code ${i}: the form again`);
    t.match(r.body, /That code is not right/);
  }
  const fifth = await b.post('code', { code: wrong });
  t.equal(fifth.statusCode, 403);
  t.equal(pageError(fifth.body), 'hosted_attempts_exhausted', 'the fifth locks it');
  const right = await b.post('code', { code });
  t.equal(right.statusCode, 403);
  t.equal(pageError(right.body), 'hosted_attempts_exhausted', 'the right code no longer works');
  t.equal(pageError((await b.get()).body), 'hosted_attempts_exhausted', 'the page says so');
  t.equal(await withoutAuthorizations(), before, 'no member, result, session or audit entry came of it');
  const stored = JSON.parse(await h.snapshot()).member_auth_hosted_authorizations as { status: string; attempts: number; email: string | null }[];
  t.match(stored, [{ status: 'locked', attempts: 5, email: null }], 'locked, the address dropped');
});

t.test('resend: only the newest code works; at most three codes, one per 30 s', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const a = await h.begin();
  const b = h.browser(a.path);
  await b.get();
  await b.submit('email', { email: 'alice@acme.test' });
  const first = await h.sink.nextCode('alice@acme.test');
  t.match((await b.submit('resend')).body, /Wait a little/, 'too soon');
  h.advance(31);
  t.match((await b.submit('resend')).body, /We sent a new code/);
  const second = await h.sink.nextCode('alice@acme.test');
  h.advance(31);
  await b.submit('resend');
  const third = await h.sink.nextCode('alice@acme.test');
  h.advance(31);
  t.match((await b.submit('resend')).body, /No more codes can be sent/, 'a fourth is refused');
  t.equal(h.sink.sentTo('alice@acme.test').length, 3, 'three emails in all');
  for (const old of [first, second]) {
    if (old !== third) t.match((await b.submit('code', { code: old })).body, /That code is not right/, 'an older code is wrong');
  }
  const done = await b.post('code', { code: third });
  t.equal(done.statusCode, 303, 'the newest works');
});

t.test('an expired authorization: the page refuses, and nothing changes', async (t) => {
  const h = await setupHosted(t);
  await h.invite('alice@acme.test');
  const a = await h.begin();
  const b = h.browser(a.path);
  await b.get();
  await b.submit('email', { email: 'alice@acme.test' });
  const code = await h.sink.nextCode('alice@acme.test');
  h.advance(601);
  const before = await h.snapshot();
  const r = await b.post('code', { code });
  t.equal(r.statusCode, 403);
  t.equal(pageError(r.body), 'hosted_authorization_expired');
  const fresh = await h.browser((await h.begin()).path);
  h.advance(601);
  const late = await fresh.get();
  t.equal(pageError(late.body), 'hosted_authorization_expired', 'opened too late');
  t.equal(late.headers['set-cookie'], undefined);
  const after = JSON.parse(await h.snapshot()) as Record<string, unknown[]>;
  const was = JSON.parse(before) as Record<string, unknown[]>;
  t.equal(after.member_auth_hosted_authorizations!.length, was.member_auth_hosted_authorizations!.length + 1, 'only the second authorization was added');
  t.same(after.member_auth_hosted_authorizations!.filter((x) => (x as { id: string }).id === a.id), was.member_auth_hosted_authorizations!.filter((x) => (x as { id: string }).id === a.id), 'the expired one is unchanged');
  t.same(after.member_auth_hosted_results, [], 'no result');
});

t.test('invite_only: an address not invited gets the same page, no email, and no code leads anywhere', async (t) => {
  const h = await setupHosted(t, { enrollment: 'invite_only' });
  await h.invite('alice@acme.test');
  const strip = (html: string) => html.replace(/value="[^"]+"/g, '').replace(/hau_[A-Za-z0-9_-]{43}/g, '').replace(/[a-z]\*\*\*@acme\.test/g, '').replace(/nonce-[^']+'|nonce="[^"]+"/g, '');
  const m = h.browser((await h.begin()).path);
  await m.get();
  const mallory = await m.submit('email', { email: 'mallory@acme.test' });
  const al = h.browser((await h.begin()).path);
  await al.get();
  const alice = await al.submit('email', { email: 'alice@acme.test' });
  t.equal(mallory.statusCode, alice.statusCode);
  t.equal(strip(mallory.body), strip(alice.body), 'the same page for an invited and an uninvited address');
  const aliceCode = await h.sink.nextCode('alice@acme.test');
  t.same(h.sink.sentTo('mallory@acme.test'), [], 'nothing is sent to an address that is not invited');
  const before = await h.snapshot();
  const r = await m.submit('code', { code: aliceCode });
  t.match(r.body, /That code is not right/, 'another flow\'s code does not work');
  for (let i = 0; i < 4; i++) await m.post('code', { code: String(i).repeat(6) });
  const after = JSON.parse(await h.snapshot()) as Record<string, unknown[]>;
  t.same(after.member_auth_hosted_results, [], 'no result');
  t.equal(after.member_auth_hosted_members!.length, 1, 'no member was made');
  t.equal(JSON.stringify(after.audit_log), JSON.stringify((JSON.parse(before) as Record<string, unknown[]>).audit_log), 'no audit entry');
});

t.test('TOTP: challenged after the email code when the member has a factor; each code is accepted once', async (t) => {
  const h = await setupHosted(t);
  const bob = await h.invite('bob@acme.test');
  const { secretHex } = await h.members.enrollTotp(bob.id);
  const now = () => TOTP.generate({ secret: Secret.fromHex(secretHex), algorithm: 'SHA1', digits: 6, period: 30, timestamp: Date.now() });
  const a = await h.begin();
  const b = h.browser(a.path);
  await b.get();
  await b.submit('email', { email: 'bob@acme.test' });
  const challenged = await b.submit('code', { code: await h.sink.nextCode('bob@acme.test') });
  t.match(challenged.body, /id="totp"/, 'the TOTP form');
  const code = now();
  const wrong = await b.submit('totp', { code: code === '123456' ? '654321' : '123456' });
  t.match(wrong.body, /authenticator code is not right/, 'a wrong TOTP code: the form again');
  const ok = await b.post('totp', { code });
  t.equal(ok.statusCode, 303, 'the right one completes');
  const x = await h.exchange({ a, code: new URL(String(ok.headers.location)).searchParams.get('code')! });
  t.equal(x.statusCode, 201);
  const ctx = await h.bff('GET', HOSTED.session, undefined, { session: x.json().session_id });
  t.same(ctx.json().amr, ['email_otp', 'otp', 'mfa']);

  const a2 = await h.begin();
  const b2 = h.browser(a2.path);
  await b2.get();
  await b2.submit('email', { email: 'bob@acme.test' });
  await b2.submit('code', { code: await h.sink.nextCode('bob@acme.test') });
  const reused = await b2.submit('totp', { code });
  t.match(reused.body, /already used/, 'the same TOTP code a second time is refused');
  t.equal(reused.statusCode, 200);
});

t.test('require_totp: a member without a factor is refused clearly, and gets no result', async (t) => {
  const h = await setupHosted(t, { requireTotp: true });
  await h.invite('carol@acme.test');
  const a = await h.begin();
  const b = h.browser(a.path);
  await b.get();
  await b.submit('email', { email: 'carol@acme.test' });
  const r = await b.post('code', { code: await h.sink.nextCode('carol@acme.test') });
  t.equal(r.statusCode, 403);
  t.equal(pageError(r.body), 'hosted_totp_required');
  t.match(r.body, /requires an authenticator app/);
  t.equal(pageError((await b.get()).body), 'hosted_totp_required', 'and stays refused');
  t.same(JSON.parse(await h.snapshot()).member_auth_hosted_results, [], 'no result');
});


t.test('the page takes forms: a JSON body or a repeated field is a blank form, refused as one', async (t) => {
  const h = await setupHosted(t);
  const a = await h.begin();
  const b = h.browser(a.path);
  await b.get();
  const before = await h.snapshot();
  const json = await h.server.inject({ method: 'POST', url: `${a.path}/email`, headers: { 'content-type': 'application/json', cookie: b.cookie! }, payload: JSON.stringify({ csrf: { x: 1 }, email: ['a@b.c'] }) });
  t.equal(json.statusCode, 403);
  t.equal(pageError(json.body), 'hosted_csrf_failed');
  const page = await b.get();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
  const twice = await h.server.inject({ method: 'POST', url: `${a.path}/email`, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: b.cookie! }, payload: `csrf=${csrf}&email=a%40acme.test&email=b%40acme.test` });
  t.equal(pageError(twice.body), 'hosted_csrf_failed', 'a field given twice');
  t.equal(await h.snapshot(), before, 'nothing changed');
});
