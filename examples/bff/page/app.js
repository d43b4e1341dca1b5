// The sample page: what the browser package (served at /assets/bff-browser.js) gives a signed-in
// member. Everything goes to this origin's BFF; the cookie carries the session.
/* global document, location */
import { BffClient, BffBrowserError } from '/assets/bff-browser.js';

const bff = new BffClient();
const $ = (id) => document.getElementById(id);

function show(id, text) {
  const el = $(id);
  if (text !== undefined) el.textContent = text;
  el.hidden = false;
}

const NEXT = {
  link_account_holder: 'Your account is being set up by us.',
  accept_policies: 'Please accept our current terms.',
  provision_wallet: 'Your wallet is being prepared.',
  done: 'All set.',
};

async function render() {
  const session = await bff.session();
  if (!session.signed_in) {
    show('status', 'You are signed out.');
    show('sign-in');
    if (session.sandbox_demo) show('demo');
    return;
  }
  const profile = await bff.profile();
  show('status', `Signed in as ${profile.member_id}`);
  show('account-center');
  show('sign-out');
  const enrolment = await bff.enrolment();
  show('next', NEXT[enrolment.next]);
}

$('sign-in').addEventListener('click', () => bff.signIn());
$('demo').addEventListener('click', () => bff.signInSandboxDemo().then(() => location.reload(), fail));
$('account-center').addEventListener('click', () => bff.openAccountCenter().catch(fail));
$('sign-out').addEventListener('click', () => bff.signOut().then(() => location.reload(), fail));

function fail(err) {
  show('error', err instanceof BffBrowserError ? `${err.code}${err.apiCode ? ` (${err.apiCode})` : ''}: ${err.message}` : String(err));
}

render().catch(fail);
