// The BFF helper's member sessions (platform-api.md "BFF helper and browser rules", "Confidential
// exchange rules" 7 and 10; docs/platform/bff.md "Sessions") against the real API on loopback: refresh
// and sign-out of one reference serialized across BFF instances sharing a store, one server refresh per
// expiry, no family revocation, and a credential replayed by another party signing the reference out.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { setupBff, rejectsBff as rejects } from './bff-harness.ts';
import type { BffError} from '../../api/sdk/index.ts';
import { BffSessions, MemberAuthClient, MemoryBffStore, type BffSessionsOptions, type SdkError } from '../../api/sdk/index.ts';

const REFRESH = '/v1/member-auth/refresh';
const SIGN_OUT = '/v1/member-auth/sign-out';


t.test('concurrent refreshes of one reference on two instances: one server refresh, no family revocation', async (t) => {
  const b = await setupBff(t);
  const a = b.instance();
  const c = b.instance();
  const { reference } = await b.signIn(a);
  const first = await a.session(reference);
  t.equal(b.net.calls(REFRESH).length, 0, 'a live session is used as it is');

  b.h.advance(901); // past the session's 900 s
  const got = await Promise.all([...Array(6)].map((_, i) => (i % 2 ? a : c).session(reference)));
  t.equal(b.net.calls(REFRESH).length, 1, 'exactly one refresh reached the API');
  t.equal(b.net.calls(REFRESH)[0]!.status, 200);
  t.equal(new Set(got.map((s) => s.sessionId)).size, 1, 'every caller got the one rotated session');
  t.not(got[0]!.sessionId, first.sessionId);
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 0, 'no replay, no revocation');
  t.equal((await c.context(reference)).member.id, got[0]!.memberId, 'the rotated session works');

  // The API may see a session as ended before the BFF's clock does: context() refreshes once then.
  b.h.advance(901);
  const ctx = await Promise.all([a.context(reference), c.context(reference), a.context(reference)]);
  t.equal(new Set(ctx.map((x) => x.member.id)).size, 1);
  t.equal(b.net.calls(REFRESH).length, 2, 'again one refresh');
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 0);
});

t.test('a refresh racing a sign-out: one wins cleanly, the reference ends signed out, no replay', async (t) => {
  const b = await setupBff(t);
  const a = b.instance();
  const c = b.instance();
  const refs = { 'refresh first': await b.signIn(a, 'hana'), 'sign-out first': await b.signIn(a, 'hana') };
  const stale = { 'refresh first': await a.session(refs['refresh first'].reference), 'sign-out first': await a.session(refs['sign-out first'].reference) };
  b.h.advance(901); // both sessions expired: the next use refreshes
  for (const order of ['refresh first', 'sign-out first'] as const) {
    const { reference } = refs[order];
    const sent = b.net.calls(REFRESH).length;
    let refresh: Promise<unknown>;
    let signOut: Promise<{ revoked_sessions: number | null }>;
    if (order === 'refresh first') {
      refresh = a.session(reference).then((s) => s, (e: unknown) => e);
      // The sign-out arrives while the refresh is at the API, holding the reference's lock.
      while (b.net.calls(REFRESH).length === sent) await new Promise((r) => setImmediate(r));
      signOut = c.signOut(reference);
    } else {
      signOut = c.signOut(reference);
      refresh = a.session(reference).then((s) => s, (e: unknown) => e);
    }
    const [r, o] = await Promise.all([refresh, signOut]);
    t.equal(o.revoked_sessions, 1, `${order}: the sign-out ended the sign-in`);
    if (order === 'refresh first') t.not((r as { sessionId: string }).sessionId, stale[order].sessionId, `${order}: the refresh rotated, then the sign-out used the new session`);
    else t.equal((r as BffError).code, 'signed_out', `${order}: the refresh found the reference signed out and spent nothing`);
    await rejects(t, a.session(reference), 'signed_out', `${order}: afterwards`);
  }
  t.equal(b.net.calls(REFRESH).length, 1, 'one refresh in all');
  t.notOk(b.net.sent.some((s) => s.answer?.code === 'refresh_replayed'), 'no refresh was replayed');
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 0);
  t.equal((await b.audit('member_auth.session.sign_out')).length, 2);
  t.ok(b.net.calls(SIGN_OUT).every((s) => s.status === 200), 'each sign-out used the current session id');
});

