// Lost-all-factor recovery on the Hosted Auth page (platform-api.md "Confidential exchange rules" 13;
// docs/platform/account-center.md "Lost-all-factor recovery"): one saved recovery code, a fresh email
// code, a replacement TOTP factor confirmed by a code, a new code set acknowledged, the security notice
// accepted, in that order and no other; then every earlier session is revoked and member actions are
// refused for 24 hours and until a fresh sign-in after them. Real SMTP sink; the platform's clock moves.
import t from 'tap';
import { Secret } from 'otpauth';
import { setupHosted, HOSTED, pageError, type HostedHarness } from './hosted-auth-harness.ts';
import { centerBrowser, codeOf, codesOf, enrolOnPage, openCenter, signIn, snapshot } from './account-center-harness.ts';
import { HOSTED_COLLECTIONS } from '../../../api/member-auth/hosted-records.ts';
import { checkHostedMemberAuthority, recoveryRestricted } from '../../../api/member-auth/hosted-members.ts';
import { SESSION_COLLECTIONS } from '../../../api/member-auth/member-session-records.ts';

/** A member with a TOTP factor and two generated code sets (the first replaced): its factor and both sets. */
async function memberWithFactor(h: HostedHarness, email: string) {
  const member = await h.invite(email);
  const grant = await signIn(h, email);
  const { b } = await openCenter(h, grant.session_id, email);
  const { base32 } = await enrolOnPage(h, b);
  const oldCodes = codesOf((await b.post('recovery-codes')).body);
  const codes = codesOf((await b.post('recovery-codes')).body);
  await b.post('finish');
  return { member, base32, oldCodes, codes };
}

/** Begins a sign-in and reaches its TOTP step: the browser on the Hosted Auth page. */
async function atTotpStep(h: HostedHarness, email: string) {
  const a = await h.begin();
  const b = centerBrowser(h, a.path);
  await b.get();
  await b.submit('email', { email });
  const page = await b.submit('code', { code: await h.sink.nextCode(email) });
  return { a, b, page };
}

