// The provider side of the BFF helper's BYO OIDC sign-in (docs/platform/bff.md "The provider side"):
// BffOidcClient on openid-client against the real OpenID provider of the member-auth tests, driven as a
// browser would (login and consent pages), and the real API on loopback: the authorization URL (code
// flow, PKCE S256, state, the challenge's nonce), the code redeemed with its checks and staged into the
// proof exchange; a forged state, a replayed or injected code, and an ID token for another nonce refused.
import t, { type Test } from 'tap';
import { setupBff, rejectsBff as rejects } from './bff-harness.ts';
import { CLIENT_SECRET, startProvider } from '../api/member-auth/oidc-provider-fixture.ts';
import { DEV_REDIRECT_URI } from '../../deploy/oidc/code-flow.ts';
import { BffOidcClient, type BffOidcOptions, type SdkError } from '../../api/sdk/index.ts';

const EXCHANGE = '/v1/member-auth/proof/exchange';


async function setup(t: Test, o: Partial<BffOidcOptions> = {}) {
  const b = await setupBff(t);
  const oidc = await BffOidcClient.discover({ issuer: b.h.op.issuer, clientId: 'bff-client', clientSecret: CLIENT_SECRET, redirectUri: DEV_REDIRECT_URI, allowInsecureRequests: true, maxAge: 300, ...o });
  const bff = b.instance({ oidc });
  /** A callback for another transaction's state: the same code, state and iss otherwise. */
  const withState = (cb: URL, state: string) => {
    const u = new URL(cb);
    u.searchParams.set('state', state);
    return u;
  };
  const stateOf = (url: string) => new URL(url).searchParams.get('state')!;
  return { b, oidc, bff, withState, stateOf };
}

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

t.test('a full sign-in: the authorization URL, the provider\'s login, the code redeemed and exchanged; an identical callback finds it', async (t) => {
  const { b, oidc, bff } = await setup(t);
  t.equal(oidc.issuer, b.h.op.issuer, 'the discovery confirmed the issuer');
  const begun = await bff.beginSignIn();
  const url = new URL(begun.authorizationUrl!);
  t.equal(url.origin, new URL(b.h.op.issuer).origin, 'the provider\'s authorization endpoint');
  const q = url.searchParams;
  t.equal(q.get('response_type'), 'code');
  t.equal(q.get('client_id'), 'bff-client');
  t.equal(q.get('redirect_uri'), DEV_REDIRECT_URI);
  t.equal(q.get('scope'), 'openid');
  t.equal(q.get('nonce'), begun.nonce, 'the nonce is the member-auth challenge\'s');
  t.equal(q.get('code_challenge_method'), 'S256');
  t.match(q.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/, 'a SHA-256 code challenge');
  t.match(q.get('state'), /^[A-Za-z0-9_-]{43,}$/, 'a random state');
  t.equal(q.get('max_age'), '300');
  t.notOk(begun.flowCookie.includes(q.get('state')!), 'the state is kept in the store, not the cookie');
  const again = await bff.beginSignIn();
  t.not(new URL(again.authorizationUrl!).searchParams.get('state'), q.get('state'), 'each transaction its own state');
  t.not(new URL(again.authorizationUrl!).searchParams.get('code_challenge'), q.get('code_challenge'), 'and its own PKCE verifier');

  const callback = await b.h.op.authorize(begun.authorizationUrl!, 'alice');
  t.equal(callback.searchParams.get('state'), q.get('state'));
  // As a BFF receives it: the request's path and query.
  const done = await bff.completeSignIn(begun.transactionId, { callbackUrl: callback.pathname + callback.search });
  t.equal(done.recovered, 'none');
  const sent = b.net.calls(EXCHANGE);
  t.equal(sent.length, 1, 'one proof exchange');
  const proof = claims(sent[0]!.body!.id_token as string);
  t.equal(proof.iss, b.h.op.issuer, 'the provider\'s ID token');
  t.equal(proof.aud, 'bff-client');
  t.equal(proof.sub, 'alice');
  t.equal(proof.nonce, begun.nonce);
  t.equal((await bff.context(done.reference)).member.id, done.memberId, 'the member session works');

  const repeat = await bff.completeSignIn(begun.transactionId, { callbackUrl: callback });
  t.equal(repeat.recovered, 'transaction', 'the identical callback finds the completed sign-in');
  t.equal(repeat.reference, done.reference);
  t.equal(b.net.calls(EXCHANGE).length, 1, 'without a second exchange');
});