t.test('a refresh credential replayed by another party signs the reference out and revokes the sign-in', async (t) => {
  const b = await setupBff(t);
  const bff = b.instance();
  const { reference } = await b.signIn(bff, 'erin');
  // An eavesdropper's copy of the exchange answer: it spends the credential first.
  const stolen = b.net.calls('/v1/member-auth/proof/exchange')[0]!.answer!.refresh_credential as string;
  const thief = await b.h.bff('POST', REFRESH, { refresh_credential: stolen }, { token: b.token });
  t.equal(thief.statusCode, 200, 'the thief rotated the credential');

  await rejects(t, bff.context(reference), 'signed_out', 'the BFF\'s next use');
  t.equal(b.net.calls(REFRESH).at(-1)!.answer!.code, 'refresh_replayed', 'its refresh was a replay');
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 1, 'the API revoked the sign-in');
  t.equal((await b.h.bff('GET', '/v1/member-auth/session', undefined, { session: thief.json().session_id as string, token: b.token })).statusCode, 401, 'the thief\'s session died with it');
  const calls = b.net.sent.length;
  await rejects(t, bff.session(reference), 'signed_out', 'the reference was cleared');
  t.equal(b.net.sent.length, calls, 'without calling the API again');
});

t.test('sign-out: the exact session by default, all of the member on request, a lost answer still clears the reference', async (t) => {
  const b = await setupBff(t);
  const bff = b.instance();
  const one = await b.signIn(bff, 'frank');
  const two = await b.signIn(bff, 'frank');
  const three = await b.signIn(bff, 'frank');
  t.equal((await bff.signOut(one.reference)).revoked_sessions, 1, 'default: the exact session');
  t.equal((await bff.context(two.reference)).member.id, two.memberId, 'the member\'s other sign-ins stay');
  t.equal((await bff.signOut(two.reference, 'all')).revoked_sessions, 2, '"all": every sign-in of the member');
  await rejects(t, bff.context(three.reference), 'signed_out', 'a sign-in ended by "all"');

  const four = await b.signIn(bff, 'frank');
  b.net.setLoss((path) => (path === SIGN_OUT ? 'after' : undefined));
  t.equal((await bff.signOut(four.reference)).revoked_sessions, null, 'answer lost: unknown count');
  b.net.setLoss(() => undefined);
  await rejects(t, bff.session(four.reference), 'signed_out', 'the reference is cleared anyway');

  // A lost refresh answer: the BFF sends the same refresh (its refresh_id) again and gets the same session.
  const six = await b.signIn(bff, 'frank');
  const five = await b.signIn(bff, 'frank');
  b.h.advance(901);
  const before = b.net.calls(REFRESH).length;
  b.net.setLoss((path, n) => (path === REFRESH && n === before + 1 ? 'after' : undefined));
  const kept = await bff.session(six.reference);
  b.net.setLoss(() => undefined);
  const sent = b.net.calls(REFRESH).slice(before);
  t.equal(sent.length, 2, 'the refresh was sent twice');
  t.ok(sent[0]!.dropped && !sent[1]!.dropped, 'the first answer was lost');
  t.same(sent[0]!.body, sent[1]!.body, 'the same credential and refresh_id');
  t.equal(sent[1]!.answer!.session_id, kept.sessionId, 'the repeat got the session the first one made');
  t.equal((await bff.context(six.reference)).member.id, six.memberId, 'the session works');
  t.equal((await b.audit('member_auth.session_family.revoke')).length, 0, 'nothing revoked');

  // Both answers lost: the record stays; a later refresh is a new one, a replay, and signs out.
  b.net.setLoss((path) => (path === REFRESH ? 'after' : undefined));
  try {
    await bff.session(five.reference);
    t.fail('resolved');
  } catch (err) {
    t.equal((err as SdkError).code, 'network', 'a lost refresh answer is a network error');
  }
  b.net.setLoss(() => undefined);
  await rejects(t, bff.session(five.reference), 'signed_out', 'the retry is a replay');
});

