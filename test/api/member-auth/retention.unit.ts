// Retention of member-auth records (docs/platform/member-auth.md "Retention"): the sweep removes exactly
// the records whose time has come, keeps the rest, keeps refusing replays where the table says so, works
// in bounded batches and logs counts only. Real BYO sign-ins against the loopback provider; the other
// kinds (Hosted Auth authorizations, Account Center handoffs, member actions, signing sessions) as stored
// records, since only their times matter here. The platform clock is moved; nothing sleeps.
import t from 'tap';
import { setupMemberAuth, PATHS, type MemberAuthHarness } from './member-auth-harness.ts';
import { MemberAuthRetention, RETENTION_GRACE_S, type SweepCounts } from '../../../api/member-auth/member-auth-retention.ts';
import { SESSION_COLLECTIONS as S, LIFETIMES, type SessionFamilyRecord } from '../../../api/member-auth/member-session-records.ts';
import { HOSTED_COLLECTIONS as H, HOSTED_LIMITS, type HostedAuthorizationRecord } from '../../../api/member-auth/hosted-records.ts';
import { ACCOUNT_CENTER_COLLECTIONS as AC, ACCOUNT_CENTER_LIMITS } from '../../../api/member-auth/account-center-records.ts';
import { ACTION_COLLECTIONS as A, MEMBER_ACTION_LIMITS, pendingIndex } from '../../../api/member-auth/member-action-records.ts';
import { familyIndex } from '../../../api/member-auth/member-sessions.ts';

const DAY = 86_400;

interface Logged { obj: object; msg: string }
function retention(h: MemberAuthHarness, batch?: number) {
  const logged: Logged[] = [];
  const log = { info: (obj: object, msg: string) => logged.push({ obj, msg }), warn: (obj: object, msg: string) => logged.push({ obj, msg }) };
  return { sweeper: new MemberAuthRetention({ store: h.store, clock: h.platform.clock, log, ...(batch ? { batch } : {}) }), logged };
}

const count = (h: MemberAuthHarness, name: string) => h.store.count(name);
const nonzero = (c: SweepCounts) => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== 0));

async function families(h: MemberAuthHarness): Promise<SessionFamilyRecord[]> {
  const out: SessionFamilyRecord[] = [];
  for await (const f of h.store.all<SessionFamilyRecord>(S.families.name)) out.push(f);
  return out;
}

/** A stored Hosted Auth authorization (only the fields the sweep reads matter). */
function authorization(h: MemberAuthHarness, id: string, o: Partial<HostedAuthorizationRecord>): HostedAuthorizationRecord {
  const now = h.platform.clock();
  const expires = now + HOSTED_LIMITS.authorization * 1000;
  return {
    v: 1, id, tenant: h.tenant.id, workspace: h.sandbox.id, environment: 'sandbox', application: h.app.id, application_version: 1, publishable_key: h.app.publishable_key,
    principal: h.owner.key.id, origin: 'https://app.example.com', redirect_uri: 'https://app.example.com/cb', state: 's', code_challenge: 'c'.repeat(43), status: 'pending',
    created_at: new Date(now).toISOString(), expires_at: new Date(expires).toISOString(), flow_cookie_sha256: null, email: null, member_id: null, eligible: false, code_sha256: null,
    code_expires_at: null, codes_sent: 0, last_code_sent_at: null, attempts: 0, refused_code: null, result_sha256: null, result_expires_at: null, member_created: false, amr: [],
    authenticated_at: null, family: null, exchanged_at: null, retire_after: new Date(expires + HOSTED_LIMITS.retain * 1000).toISOString(), ...o,
  };
}

