// The BFF helper's staged sign-in (platform-api.md "BFF helper and browser rules", "Confidential exchange
// rules" 1 and 9; docs/platform/bff.md "Staged sign-in") against the real API on loopback and a real
// OpenID provider: a durable stage before the first exchange, the same exchange_id and proof after a lost
// answer, an identical callback resuming a staged attempt or finding a completed one, and a closed
// transaction when the outcome is unknown before staging.
import t from 'tap';
import { setupBff, rejectsBff as rejects } from './bff-harness.ts';
import { FLOW_COOKIE, MemoryBffStore, SESSION_COOKIE, readSessionReference, readTransactionId, type BffStore } from '../../api/sdk/index.ts';

const EXCHANGE = '/v1/member-auth/proof/exchange';


t.test('a full sign-in: challenge, flow cookie, provider proof, staged exchange, durable cookie; secrets stay server-side', async (t) => {
  const b = await setupBff(t);
  const writes: string[] = [];
  const inner = new MemoryBffStore(b.h.platform.clock);
  const watched: BffStore = {
    get: (k) => inner.get(k), delete: (k) => inner.delete(k), withLock: (n, o, fn) => inner.withLock(n, o, fn),
    setIfAbsent: (k, v, ttl) => { writes.push(`${k}=${v}`); return inner.setIfAbsent(k, v, ttl); },
    set: (k, v, ttl) => { writes.push(`${k}=${v}`); return inner.set(k, v, ttl); },
  };
  const bff = b.instance({ store: watched });
  const begun = await bff.beginSignIn();
  t.equal(readTransactionId(begun.flowCookie.split(';')[0]), begun.transactionId, 'the flow cookie carries the transaction id');
  t.match(begun.flowCookie, /SameSite=Lax/);
  const idToken = await b.h.op.signIn({ sub: 'alice', nonce: begun.nonce, maxAge: 300 });
  const done = await bff.completeSignIn(begun.transactionId, idToken);
  t.equal(done.recovered, 'none');
  t.match(done.sessionCookie, new RegExp(`^${SESSION_COOKIE}=bfr_[A-Za-z0-9_-]{43}; Path=/; Max-Age=\\d+; Secure; HttpOnly; SameSite=Strict$`));
  t.match(done.clearFlowCookie, new RegExp(`^${FLOW_COOKIE}=; .*Max-Age=0`));
  const ref = readSessionReference(done.sessionCookie.split(';')[0]);
  t.equal(ref, done.reference);

  const grant = b.net.calls(EXCHANGE)[0]!.answer!;
  const exchangeId = b.net.calls(EXCHANGE)[0]!.body!.exchange_id as string;
  for (const secret of [grant.session_id, grant.refresh_credential, idToken, b.token] as string[]) {
    t.notOk(done.sessionCookie.includes(secret) || begun.flowCookie.includes(secret), 'no secret in a cookie');
    t.notOk(writes.some((w) => w.includes(secret)), 'nor in clear in the store: records are sealed');
  }
  t.notOk(writes.some((w) => w.includes(exchangeId)), 'the exchange id is sealed too');
  const order = writes.map((w) => w.split(':')[1]);
  t.same(order, ['tx', 'tx', 'session', 'tx'], 'started, staged (before the exchange), session stored, completed');

  const ctx = await bff.context(ref!);
  t.equal(ctx.member.id, done.memberId);
  t.equal((await bff.session(ref!)).sessionId, grant.session_id, 'the BFF uses the session id server-side');
  const out = await bff.signOut(ref!);
  t.equal(out.revoked_sessions, 1, 'sign-out revokes the exact session');
  t.match(out.clearCookie, /Max-Age=0/);
  await rejects(t, bff.context(ref!), 'signed_out', 'after sign-out');
  t.equal((await b.h.bff('GET', '/v1/member-auth/session', undefined, { session: grant.session_id as string })).statusCode, 401, 'the API ended it');
  t.same(await bff.signOut(ref!).then((r) => r.revoked_sessions), 0, 'a second sign-out is a no-op');
});