t.test('the client: server-side only, keys of one environment, production keys sign; the store is sealed', async (t) => {
  const b = await setupBff(t);
  const base = { baseUrl: b.baseUrl, apiKey: b.token, publishableKey: b.h.app.publishable_key };
  const codeOf = (fn: () => unknown) => { try { fn(); return 'none'; } catch (err) { return (err as { code: string }).code; } };
  t.equal(codeOf(() => new MemberAuthClient({ ...base, apiKey: 'Bearer x' })), 'invalid_config');
  t.equal(codeOf(() => new MemberAuthClient({ ...base, publishableKey: 'pk_live_abc' })), 'invalid_config', 'sandbox key, production publishable key');
  t.equal(codeOf(() => new MemberAuthClient({ ...base, apiKey: 'svc_live_key_x_y', publishableKey: 'pk_live_abc' })), 'invalid_config', 'a live key without its signing key');
  const g = globalThis as { window?: unknown; document?: unknown };
  g.window = {};
  g.document = {};
  try {
    t.equal(codeOf(() => new MemberAuthClient(base)), 'server_only', 'refused where a browser runs');
  } finally {
    delete g.window;
    delete g.document;
  }

  // A production key signs its POSTs (RFC 9421): the API's signature check passes, and the call goes on
  // to the publishable key (no production application here: 404), where an unsigned one stops at 401.
  const secretKey = ed25519.utils.randomSecretKey();
  const live = await b.h.platform.tenancy.createKey(b.h.production.id, 'member_auth', { signingPublicKey: bytesToHex(ed25519.getPublicKey(secretKey)) });
  const signed = new MemberAuthClient({ baseUrl: b.baseUrl, apiKey: live.token, publishableKey: `pk_live_${'A'.repeat(32)}`, signing: { keyId: live.key.id, secretKey } });
  const apiCode = async (p: Promise<unknown>) => p.then(() => 'none', (err: { code: string }) => err.code);
  t.equal(await apiCode(signed.createChallenge()), 'not_found', 'signed: past the signature check');
  const unsigned = await b.h.server.inject({ method: 'POST', url: '/v1/member-auth/proof/challenges', headers: { authorization: `Bearer ${live.token}`, 'x-svc-publishable-key': `pk_live_${'A'.repeat(32)}`, 'content-type': 'application/json' }, payload: '{}' });
  t.equal(unsigned.json().code, 'signature_required', 'unsigned: refused');

  const bff = b.instance();
  const { reference } = await b.signIn(bff, 'gina');
  // Another key cannot open the records: a store without the key holds nothing usable.
  await rejects(t, b.instance({ storeKey: new Uint8Array(32).fill(1) }).session(reference), 'store_corrupt', 'another store key');

});

t.test('configuration that would break the guarantees is refused at start', async (t) => {
  const client = new MemberAuthClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'svc_test_key_x_y', publishableKey: 'pk_test_abc' });
  const make = (o: Partial<BffSessionsOptions>) => new BffSessions({ client, store: new MemoryBffStore(), storeKey: new Uint8Array(32), ...o });
  const codeOf = (fn: () => unknown) => { try { fn(); return 'none'; } catch (err) { return (err as { code: string }).code; } };
  t.equal(codeOf(() => make({ lock: { leaseMs: 5_000 } })), 'invalid_config', 'a lease shorter than the calls under it');
  t.equal(codeOf(() => make({ transactionTtlSec: 3600 })), 'invalid_config', 'a flow longer than the flow cookie may live');
  t.equal(codeOf(() => make({ completedTtlSec: 0 })), 'invalid_config', 'an unbounded or empty completed window');
  t.equal(codeOf(() => make({ storeKey: new Uint8Array(16) })), 'invalid_config', 'a store key that is not 32 bytes');
  t.equal(codeOf(() => make({})), 'none');
});