t.test('the sweep removes exactly the records whose time has come, and keeps the rest', async (t) => {
  const h = await setupMemberAuth(t, { max_proof_age_sec: 3600 });
  const { sweeper } = retention(h);
  const g = await h.signIn('alice');
  const refreshed = (await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential })).json() as { session_id: string; refresh_credential: string };
  const other = await h.signIn('bob');
  t.equal((await h.bff('POST', PATHS.signOut, {}, { session: other.session_id })).statusCode, 200, 'bob signs out: his family is revoked');
  const now = h.platform.clock();
  // The other kinds, as stored.
  const auth = authorization(h, `hau_${'a'.repeat(43)}`, {});
  await h.store.put(H.authorizations.name, auth.id, auth, [auth.retire_after]);
  const handoffRetire = new Date(now + (ACCOUNT_CENTER_LIMITS.handoff + ACCOUNT_CENTER_LIMITS.retain) * 1000).toISOString();
  await h.store.put(AC.handoffs.name, `hac_${'b'.repeat(43)}`, { id: `hac_${'b'.repeat(43)}`, result_sha256: 'f'.repeat(64), retire_after: handoffRetire }, [handoffRetire]);
  await h.store.put(AC.results.name, 'f'.repeat(64), { handoff: `hac_${'b'.repeat(43)}` });
  const action = { id: `mac_${'c'.repeat(43)}`, application: h.app.id, member_id: g.member.id, expires_at: new Date(now + MEMBER_ACTION_LIMITS.actionLifetime * 1000).toISOString() };
  await h.store.put(A.actions.name, action.id, action, pendingIndex(action));
  await h.store.put(A.signing.name, 'e'.repeat(64), { expires_at: new Date(now + MEMBER_ACTION_LIMITS.signingLifetime * 1000).toISOString() });

  t.same(nonzero(await sweeper.sweep()), {}, 'at once: nothing is due');
  t.equal(await count(h, S.exchanges.name), 2, 'both exchange records are kept inside their recovery window');

  h.advance(LIFETIMES.exchangeRecovery + 1);
  t.same(nonzero(await sweeper.sweep()), { exchanges: 2 }, 'after 600 s: the exchange records only');
  t.equal(await count(h, S.challenges.name), 2);
  t.equal(await count(h, S.acceptedProofs.name), 2);
  t.equal(await count(h, S.families.name), 2, 'the revoked family is kept inside its grace');

  h.advance(RETENTION_GRACE_S);
  t.same(nonzero(await sweeper.sweep()), { challenges: 2, accepted_proofs: 2, families: 1, sessions: 1, refresh_credentials: 1, hosted_authorizations: 1, signing_sessions: 1 },
    'a day later: the challenges and accepted proofs (replay window ended), the revoked sign-in (family, session, refresh credential), the expired authorization and signing session');
  t.equal(await count(h, S.sessions.name), 1, 'alice\'s current session is kept');
  t.equal(await count(h, S.refresh.name), 2, 'alice\'s consumed and current refresh credentials are kept: her family can still be used');
  t.equal(await count(h, AC.handoffs.name), 1, 'the handoff is kept a day after its 900 s');
  t.equal(await count(h, A.actions.name), 1, 'the action waits for a signing session\'s life beyond its own');

  h.advance(MEMBER_ACTION_LIMITS.actionLifetime + MEMBER_ACTION_LIMITS.signingLifetime);
  t.same(nonzero(await sweeper.sweep()), { account_center_handoffs: 1, member_actions: 1 }, 'then the handoff and the action');
  t.equal(await count(h, AC.results.name), 0, 'the handoff\'s result index went with it');
  t.same(await h.store.byIndex(A.actions.name, `${h.app.id}\x00`), [], 'and the action\'s pending index entry');

  const session = await h.bff('GET', PATHS.session, undefined, { session: refreshed.session_id });
  t.equal(session.json().code, 'member_session_invalid', 'alice\'s session expired long ago (it is still stored: its family can refresh)');
  const alive = await h.bff('POST', PATHS.refresh, { refresh_credential: refreshed.refresh_credential });
  t.equal(alive.statusCode, 200, 'her sign-in is still usable: the refresh credential works');

  const end = Date.parse((await families(h))[0]!.expires_at);
  h.advance(Math.floor((end - h.platform.clock()) / 1000) + RETENTION_GRACE_S - 60);
  t.same(nonzero(await sweeper.sweep()), {}, 'past the family\'s absolute end, inside its grace: nothing');
  h.advance(120);
  t.same(nonzero(await sweeper.sweep()), { families: 1, sessions: 1, refresh_credentials: 3 }, 'past it: the family with its session and every refresh credential');
  for (const c of Object.values(S)) if (c !== S.bindings) t.equal(await count(h, c.name), 0, `${c.name}: empty`);
  t.equal(await count(h, S.bindings.name), 2, 'member bindings are never swept');
});