t.test('a callback with another state is refused before anything is redeemed; the genuine one then completes', async (t) => {
  const { b, bff, withState } = await setup(t);
  const begun = await bff.beginSignIn();
  const callback = await b.h.op.authorize(begun.authorizationUrl!, 'bob');
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackUrl: withState(callback, 'A'.repeat(43)) }), 'transaction_conflict', 'a forged state');
  const none = new URL(callback);
  none.searchParams.delete('state');
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackUrl: none }), 'transaction_conflict', 'no state');
  t.equal(b.net.calls(EXCHANGE).length, 0, 'nothing exchanged');
  const done = await bff.completeSignIn(begun.transactionId, { callbackUrl: callback });
  t.equal(done.recovered, 'none', 'the code was not spent: the genuine callback signs in');
  t.equal((await bff.context(done.reference)).member.id, done.memberId);

  // A transaction begun without the provider client has no state to check against.
  const plain = b.instance();
  const other = await plain.beginSignIn();
  t.equal(other.authorizationUrl, undefined, 'no authorization URL without `oidc`');
  await rejects(t, bff.completeSignIn(other.transactionId, { callbackUrl: callback }), 'transaction_conflict', 'a transaction begun without `oidc`');
});

t.test('a replayed code and a code injected into another transaction are refused by the provider; the transaction closes', async (t) => {
  const { b, bff, withState, stateOf } = await setup(t);
  const first = await bff.beginSignIn();
  const callback = await b.h.op.authorize(first.authorizationUrl!, 'carol');
  await bff.completeSignIn(first.transactionId, { callbackUrl: callback });
  t.equal(b.net.calls(EXCHANGE).length, 1);

  // The spent code again, carried into a fresh transaction with that transaction's state.
  const second = await bff.beginSignIn();
  const err = await rejects(t, bff.completeSignIn(second.transactionId, { callbackUrl: withState(callback, stateOf(second.authorizationUrl!)) }), 'sign_in_failed', 'a replayed code');
  t.match(err?.message, /invalid_grant/, 'the provider refused the grant');
  await rejects(t, bff.completeSignIn(second.transactionId, { callbackUrl: callback }), 'transaction_unknown', 'the transaction is closed');

  // A fresh, unspent code of one transaction presented to another: its PKCE verifier does not match.
  const victim = await bff.beginSignIn();
  const stolen = await b.h.op.authorize(victim.authorizationUrl!, 'carol');
  const attacker = await bff.beginSignIn();
  const e2 = await rejects(t, bff.completeSignIn(attacker.transactionId, { callbackUrl: withState(stolen, stateOf(attacker.authorizationUrl!)) }), 'sign_in_failed', 'an injected code');
  t.match(e2?.message, /invalid_grant/, 'refused at the token endpoint (PKCE)');
  t.equal(b.net.calls(EXCHANGE).length, 1, 'no exchange for either');
  t.equal((await b.audit('member_auth.session.create')).length, 1, 'one session in all');
});

t.test('an ID token for another nonce is refused and closes the transaction; a provider error closes it too', async (t) => {
  const { b, bff } = await setup(t);
  const begun = await bff.beginSignIn();
  // The authorization request altered on its way (its nonce replaced): the provider answers the altered one.
  const altered = new URL(begun.authorizationUrl!);
  altered.searchParams.set('nonce', 'n'.repeat(43));
  const callback = await b.h.op.authorize(altered.href, 'dave');
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackUrl: callback }), 'transaction_conflict', 'a mismatched nonce');
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackUrl: callback }), 'transaction_unknown', 'the transaction is closed');
  t.equal(b.net.calls(EXCHANGE).length, 0, 'nothing exchanged');

  const denied = await bff.beginSignIn();
  const state = new URL(denied.authorizationUrl!).searchParams.get('state')!;
  const err = await rejects(t, bff.completeSignIn(denied.transactionId, { callbackUrl: `/cb?error=access_denied&state=${state}` }), 'sign_in_failed', 'the provider\'s error answer');
  t.match(err?.message, /access_denied/);
  await rejects(t, bff.completeSignIn(denied.transactionId, { callbackUrl: `/cb?error=access_denied&state=${state}` }), 'transaction_unknown', 'closed');
});

