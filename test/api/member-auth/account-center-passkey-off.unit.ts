// Account Center passkeys stay off for a tenant that did not opt in (docs/platform/account-center.md
// "Passkeys"): its account page offers no passkey and loads no script, the passkey steps and an approval
// visit are refused with the opt-in's code, and each refusal changes nothing. What the nodes do with a
// credential the API signs anyway under its Account Center key is test/node/account-center-passkey.unit.ts
// ("a tenant that did not opt in cannot be given an Account Center passkey by a malicious API").
import t from 'tap';
import { createHash } from 'node:crypto';
import { setupHosted, pageError, pkcePair } from './hosted-auth-harness.ts';
import { AC, openCenter, signIn, snapshot } from './account-center-harness.ts';
import { PASSKEY_SCRIPT_INTEGRITY, PASSKEY_SCRIPT_PATH } from '../../../api/hosted-page/account-center-script.ts';

t.test('not opted in: the Account Center offers no passkey; its passkey steps and approval visits are refused and change nothing', async (t) => {
  const h = await setupHosted(t);
  await h.invite('ann@example.com');
  const grant = await signIn(h, 'ann@example.com');
  const { b, page } = await openCenter(h, grant.session_id, 'ann@example.com');
  t.match(page.body, /Authenticator app: not set up/, 'signed in on the account page');
  t.notMatch(page.body, /passkey|<script/i, 'no passkey offered, no script on the page');
  t.notMatch(String(page.headers['content-security-policy']), /script-src/, 'and a CSP that allows none');

  const before = await snapshot(h);
  const begin = await b.post('passkey');
  t.equal(begin.statusCode, 409);
  t.equal(pageError(begin.body), 'account_center_opt_in_unregistered', 'adding a passkey is refused');
  const finish = await b.post('passkey-finish', { id: 'AAAA', client_data_json: 'AAAA', attestation_object: 'AAAA', transports: '' });
  t.equal(finish.statusCode, 409);
  t.equal(pageError(finish.body), 'account_center_step_out_of_order', 'an answer without a registration under way is refused');
  const approve = await b.post('approve', { id: 'AAAA', authenticator_data: 'AAAA', client_data_json: 'AAAA', signature: 'AAAA' });
  t.equal(approve.statusCode, 409);
  t.equal(pageError(approve.body), 'account_center_step_out_of_order', 'an approval on a visit that approves nothing is refused');
  const visit = await h.bff('POST', AC.handoffs, { return_url: h.callback, state: 's', code_challenge: pkcePair().challenge, member_action_id: `mac_${'A'.repeat(43)}` }, { session: grant.session_id });
  t.equal(visit.statusCode, 404, 'an approval visit for an action that is not this sign-in\'s is unknown');
  t.equal(await snapshot(h), before, 'the refusals changed nothing');

  // The script every passkey page would load: served by this API, as its pages pin it.
  const script = await h.server.inject({ method: 'GET', url: PASSKEY_SCRIPT_PATH });
  t.equal(script.statusCode, 200);
  t.match(script.headers, { 'content-type': /^text\/javascript/, 'x-content-type-options': 'nosniff', 'cross-origin-resource-policy': 'same-origin' });
  t.equal(`sha256-${createHash('sha256').update(script.body).digest('base64')}`, PASSKEY_SCRIPT_INTEGRITY, 'the bytes the pages\' integrity digest names');
  t.notMatch(script.body, /\beval\b|new Function|innerHTML|fetch\(|XMLHttpRequest/, 'no eval, no HTML sink, no request of its own');
});