t.test('replays after a sweep are still refused where the table says so', async (t) => {
  const h = await setupMemberAuth(t, { max_proof_age_sec: 3600 });
  const { sweeper } = retention(h);
  const g = await h.signIn('alice');

  // The exchange record goes after 600 s; a repeat is then a new exchange of a used proof.
  h.advance(LIFETIMES.exchangeRecovery + 1);
  t.equal((await sweeper.sweep()).exchanges, 1);
  const repeat = await h.bff('POST', PATHS.exchange, { exchange_id: g.exchangeId, id_token: g.idToken });
  t.equal(repeat.statusCode, 409, 'the same exchange_id and proof after the sweep');
  t.equal(repeat.json().code, 'proof_replayed', 'refused as a used proof: the challenge and accepted proof are kept');
  const fresh = await h.bff('POST', PATHS.exchange, { exchange_id: `${g.exchangeId}-x`, id_token: g.idToken });
  t.equal(fresh.json().code, 'proof_replayed', 'and under a new exchange_id');

  // A consumed refresh credential is kept while its family can be used: its replay still revokes.
  const next = (await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential })).json() as { session_id: string; refresh_credential: string };
  h.advance(2 * DAY);
  const swept = await sweeper.sweep();
  t.equal(swept.refresh_credentials + swept.families + swept.sessions, 0, 'nothing of the usable sign-in is swept');
  const replay = await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential });
  t.equal(replay.json().code, 'refresh_replayed', 'the replay two days later is recognised');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: next.refresh_credential })).json().code, 'refresh_invalid', 'and it revoked the family');
  t.equal((await families(h))[0]!.revoked_reason, 'refresh_replay');

  // Once the revoked family is past its grace, it goes; the credential then means nothing anywhere.
  h.advance(RETENTION_GRACE_S + 1);
  const gone = await sweeper.sweep();
  t.same([gone.families, gone.refresh_credentials], [1, 2], 'the revoked family and both credentials');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: next.refresh_credential })).json().code, 'refresh_invalid', 'still refused');
  t.equal((await h.bff('POST', PATHS.refresh, { refresh_credential: g.refresh_credential })).json().code, 'refresh_invalid', 'still refused');
});