t.test('issuer and audience: a discovery naming another issuer is refused; a token for another client is refused by the API', async (t) => {
  const elsewhere = await startProvider(t, 'localhost');
  try {
    await BffOidcClient.discover({ issuer: `http://127.0.0.1:${elsewhere.port}`, clientId: 'bff-client', clientSecret: CLIENT_SECRET, redirectUri: DEV_REDIRECT_URI, allowInsecureRequests: true });
    t.fail('resolved');
  } catch (err) {
    t.equal((err as SdkError).code, 'invalid_config', 'the discovery document names another issuer');
    t.match((err as SdkError).message, /issuer/);
  }
  const codeOf = (p: Promise<unknown>) => p.then(() => 'none', (err: { code: string }) => err.code);
  const base = { issuer: elsewhere.issuer, clientId: 'bff-client', clientSecret: CLIENT_SECRET, redirectUri: DEV_REDIRECT_URI };
  t.equal(await codeOf(BffOidcClient.discover({ ...base, redirectUri: '/cb' })), 'invalid_config', 'a relative redirect URI');
  t.equal(await codeOf(BffOidcClient.discover({ ...base, redirectUri: `${DEV_REDIRECT_URI}?x=1` })), 'invalid_config', 'a redirect URI with a query');
  t.equal(await codeOf(BffOidcClient.discover({ ...base, clientSecret: '' })), 'invalid_config', 'no client secret');
  t.equal(await codeOf(BffOidcClient.discover({ ...base, issuer: `http://127.0.0.1:${elsewhere.port}`.replace('127.0.0.1', 'localhost') })), 'invalid_config', 'an http issuer without allowInsecureRequests');

  // The provider's other client signs the member in correctly for itself; the application pins bff-client.
  const { b, bff } = await setup(t, { clientId: 'other-client' });
  const begun = await bff.beginSignIn();
  const callback = await b.h.op.authorize(begun.authorizationUrl!, 'erin');
  const err = await rejects(t, bff.completeSignIn(begun.transactionId, { callbackUrl: callback }), 'sign_in_failed', 'an ID token for another audience');
  t.equal(claims(b.net.calls(EXCHANGE)[0]!.body!.id_token as string).aud, 'other-client');
  t.match(err?.message, /refused/);
  t.equal((await b.audit('member_auth.session.create')).length, 0);
});

t.test('the provider\'s redemption counts in the lock lease; a callback URL that does not parse is refused', async (t) => {
  const { b, oidc, bff } = await setup(t);
  const codeOf = (fn: () => unknown) => { try { fn(); return 'none'; } catch (err) { return (err as { code: string }).code; } };
  // 3 exchange attempts of 10 s and the pauses: 30 045 ms; the provider's 10 s more with `oidc`.
  t.equal(codeOf(() => b.instance({ lock: { leaseMs: 35_000 } })), 'none', 'without oidc, 35 s outlasts the work');
  t.equal(codeOf(() => b.instance({ oidc, lock: { leaseMs: 35_000 } })), 'invalid_config', 'with it, 35 s does not');
  const begun = await bff.beginSignIn();
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackUrl: 'http://[' }), 'transaction_conflict', 'a malformed callback URL');
  const callback = await b.h.op.authorize(begun.authorizationUrl!, 'frank');
  t.equal((await bff.completeSignIn(begun.transactionId, { callbackUrl: callback.href })).recovered, 'none', 'the transaction stayed open');
});
