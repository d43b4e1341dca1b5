// The Account Center keeps the last TOTP factor of a member whose Hosted application requires TOTP
// (docs/platform/account-center.md "Account Center"): removing it would refuse every later sign-in
// (hosted_totp_required), so it is refused with 409 hosted_totp_last_factor, shown on the page as a
// readable message with the way back to the settings, and nothing is counted, used or changed.
import t from 'tap';
import { setupHosted, pageError } from './hosted-auth-harness.ts';
import { codeOfHex, openCenter, signIn, snapshot } from './account-center-harness.ts';
import { HOSTED_COLLECTIONS } from '../../../api/member-auth/hosted-records.ts';

t.test('require_totp: the member\'s last TOTP factor is not removed (409, a readable page), and the visit goes on', async (t) => {
  const h = await setupHosted(t, { requireTotp: true });
  const member = await h.invite('kim@example.com');
  const { secretHex } = await h.members.enrollTotp(member.id);
  const totp = () => codeOfHex(h, secretHex);
  const grant = await signIn(h, 'kim@example.com', totp);
  h.advance(30);
  const { b, handoff } = await openCenter(h, grant.session_id, 'kim@example.com', totp);
  h.advance(30);

  const before = await snapshot(h);
  const refused = await b.post('remove', { code: totp() });
  t.equal(refused.statusCode, 409, 'refused');
  t.equal(pageError(refused.body), 'hosted_totp_last_factor', 'with its code on the page');
  t.match(refused.body, /requires an authenticator app to sign in, so your only one cannot be removed/, 'a readable reason');
  t.match(refused.body, /Lost your authenticator\?/, 'and what to do when it is lost');
  t.match(refused.body, new RegExp(`<a id="back" href="/v1/account-center/${handoff.id}">`), 'a link back to the settings');
  t.match(refused.body, /<h1>Authenticator kept<\/h1>/);
  t.notMatch(refused.body, new RegExp(secretHex), 'no secret on the page');
  t.equal(await snapshot(h), before, 'nothing changed: no attempt counted, no code step used, no audit entry');
  t.ok((await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!.totp_secret, 'the factor is kept');

  const page = await b.get();
  t.equal(page.statusCode, 200, 'the visit goes on');
  t.match(page.body, /Authenticator app: set up/);
  t.equal((await b.post('finish')).statusCode, 303, 'and finishes');

  // The member still signs in with the factor it kept.
  h.advance(30);
  const again = await signIn(h, 'kim@example.com', totp);
  t.ok(again.session_id, 'a later sign-in works');
});

t.test('without require_totp, the same removal goes through (the refusal is the application\'s rule, not a general one)', async (t) => {
  const h = await setupHosted(t);
  const member = await h.invite('lee@example.com');
  const { secretHex } = await h.members.enrollTotp(member.id);
  const totp = () => codeOfHex(h, secretHex);
  const grant = await signIn(h, 'lee@example.com', totp);
  h.advance(30);
  const { b } = await openCenter(h, grant.session_id, 'lee@example.com', totp);
  h.advance(30);
  const removed = await b.submit('remove', { code: totp() });
  t.match(removed.body, /Authenticator app: not set up/);
  t.equal((await HOSTED_COLLECTIONS.members.in(h.store).get(member.id))!.totp_secret, null, 'removed');
});