t.test('a Hosted Auth authorization whose result made a usable sign-in is kept until that sign-in ends', async (t) => {
  const h = await setupMemberAuth(t);
  const { sweeper } = retention(h);
  const g = await h.signIn('alice');
  const family = (await families(h))[0]!;
  const result = 'd'.repeat(64);
  const a = authorization(h, `hau_${'x'.repeat(43)}`, { status: 'exchanged', family: family.id, result_sha256: result });
  await h.store.put(H.authorizations.name, a.id, a, [a.retire_after]);
  await h.store.put(H.results.name, result, { authorization: a.id });

  h.advance(HOSTED_LIMITS.authorization + HOSTED_LIMITS.retain + 1);
  const first = await sweeper.sweep();
  t.same([first.hosted_authorizations, first.deferred], [0, 1], 'past its own window, deferred: a replayed result must still revoke the sign-in');
  const kept = await h.store.get<HostedAuthorizationRecord>(H.authorizations.name, a.id);
  t.equal(kept?.retire_after, new Date(Date.parse(family.expires_at) + RETENTION_GRACE_S * 1000).toISOString(), 're-indexed to the family\'s end and the grace');
  t.equal(await count(h, H.results.name), 1, 'with its result index');
  t.same(nonzero(await sweeper.sweep()), {}, 'the next run does not see it again');

  t.equal((await h.bff('POST', PATHS.signOut, {}, { session: g.session_id })).statusCode, 200);
  h.advance(LIFETIMES.family + RETENTION_GRACE_S);
  const last = await sweeper.sweep();
  t.equal(last.hosted_authorizations, 1, 'removed once the sign-in can no longer be used');
  t.equal(await count(h, H.results.name), 0, 'with its result index');
  t.ok(await h.store.get(S.families.name, family.id) === undefined, 'and the family');
});

t.test('the sweep is bounded per run, resumes where it stopped, and logs counts only', async (t) => {
  const h = await setupMemberAuth(t);
  const { sweeper, logged } = retention(h, 2);
  for (let i = 0; i < 3; i++) await h.challenge();
  const now = h.platform.clock();
  for (let i = 0; i < 5; i++) await h.store.put(A.signing.name, `${i}`.repeat(64), { expires_at: new Date(now).toISOString() });
  h.advance(LIFETIMES.challenge + LIFETIMES.replayWindow + RETENTION_GRACE_S + 1);
  const runs: [number, number][] = [];
  for (let i = 0; i < 4; i++) {
    const c = await sweeper.sweep();
    runs.push([c.challenges, c.signing_sessions]);
  }
  t.same(runs, [[2, 2], [1, 2], [0, 1], [0, 0]], 'at most two of each collection per run, until none is left');
  t.equal(logged.length, 3, 'a run that removed something logs once; an empty run logs nothing');
  for (const l of logged) {
    t.equal(l.msg, 'member-auth retention sweep');
    t.match(JSON.stringify(l.obj), /^\{"removed":\{("[a-z_]+":\d+,?)+\}\}$/, 'counts only: no id, digest, nonce or token');
  }

  // Two instances at once: the second finds the lock held and does nothing.
  const again = new MemberAuthRetention({ store: h.store, clock: h.platform.clock });
  const both = await Promise.all([sweeper.sweep(), again.sweep()]);
  t.ok(both.every((c) => Object.values(c).every((v) => v === 0)), 'nothing is left; neither run failed');
});

t.test('a walked collection is read a bounded slice per run, resuming after the last record read', async (t) => {
  const h = await setupMemberAuth(t);
  const now = h.platform.clock();
  const later = new Date(now + 10 * DAY * 1000).toISOString();
  const past = new Date(now - 2 * DAY * 1000).toISOString();
  for (const [id, expires] of [['0', later], ['1', later], ['2', past], ['3', past]] as const) await h.store.put(A.signing.name, id.repeat(64), { expires_at: expires });
  const sweeper = new MemberAuthRetention({ store: h.store, clock: h.platform.clock, batch: 1, scan: 2 });
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) runs.push((await sweeper.sweep()).signing_sessions);
  t.same(runs, [0, 1, 1, 0, 0], 'two kept ones read first, then one due one per run, then the end and the start again');
  t.equal(await count(h, A.signing.name), 2, 'the two not yet due are kept');
});

t.test('records of a family that is gone are removed even when the family record is missing', async (t) => {
  const h = await setupMemberAuth(t);
  const { sweeper } = retention(h);
  await h.signIn('alice');
  const family = (await families(h))[0]!;
  await h.store.batch([S.families.delOp(family.id, familyIndex(family))]);
  const c = await sweeper.sweep();
  t.same([c.sessions, c.refresh_credentials], [1, 1], 'the session and refresh credential of a family that no longer exists');
});