t.test('a lost acknowledgement: the same exchange_id and proof again return the committed session', async (t) => {
  const b = await setupBff(t);
  const bff = b.instance();
  b.net.setLoss((path, n) => (path === EXCHANGE && n === 1 ? 'after' : undefined));
  const done = await b.signIn(bff);
  const [first, second] = b.net.calls(EXCHANGE);
  t.equal(first!.status, 201, 'the API committed the first exchange');
  t.ok(first!.dropped, 'and its answer was lost');
  t.equal(second!.body!.exchange_id, first!.body!.exchange_id, 'the retry sends the same exchange_id');
  t.equal(second!.body!.id_token, first!.body!.id_token, 'and the same proof');
  t.ok(second!.recovered, 'the API answers Member-Exchange-Recovered');
  t.equal(done.recovered, 'api');
  t.equal((await bff.session(done.reference)).sessionId, first!.answer!.session_id, 'the session is the one committed first');
  t.equal((await b.audit('member_auth.session.create')).length, 1, 'one sign-in, not two');
  t.equal(b.net.calls(EXCHANGE).length, 2);
});

t.test('an identical callback after staging resumes the staged attempt; a completed transaction answers it again', async (t) => {
  const b = await setupBff(t);
  const bff = b.instance({ exchangeAttempts: 2 });
  const begun = await bff.beginSignIn();
  const idToken = await b.h.op.signIn({ sub: 'bob', nonce: begun.nonce, maxAge: 300 });
  let redeemed = 0;
  const callback = { callbackKey: 'code=abc&state=st', redeem: async () => { redeemed++; return idToken; } };

  // Every answer of the first callback is lost, the API having committed the first.
  b.net.setLoss((path) => (path === EXCHANGE ? 'after' : undefined));
  await rejects(t, bff.completeSignIn(begun.transactionId, callback), 'exchange_pending', 'answers lost');
  t.equal(redeemed, 1, 'the provider code was redeemed once');
  t.equal(b.net.calls(EXCHANGE).length, 2, 'the exchange was tried the configured number of times');

  // The browser repeats the callback, on another instance sharing the store.
  b.net.setLoss(() => undefined);
  const other = b.instance();
  const done = await other.completeSignIn(begun.transactionId, { ...callback });
  t.equal(redeemed, 1, 'the staged proof is reused: the code is not redeemed again');
  const calls = b.net.calls(EXCHANGE);
  t.equal(new Set(calls.map((c) => c.body!.exchange_id)).size, 1, 'one stable exchange_id throughout');
  t.ok(calls[2]!.recovered, 'the API recovered the committed session');
  t.equal(done.recovered, 'api');
  t.equal((await other.session(done.reference)).sessionId, calls[0]!.answer!.session_id, 'the session committed by the first attempt');

  // Its answer to the browser lost too: the completed transaction answers without calling the API.
  const again = await bff.completeSignIn(begun.transactionId, callback);
  t.equal(again.recovered, 'transaction');
  t.equal(again.reference, done.reference, 'the same application-session reference');
  t.equal(b.net.calls(EXCHANGE).length, 3, 'no further exchange');
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackKey: 'code=other', redeem: callback.redeem }), 'transaction_conflict', 'another callback for a completed transaction');
  t.equal((await b.audit('member_auth.session.create')).length, 1);

  // An answer lost before it was even sent: the identical callback then makes the first real exchange.
  const begun2 = await bff.beginSignIn();
  const token2 = await b.h.op.signIn({ sub: 'bob', nonce: begun2.nonce, maxAge: 300 });
  b.net.setLoss((path) => (path === EXCHANGE ? 'before' : undefined));
  await rejects(t, bff.completeSignIn(begun2.transactionId, token2), 'exchange_pending', 'API unreachable');
  b.net.setLoss(() => undefined);
  const done2 = await bff.completeSignIn(begun2.transactionId, token2);
  t.equal(done2.recovered, 'none', 'nothing had been committed');
  await rejects(t, bff.completeSignIn(begun2.transactionId, `${token2}x`), 'transaction_conflict', 'another proof for a completed transaction');
});

