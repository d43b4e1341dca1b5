// The BFF helper's Hosted Auth sign-in (docs/platform/bff.md "Hosted Auth"), against the real API on a
// loopback port with its real SMTP sink: beginHostedSignIn asks the API for the page, the browser's side
// of the page runs as in the Hosted Auth tests, and completeSignIn takes the URL the page redirected to.
// A forged state leaves the transaction open; an identical callback finds the completed sign-in; a lost
// exchange answer is retried, and when the first had committed the API revokes that session and the
// helper says to sign in again; nothing in the store holds the result or the verifier in clear.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { setupHosted, HOSTED } from '../api/member-auth/hosted-auth-harness.ts';
import { recordingFetch } from './bff-harness.ts';
import { BffError, BffSessions, CustodyApiError, MemberAuthClient, MemoryBffStore, SdkError } from '../../api/sdk/index.ts';

/** The in-memory store, keeping every value written, to look for secrets in clear. */
class RecordingStore extends MemoryBffStore {
  readonly written: string[] = [];
  override async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.written.push(value);
    return super.set(key, value, ttlMs);
  }
  override async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    this.written.push(value);
    return super.setIfAbsent(key, value, ttlMs);
  }
}

async function setup(tt: Test) {
  const h = await setupHosted(tt);
  await h.server.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(h.server.server.address() as AddressInfo).port}`;
  const net = recordingFetch();
  const client = new MemberAuthClient({ baseUrl, apiKey: h.bffKey.token, publishableKey: h.app.publishable_key, fetch: net.fetch });
  const store = new RecordingStore(h.platform.clock);
  const storeKey = new Uint8Array(randomBytes(32));
  const bff = new BffSessions({ client, store, storeKey, now: h.platform.clock, retryDelayMs: 5, hosted: { redirectUri: h.callback } });
  /** The member's part: opens the page, gives the address and the emailed code; the URL the page sends the browser to. */
  async function page(authorizationUrl: string, email: string): Promise<string> {
    const b = h.browser(new URL(authorizationUrl).pathname);
    await b.get();
    await b.submit('email', { email });
    const r = await b.submit('code', { code: await h.sink.nextCode(email) });
    if (r.statusCode !== 303) throw new Error(`the page did not reach the callback: ${r.statusCode}`);
    return String(r.headers.location);
  }
  return { h, net, client, store, storeKey, bff, page };
}

const exchanges = (net: ReturnType<typeof recordingFetch>) => net.calls(HOSTED.exchange);

t.test('a Hosted Auth sign-in through the helper: page, callback, session, refresh, sign-out', async (t) => {
  const { h, net, store, bff, page } = await setup(t);
  await h.invite('alice@example.com');
  const begun = await bff.beginHostedSignIn();
  t.match(begun.flowCookie, /^__Host-bff-flow=bft_[A-Za-z0-9_-]{43}; /, 'the flow cookie carries only the transaction id');
  const sent = net.calls(HOSTED.begin)[0]!;
  t.equal(sent.body?.redirect_uri, h.callback, 'the authorization names the application\'s callback');
  t.equal(sent.body?.code_challenge_method, 'S256');
  t.match(String(sent.body?.code_challenge), /^[A-Za-z0-9_-]{43}$/);
  t.notOk(begun.authorizationUrl.includes(String(sent.body?.state)), 'the state is not in the page URL: the API keeps it');

  const callbackUrl = await page(begun.authorizationUrl, 'alice@example.com');
  t.ok(callbackUrl.startsWith(`${h.callback}?`), 'the page sends the browser to the callback');
  const done = await bff.completeSignIn(begun.transactionId, { callbackUrl });
  t.equal(done.recovered, 'none');
  t.match(done.memberId, /^hsub_/);
  t.match(done.sessionCookie, /^__Host-bff-session=bfr_[A-Za-z0-9_-]{43}; /);
  t.equal(exchanges(net).length, 1);
  t.equal(exchanges(net)[0]!.body?.redirect_uri, h.callback);

  const ctx = await bff.context(done.reference);
  t.equal((ctx as unknown as { application: { kind: string } }).application.kind, 'hosted', 'the API takes the session as a Hosted one');

  // Nothing of the result, the verifier or the session in clear in the store.
  const sealedValues = store.written.join('\n');
  t.ok(store.written.length >= 3, 'the transaction and the session were written');
  const grant = exchanges(net)[0]!.answer!;
  for (const secret of [String(exchanges(net)[0]!.body?.code), String(exchanges(net)[0]!.body?.code_verifier), String(grant.session_id), String(grant.refresh_credential)]) {
    t.notOk(sealedValues.includes(secret), 'the store holds no secret of the sign-in in clear');
  }

  // The same callback again (a lost answer to the browser): the same reference, no second exchange.
  const again = await bff.completeSignIn(begun.transactionId, { callbackUrl });
  t.equal(again.reference, done.reference);
  t.equal(again.recovered, 'transaction');
  t.equal(exchanges(net).length, 1, 'a completed transaction answers without calling the API');

  // Refresh at expiry, then sign out.
  const before = await bff.session(done.reference);
  h.advance(900);
  const after = await bff.session(done.reference);
  t.not(after.sessionId, before.sessionId, 'an expired session is refreshed');
  t.equal(net.calls(HOSTED.refresh).length, 1);
  const out = await bff.signOut(done.reference);
  t.equal(out.revoked_sessions, 1);
  await t.rejects(bff.context(done.reference), { code: 'signed_out' });
});

t.test('a forged state leaves the transaction open for the real callback; a callback with no result is refused the same way', async (t) => {
  const { h, net, bff, page } = await setup(t);
  await h.invite('bob@example.com');
  const begun = await bff.beginHostedSignIn();
  const real = new URL(await page(begun.authorizationUrl, 'bob@example.com'));
  const forged = new URL(real);
  forged.searchParams.set('state', randomBytes(32).toString('base64url'));
  await t.rejects(bff.completeSignIn(begun.transactionId, { callbackUrl: forged }), { code: 'transaction_conflict' });
  const noCode = new URL(real);
  noCode.searchParams.set('code', 'hrc_short');
  await t.rejects(bff.completeSignIn(begun.transactionId, { callbackUrl: noCode }), { code: 'transaction_conflict' });
  await t.rejects(bff.completeSignIn(begun.transactionId, 'an.id.token'), { code: 'transaction_conflict' }, 'a Hosted transaction takes only a callback URL');
  t.equal(exchanges(net).length, 0, 'nothing was exchanged');
  const done = await bff.completeSignIn(begun.transactionId, { callbackUrl: real.href });
  t.match(done.memberId, /^hsub_/, 'the genuine callback still completes');
  // After completion another callback is a conflict, not a second session.
  await t.rejects(bff.completeSignIn(begun.transactionId, { callbackUrl: forged }), { code: 'transaction_conflict' });
});

t.test('a lost exchange answer: retried; when the first had committed, the API revokes its session and the helper says sign in again', async (t) => {
  const { h, net, bff, page } = await setup(t);
  await h.invite('carol@example.com');
  // Lost before reaching the API: the retry is the first the API sees, and succeeds.
  net.setLoss((path, n) => (path === HOSTED.exchange && n === 1 ? 'before' : undefined));
  let begun = await bff.beginHostedSignIn();
  const ok = await bff.completeSignIn(begun.transactionId, { callbackUrl: await page(begun.authorizationUrl, 'carol@example.com') });
  t.equal(exchanges(net).length, 2);
  t.equal(exchanges(net)[1]!.status, 201);
  t.ok(await bff.context(ok.reference), 'the retried exchange\'s session works');

  // Lost after the API committed: the repeat is a replay; the session nobody holds is revoked.
  net.setLoss((path, n) => (path === HOSTED.exchange && n === 3 ? 'after' : undefined));
  begun = await bff.beginHostedSignIn();
  const callbackUrl = await page(begun.authorizationUrl, 'carol@example.com');
  const err = await bff.completeSignIn(begun.transactionId, { callbackUrl }).catch((e: unknown) => e);
  t.ok(err instanceof BffError && err.code === 'sign_in_failed', 'the helper says to sign in again');
  t.match((err as Error).message, /revoked/);
  t.ok((err as Error).cause instanceof CustodyApiError && ((err as Error).cause as CustodyApiError).code === 'hosted_result_replayed');
  const lost = exchanges(net)[2]!;
  t.equal(lost.status, 201, 'the first exchange committed a session whose answer was lost');
  t.equal(exchanges(net)[3]!.status, 409);
  const orphan = await h.bff('GET', HOSTED.session, undefined, { session: String(lost.answer!.session_id) });
  t.equal(orphan.statusCode, 401, 'the API revoked the session whose answer was lost');
  await t.rejects(bff.completeSignIn(begun.transactionId, { callbackUrl }), { code: 'transaction_unknown' }, 'the transaction is closed');
});

t.test('the sandbox demo persona, and settings refused at construction', async (t) => {
  const { h, client, store, storeKey, bff } = await setup(t);
  const demo = await bff.signInSandboxDemo();
  const ctx = await bff.context(demo.reference) as unknown as { amr: string[] };
  t.same(ctx.amr, ['demo']);

  const both = () => new BffSessions({ client, store, storeKey, hosted: { redirectUri: h.callback }, oidc: {} as never });
  t.throws(both, { code: 'invalid_config' });
  t.throws(() => new BffSessions({ client, store, storeKey, hosted: { redirectUri: '/callback' } }), { code: 'invalid_config' });
  t.throws(() => new BffSessions({ client, store, storeKey, hosted: { redirectUri: `${h.callback}#x` } }), { code: 'invalid_config' });
  const byo = new BffSessions({ client, store, storeKey });
  await t.rejects(byo.beginHostedSignIn(), SdkError);
  // A redirect URI other than the application's callback: the API's refusal, unchanged.
  const elsewhere = new BffSessions({ client, store, storeKey, hosted: { redirectUri: `${h.origin}/other` } });
  await t.rejects(elsewhere.beginHostedSignIn(), { code: 'hosted_redirect_mismatch', status: 400 });
});