t.test('recovery: every step in order, then factors replaced, sessions revoked, a notice emailed, and a 24-hour restriction', async (t) => {
  // More form POSTs from one address than a minute's default budget (30): the platform's clock moves,
  // the rate limits' windows do not (page-rate-limit.unit.ts tests the budget).
  const h = await setupHosted(t, { env: { API_HOSTED_PAGE_RATE_PER_MINUTE: '1000' } });
  const { member, base32, oldCodes, codes } = await memberWithFactor(h, 'gil@example.com');
  h.advance(60);
  const before = await signIn(h, 'gil@example.com', () => codeOf(h, base32));
  t.equal((await h.bff('GET', HOSTED.session, undefined, { session: before.session_id })).statusCode, 200, 'a session from before the recovery');

  const { a, b, page } = await atTotpStep(h, 'gil@example.com');
  t.match(page.body, /Lost your authenticator\?/, 'the TOTP step offers recovery');

  // Skipping ahead is refused, with a clear code, and changes nothing.
  const snap0 = await snapshot(h);
  for (const step of ['recovery-code', 'recovery-email', 'recovery-enrol', 'recovery-codes', 'recovery-ack', 'recovery-accept']) {
    const r = await b.post(step, { code: '123456', ack: 'yes', accept: 'yes' });
    t.equal(r.statusCode, 409, `${step} before "lost" is refused`);
    t.equal(pageError(r.body), 'account_center_step_out_of_order', step);
  }
  t.ok(await snapshot(h) === snap0, 'the refusals changed nothing');

  let r = await b.submit('lost');
  t.match(r.body, /Use a recovery code/);
  r = await b.submit('recovery-code', { code: oldCodes[0]! });
  t.match(r.body, /recovery code is not right/, 'a code of the replaced set does not work');
  r = await b.submit('recovery-code', { code: 'zzzzz-zzzzz' });
  t.match(r.body, /recovery code is not right/);
  const early = await b.post('recovery-enrol', { code: '123456' });
  t.equal(pageError(early.body), 'account_center_step_out_of_order', 'the new factor needs the recovery code and the email code first');

  r = await b.submit('recovery-code', { code: codes[3]!.toUpperCase() });
  t.match(r.body, /Check your email/, 'a saved code (any case) leads to a fresh email code');
  let stored = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!;
  t.equal(stored.recovery_codes!.filter((c) => c.used_at !== null).length, 1, 'the saved code is used up');
  t.equal(Secret.fromHex(stored.totp_secret!).base32, base32, 'the factor is unchanged so far');
  const fresh = await h.sink.nextCode('gil@example.com');
  t.equal(pageError((await b.post('recovery-accept', { accept: 'yes' })).body), 'account_center_step_out_of_order', 'the notice cannot be accepted yet');
  r = await b.submit('recovery-email', { code: fresh === '000000' ? '111111' : '000000' });
  t.match(r.body, /not right/, 'a wrong email code');
  r = await b.submit('recovery-email', { code: fresh });
  t.match(r.body, /Set up your authenticator app/, 'then the replacement factor');
  const newBase32 = /id="totp-secret">([A-Z2-7]+)</.exec(r.body)![1]!;
  t.not(newBase32, base32, 'a new secret');
  t.equal(pageError((await b.post('recovery-codes')).body), 'account_center_step_out_of_order', 'codes come after the factor is confirmed');
  r = await b.submit('recovery-enrol', { code: codeOf(h, base32) === codeOf(h, newBase32) ? '000000' : codeOf(h, base32) });
  t.match(r.body, /not right/, 'a code of the lost factor does not confirm the new one');
  r = await b.submit('recovery-enrol', { code: codeOf(h, newBase32) });
  t.match(r.body, /New recovery codes/);
  t.equal(pageError((await b.post('recovery-ack', { ack: 'yes' })).body), 'account_center_step_out_of_order', 'nothing to acknowledge before the codes are shown');
  const shown = await b.post('recovery-codes');
  t.equal(shown.statusCode, 200);
  const newCodes = codesOf(shown.body);
  t.equal(newCodes.length, 10, 'ten new codes, shown in this answer');
  t.match(shown.body, /type="checkbox" name="ack"/, 'with a checkbox acknowledgement');
  r = await b.submit('recovery-ack', {});
  t.match(r.body, /Tick the box/, 'the box must be ticked');
  r = await b.submit('recovery-ack', { ack: 'yes' });
  t.match(r.body, /Security notice/);
  r = await b.submit('recovery-accept', {});
  t.match(r.body, /Tick the box/);
  stored = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!;
  t.equal(Secret.fromHex(stored.totp_secret!).base32, base32, 'still nothing replaced before the notice is accepted');
  t.notOk(stored.restricted_until, 'and no restriction');

  const done = await b.post('recovery-accept', { accept: 'yes' });
  t.equal(done.statusCode, 303, 'back to the application');
  const loc = new URL(String(done.headers.location));
  t.equal(`${loc.origin}${loc.pathname}`, h.callback);
  const now = h.platform.clock();
  stored = (await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!;
  t.equal(Secret.fromHex(stored.totp_secret!).base32, newBase32, 'the factor is replaced');
  t.equal(stored.recovery_codes!.length, 10);
  t.ok(stored.recovery_codes!.every((c) => c.used_at === null), 'the new set, unused');
  t.ok(Math.abs(Date.parse(stored.restricted_until!) - (now + 86_400_000)) < 5_000, 'restricted for 24 hours');
  const notice = await h.sink.next('gil@example.com');
  t.match(notice.subject, /factors were replaced/, 'a security notification is emailed');
  t.notOk(newCodes.some((c) => notice.text.includes(c)) || notice.text.includes(newBase32), 'with no secret in it');

  // Sessions from before are revoked; the recovered sign-in's session is restricted.
  const old = await h.bff('GET', HOSTED.session, undefined, { session: before.session_id });
  t.equal(old.statusCode, 401, 'the earlier session is revoked');
  t.equal(old.json().code, 'member_session_invalid');
  const families = await SESSION_COLLECTIONS.families.in(h.store).byIndex(`${h.app.id}\x00${member.id}\x00`);
  t.ok(families.every((f) => f.status === 'revoked' && f.revoked_reason === 'member_recovery'), 'every earlier family revoked at recovery');
  const x = await h.exchange({ a, code: loc.searchParams.get('code')! });
  t.equal(x.statusCode, 201, x.body);
  const ctx = await h.bff('GET', HOSTED.session, undefined, { session: x.json().session_id });
  t.equal(ctx.json().restricted_until, stored.restricted_until, 'the session context shows the restriction');
  t.match(ctx.json().amr, ['email_otp', 'recovery_code', 'otp']);
  const family = (await SESSION_COLLECTIONS.families.in(h.store).byIndex(`${h.app.id}\x00${member.id}\x00`)).find((f) => f.status === 'active')!;
  await t.rejects(checkHostedMemberAuthority(h.store, member.id, family.authenticated_at, h.platform.clock()), { code: 'member_recovery_restricted' }, 'member actions refused now');
  h.advance(86_400 + 1);
  await t.rejects(checkHostedMemberAuthority(h.store, member.id, family.authenticated_at, h.platform.clock()), { code: 'member_recovery_restricted' }, 'still refused after 24 h for a sign-in made during them');
  const after = await signIn(h, 'gil@example.com', () => codeOf(h, newBase32));
  const afterCtx = (await h.bff('GET', HOSTED.session, undefined, { session: after.session_id })).json();
  await t.resolves(checkHostedMemberAuthority(h.store, member.id, afterCtx.session.authenticated_at, h.platform.clock()), 'a fresh sign-in after the 24 hours restores authority');

  // The recovery code used is gone with the old set; the audit log names the member and holds no secret.
  const again = await atTotpStep(h, 'gil@example.com');
  await again.b.submit('lost');
  t.match((await again.b.submit('recovery-code', { code: codes[3]! })).body, /recovery code is not right/, 'a used code never works again');
  const audit: { action: string; actor: { type: string }; after: unknown }[] = [];
  for await (const e of h.store.all<{ action: string; actor: { type: string }; after: unknown }>('audit_log')) audit.push(e);
  const recover = audit.filter((e) => e.action === 'member_auth.hosted_member.recover');
  t.equal(recover.length, 1);
  t.match(recover[0], { actor: { type: 'hosted_member' }, after: { factors: [{ type: 'totp' }], recovery_codes_remaining: 10, sessions_revoked: 2 } });
  t.ok(audit.some((e) => e.action === 'member_auth.hosted_member.recovery_code_use'), 'the code use is audit-logged');
  const text = JSON.stringify(audit);
  t.notOk(text.includes(stored.totp_secret!) || newCodes.some((c) => text.includes(c)) || stored.recovery_codes!.some((c) => text.includes(c.digest)), 'no secret or digest in the audit log');
});

t.test('recovery: wrong codes lock the sign-in; a flow without the cookie or CSRF token is refused and changes nothing', async (t) => {
  const h = await setupHosted(t);
  await memberWithFactor(h, 'hal@example.com');
  const { b } = await atTotpStep(h, 'hal@example.com');
  await b.submit('lost');
  const before = await snapshot(h);
  t.equal(pageError((await b.post('recovery-code', { code: 'abcde-fghjk' }, { noCookie: true })).body), 'hosted_flow_mismatch');
  t.equal(pageError((await b.post('recovery-code', { code: 'abcde-fghjk' }, { csrf: null })).body), 'hosted_csrf_failed');
  t.ok(await snapshot(h) === before, 'nothing changed');
  for (let i = 0; i < 4; i++) t.match((await b.submit('recovery-code', { code: `abcde-fghj${i + 2}` })).body, /not right/);
  const locked = await b.post('recovery-code', { code: 'abcde-fghjk' });
  t.equal(pageError(locked.body), 'hosted_attempts_exhausted', 'five wrong codes lock the sign-in');
});

t.test('recoveryRestricted: until restricted_until has passed and a sign-in happened after it', async (t) => {
  const until = '2030-01-02T00:00:00.000Z';
  const u = Date.parse(until);
  t.notOk(recoveryRestricted({ restricted_until: null }, '2030-01-01T00:00:00.000Z', u), 'never recovered');
  t.notOk(recoveryRestricted({}, '2030-01-01T00:00:00.000Z', u), 'a record from before the field');
  t.ok(recoveryRestricted({ restricted_until: until }, '2030-01-01T12:00:00.000Z', u - 1), 'during the 24 hours');
  t.ok(recoveryRestricted({ restricted_until: until }, '2030-01-01T12:00:00.000Z', u + 1), 'after them, with a sign-in from during them');
  t.ok(recoveryRestricted({ restricted_until: until }, until, u + 1), 'a sign-in at the very end is not after it');
  t.notOk(recoveryRestricted({ restricted_until: until }, '2030-01-02T00:00:00.001Z', u + 1), 'a fresh sign-in after them');
});