t.test('ambiguity before staging fails closed: the transaction is closed and a fresh one works', async (t) => {
  const b = await setupBff(t);
  const bff = b.instance();

  // The provider's token answer lost (the provider did issue it): nothing staged, nothing exchanged.
  const begun = await bff.beginSignIn();
  const before = await b.h.snapshot();
  const err = await rejects(t, bff.completeSignIn(begun.transactionId, {
    callbackKey: 'code=1', redeem: async () => { await b.h.op.signIn({ sub: 'carol', nonce: begun.nonce, maxAge: 300 }); throw new TypeError('fetch failed'); },
  }), 'sign_in_failed', 'provider answer lost');
  t.match(String((err?.cause as Error)?.message), /fetch failed/);
  t.equal(b.net.calls(EXCHANGE).length, 0, 'no exchange was attempted');
  t.equal(await b.h.snapshot(), before, 'the API changed nothing');
  await rejects(t, bff.completeSignIn(begun.transactionId, { callbackKey: 'code=1', redeem: async () => 'x' }), 'transaction_unknown', 'the same callback again');

  // The staging write itself fails (its outcome unknown): closed before any exchange.
  const inner = new MemoryBffStore(b.h.platform.clock);
  let failStage = false;
  const flaky: BffStore = {
    get: (k) => inner.get(k), delete: (k) => inner.delete(k), setIfAbsent: (k, v, ttl) => inner.setIfAbsent(k, v, ttl), withLock: (n, o, fn) => inner.withLock(n, o, fn),
    set: async (k, v, ttl) => { if (failStage && k.startsWith('bff:tx:')) throw new Error('store timeout'); return inner.set(k, v, ttl); },
  };
  const shaky = b.instance({ store: flaky });
  const begun2 = await shaky.beginSignIn();
  const token2 = await b.h.op.signIn({ sub: 'carol', nonce: begun2.nonce, maxAge: 300 });
  failStage = true;
  await rejects(t, shaky.completeSignIn(begun2.transactionId, token2), 'sign_in_failed', 'staging not durable');
  failStage = false;
  t.equal(b.net.calls(EXCHANGE).length, 0, 'still no exchange');
  await rejects(t, shaky.completeSignIn(begun2.transactionId, token2), 'transaction_unknown', 'the transaction is closed');

  // A proof answering another transaction's challenge is refused before staging.
  const begun3 = await bff.beginSignIn();
  const wrong = await b.h.op.signIn({ sub: 'carol', nonce: begun2.nonce, maxAge: 300 });
  await rejects(t, bff.completeSignIn(begun3.transactionId, wrong), 'transaction_conflict', 'a proof for another nonce');
  t.equal(b.net.calls(EXCHANGE).length, 0);

  // A fresh transaction signs in.
  const fresh = await b.signIn(bff, 'carol');
  t.equal(fresh.recovered, 'none');
  t.equal((await bff.context(fresh.reference)).member.id, fresh.memberId);
  await rejects(t, bff.completeSignIn('bft_unknown', 'x'), 'transaction_unknown', 'an unknown transaction');
});

t.test('a refused exchange closes the transaction; an expired transaction is unknown', async (t) => {
  const b = await setupBff(t);
  const bff = b.instance();
  const begun = await bff.beginSignIn();
  const token = await b.h.op.signIn({ sub: 'dave', nonce: begun.nonce, maxAge: 300 });
  // The proof is used once by someone else first (rule 4): the BFF's exchange is a replay.
  t.equal((await b.h.bff('POST', EXCHANGE, { exchange_id: 'someone-else-0000001', id_token: token })).statusCode, 201);
  const err = await rejects(t, bff.completeSignIn(begun.transactionId, token), 'sign_in_failed', 'proof used elsewhere');
  t.match(err?.message, /proof_replayed/);
  await rejects(t, bff.completeSignIn(begun.transactionId, token), 'transaction_unknown', 'closed');

  const late = await bff.beginSignIn();
  b.h.advance(601);
  await rejects(t, bff.completeSignIn(late.transactionId, 'x.y.z'), 'transaction_unknown', 'past the transaction\'s 600 s');
});
