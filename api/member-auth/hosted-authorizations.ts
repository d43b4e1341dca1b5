// The Hosted Auth ceremony (platform-api.md "Confidential exchange rules" 11, 12 and "BFF helper and
// browser rules"; docs/platform/hosted-auth.md). The BFF begins an authorization bound to its exact
// callback, an opaque state and a PKCE S256 challenge (RFC 7636); the member's browser, on the page the
// API serves (api/hosted-page/), proves an email address with a six-digit code and, when it has one, a
// TOTP factor; the browser is sent back to the callback with a one-time result, which the BFF that began
// the authorization exchanges, with the PKCE verifier, for a member session (member-sessions.ts).
//
// Every step runs under the authorization's lock and writes its changes in one batch; a refused step
// writes nothing, except the attempt counter of a wrong code, which is what bounds guessing. The page's
// refusals and the exchange's are CustodyErrors with registered codes (core/errors/error-codes.ts).
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import { hexToBytes } from '@noble/hashes/utils.js';
import { matchTotp } from '../tenancy/totp.ts';
import { configLock } from './member-auth-config.ts';
import { COLLECTIONS as C, type ApplicationRecord } from './member-auth-records.ts';
import { familyIndex, sameCaller, type MemberCaller, type MemberSessions } from './member-sessions.ts';
import { LIFETIMES, SESSION_COLLECTIONS as S, type SessionFamilyRecord, type SessionGrant } from './member-session-records.ts';
import { RECOVERY_RESTRICTION_S, memberLock, membersLock, type HostedMembers } from './hosted-members.ts';
import { factorSummary, matchRecoveryCode, newRecoverySet, newTotpSecret, totpStepOf } from './hosted-factors.ts';
import {
  AUTHORIZATION_ID, HOSTED_COLLECTIONS as H, HOSTED_LIMITS as L, RESULT_CODE, memberIndex, newEmailCode, newToken, normalizeEmail,
  pkceMatches, retireIndexOf, sameSecret, sha256hex, type HostedAuthorizationRecord, type HostedKeys, type HostedMemberRecord,
} from './hosted-records.ts';

export interface BeginInput { redirect_uri: string; state: string; code_challenge: string; code_challenge_method: string }
export interface BeginResult { id: string; authorization_url: string; expires_at: string; application_id: string }

/** What a page step asks the sender to send: the address and the code, for the mailer, outside the lock. */
export interface CodeToSend { to: string; code: string; authorization: HostedAuthorizationRecord }

/** The security notification a finished recovery sends to the member's address (outside the lock). */
export interface RecoveryNotice { to: string; authorization: HostedAuthorizationRecord; restrictedUntil: string }

/**
 * Where a page step leads: the page again (with a notice), the registered callback with the result, or
 * (recovery) a page answering the POST itself with codes shown once.
 */
export type StepOutcome =
  | { kind: 'page'; notice?: string; send?: CodeToSend }
  | { kind: 'callback'; location: string; notify?: RecoveryNotice }
  | { kind: 'codes'; codes: string[] };

export interface HostedAuthorizationsOptions {
  store: RecordRepository;
  audit: AuditLog;
  sessions: MemberSessions;
  members: HostedMembers;
  keys: HostedKeys;
  clock: () => number;
}

const redirectMismatch = () => new CustodyError('hosted_redirect_mismatch', 'redirect_uri must be exactly the application\'s registered result callback URL');
const resultInvalid = (why: string) => new CustodyError('hosted_result_invalid', `the Hosted Auth result was refused: ${why}`);
const outOfOrder = (why: string) => new CustodyError('account_center_step_out_of_order', `recovery steps go in order: ${why}`);
const flowExpired = () => new CustodyError('hosted_authorization_expired', 'this sign-in expired; go back to the application and start again');

/** The BFF principal of a Hosted application, and nothing else, begins and completes its ceremonies. */
export function checkHostedCaller(caller: MemberCaller): NonNullable<ApplicationRecord['hosted']> {
  const app = caller.application;
  if (app.kind !== 'hosted' || !app.hosted) throw new CustodyError('forbidden', 'Hosted Auth operations need the publishable key of a Hosted application; a BYO OIDC application uses /member-auth/proof/…');
  if (app.hosted.bff_key_id !== caller.principal) throw new CustodyError('forbidden', 'this bearer key is not the application\'s BFF principal (bff_key_id)');
  return app.hosted;
}

export class HostedAuthorizations {
  constructor(private readonly o: HostedAuthorizationsOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  private lock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`member-auth-hosted-authorization:${id}`, fn);
  }

  private put(a: HostedAuthorizationRecord): Op {
    return H.authorizations.putOp(a.id, a, { index: retireIndexOf(a) });
  }

  /** POST /member-auth/hosted/authorizations. */
  async begin(caller: MemberCaller, actor: Actor, input: BeginInput, publicOrigin: string): Promise<BeginResult> {
    const hosted = checkHostedCaller(caller);
    if (input.code_challenge_method !== 'S256') throw new CustodyError('invalid_request', 'code_challenge_method must be S256');
    if (input.redirect_uri !== hosted.result_callback_url) throw redirectMismatch();
    const now = this.o.clock();
    const app = caller.application;
    const expires = now + L.authorization * 1000;
    const a: HostedAuthorizationRecord = {
      v: 1, id: newToken('hau_'), tenant: caller.tenant, workspace: caller.workspace, environment: app.environment, application: app.id, application_version: app.version,
      publishable_key: caller.publishable_key, principal: caller.principal, origin: hosted.origin, redirect_uri: input.redirect_uri, state: input.state,
      code_challenge: input.code_challenge, status: 'pending', created_at: this.iso(now), expires_at: this.iso(expires), flow_cookie_sha256: null, email: null,
      member_id: null, eligible: false, code_sha256: null, code_expires_at: null, codes_sent: 0, last_code_sent_at: null, attempts: 0, refused_code: null,
      result_sha256: null, result_expires_at: null, member_created: false, amr: [], authenticated_at: null, family: null, exchanged_at: null,
      retire_after: this.iso(expires + L.retain * 1000),
    };
    await this.o.store.batch([
      this.put(a),
      this.o.audit.op(caller, actor, 'member_auth.hosted_authorization.create', newId('hal', now), null, { application: app.id, application_version: app.version, expires_at: a.expires_at }),
    ]);
    return { id: a.id, authorization_url: `${publicOrigin}/v1/hosted-auth/${a.id}`, expires_at: a.expires_at, application_id: app.id };
  }

  // ── The page's steps ────────────────────────────────────────────────────────────────────────────────

  /** The authorization a page URL names; unknown or malformed ids are one answer. */
  async find(id: string): Promise<HostedAuthorizationRecord> {
    const a = AUTHORIZATION_ID.test(id) ? await H.authorizations.in(this.o.store).get(id) : undefined;
    if (!a || a.id !== id) throw new CustodyError('not_found', 'no such sign-in; go back to the application and start again');
    return a;
  }

  /** The ceremony may go on: not expired, not ended, and its application unchanged since it began. */
  private async live(a: HostedAuthorizationRecord): Promise<ApplicationRecord> {
    if (a.status === 'locked') throw new CustodyError('hosted_attempts_exhausted', 'too many wrong codes: this sign-in is locked; go back to the application and start again');
    if (a.status === 'refused') throw new CustodyError(a.refused_code === 'hosted_totp_required' ? 'hosted_totp_required' : 'forbidden', 'this sign-in was refused');
    if (a.status === 'authenticated' || a.status === 'exchanged') throw new CustodyError('hosted_authorization_used', 'this sign-in is already complete; go back to the application');
    if (Date.parse(a.expires_at) <= this.o.clock()) throw flowExpired();
    const app = await C.applications.in(this.o.store).get(a.application);
    if (!app || app.version !== a.application_version || app.workspace !== a.workspace || !app.hosted) {
      throw new CustodyError('member_auth_changed', 'the application\'s sign-in settings changed since this sign-in began; go back to the application and start again');
    }
    return app;
  }

  /**
   * GET of the page: the first browser to open it gets the flow cookie (the value is returned to set);
   * later requests must carry it. Returns the authorization, its application and the cookie value in use.
   */
  open(id: string, cookie: string | undefined): Promise<{ authorization: HostedAuthorizationRecord; application: ApplicationRecord; setCookie?: string; csrf: string }> {
    return this.lock(id, async () => {
      const a = await this.find(id);
      const application = await this.live(a);
      if (a.flow_cookie_sha256 === null) {
        const value = newToken('');
        const bound = { ...a, flow_cookie_sha256: sha256hex(value) };
        await this.o.store.batch([this.put(bound)]);
        return { authorization: bound, application, setCookie: value, csrf: this.o.keys.csrfToken(id, value) };
      }
      this.checkCookie(a, cookie);
      return { authorization: a, application, csrf: this.o.keys.csrfToken(id, cookie!) };
    });
  }

  /** The CSRF token of the page's forms for this browser's cookie (a page rendered in a POST's answer). */
  csrfOf(id: string, cookie: string): string {
    return this.o.keys.csrfToken(id, cookie);
  }

  private checkCookie(a: HostedAuthorizationRecord, cookie: string | undefined): void {
    if (!cookie || a.flow_cookie_sha256 === null || !sameSecret(sha256hex(cookie), a.flow_cookie_sha256)) {
      throw new CustodyError('hosted_flow_mismatch', 'this sign-in was opened in another browser (or its cookie is gone); go back to the application and start again');
    }
  }

  /** A form POST: the flow cookie, then the CSRF token bound to it, in constant time; nothing is read before. */
  private async step(id: string, cookie: string | undefined, csrf: string | undefined, fn: (a: HostedAuthorizationRecord, app: ApplicationRecord) => Promise<StepOutcome>): Promise<StepOutcome> {
    return this.lock(id, async () => {
      const a = await this.find(id);
      this.checkCookie(a, cookie);
      if (!csrf || !sameSecret(csrf, this.o.keys.csrfToken(id, cookie!))) throw new CustodyError('hosted_csrf_failed', 'the form is stale or was not sent by this page; reload it');
      const app = await this.live(a);
      return fn(a, app);
    });
  }

  private newCode(a: HostedAuthorizationRecord, now: number): { next: HostedAuthorizationRecord; code: string } {
    const code = newEmailCode();
    const sent = a.codes_sent + 1;
    const next: HostedAuthorizationRecord = {
      ...a, status: 'code_sent', codes_sent: sent, attempts: 0, last_code_sent_at: this.iso(now),
      code_sha256: this.o.keys.codeDigest(a.id, sent, code), code_expires_at: this.iso(Math.min(now + L.emailCode * 1000, Date.parse(a.expires_at))),
    };
    return { next, code };
  }

  /**
   * The address step. The page that follows is the same whatever the address: whether it is invited,
   * disabled or unknown is never shown (no enumeration). A code is sent only where it can lead to a
   * session: an active member, or any address of an open application; for the others nothing is sent
   * and every code is wrong (docs/platform/hosted-auth.md "Enumeration").
   */
  submitEmail(id: string, cookie: string | undefined, csrf: string | undefined, text: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a, app) => {
      if (a.status !== 'pending') return { kind: 'page' };
      const email = normalizeEmail(text ?? '');
      if (!email) return { kind: 'page', notice: 'email_invalid' };
      const member = await this.o.members.byEmail(app.id, email);
      const eligible = member ? member.status === 'active' && !member.demo : app.hosted!.enrollment === 'open';
      const now = this.o.clock();
      const { next, code } = this.newCode({ ...a, email, member_id: member?.id ?? null, eligible }, now);
      await this.o.store.batch([this.put(next)]);
      return { kind: 'page', ...(eligible ? { send: { to: email, code, authorization: next } } : {}) };
    });
  }

  /** Another code, at most `codesPerAuthorization` in all and one per `resendInterval`; the old one stops working. */
  resend(id: string, cookie: string | undefined, csrf: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      // The fresh email code of a recovery may be sent again too, within the same bounds.
      if (a.status !== 'code_sent' && a.status !== 'recovery_email') return { kind: 'page' };
      const now = this.o.clock();
      if (a.codes_sent >= L.codesPerAuthorization + (a.status === 'recovery_email' ? 1 : 0)) return { kind: 'page', notice: 'resend_exhausted' };
      if (now - Date.parse(a.last_code_sent_at!) < L.resendInterval * 1000) return { kind: 'page', notice: 'resend_wait' };
      const made = this.newCode(a, now);
      const next = { ...made.next, status: a.status };
      await this.o.store.batch([this.put(next)]);
      return { kind: 'page', notice: 'resent', ...(a.eligible ? { send: { to: a.email!, code: made.code, authorization: next } } : {}) };
    });
  }

  /** A wrong code counts; the fifth locks the authorization (the one write a refusal makes). */
  private async wrong(a: HostedAuthorizationRecord, notice: string): Promise<StepOutcome> {
    const attempts = a.attempts + 1;
    const locked = attempts >= L.attempts;
    await this.o.store.batch([this.put({ ...a, attempts, status: locked ? 'locked' : a.status, ...(locked ? { email: null, code_sha256: null } : {}) })]);
    if (locked) throw new CustodyError('hosted_attempts_exhausted', 'too many wrong codes: this sign-in is locked; go back to the application and start again');
    return { kind: 'page', notice };
  }

  /** The email-code step: HMAC of the code under its send counter, compared in constant time. */
  submitCode(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a, app) => {
      if (a.status !== 'code_sent') return { kind: 'page' };
      const now = this.o.clock();
      if (Date.parse(a.code_expires_at!) <= now) return { kind: 'page', notice: 'code_expired' };
      const given = /^\d{6}$/.test((code ?? '').trim()) ? code!.trim() : '';
      const matches = sameSecret(this.o.keys.codeDigest(a.id, a.codes_sent, given), a.code_sha256!);
      if (!matches || !a.eligible) return this.wrong(a, 'code_wrong');
      return this.o.store.exclusive(membersLock(app.id), async () => {
        let member = a.member_id ? await H.members.in(this.o.store).get(a.member_id) : await this.o.members.byEmail(app.id, a.email!);
        const ops: Op[] = [];
        let created = false;
        if (!member) {
          if (app.hosted!.enrollment !== 'open') return this.wrong(a, 'code_wrong');
          const made = this.o.members.newMember(app, a.email!, 'open');
          member = made.member;
          ops.push(...made.ops);
          created = true;
        }
        if (member.status !== 'active') return this.wrong(a, 'code_wrong');
        const verified = { ...a, member_id: member.id, member_created: created, code_sha256: null, attempts: 0 };
        if (member.totp_secret) {
          await this.o.store.batch([...ops, this.put({ ...verified, status: 'totp' })]);
          return { kind: 'page' };
        }
        if (app.hosted!.require_totp) {
          await this.o.store.batch([...ops, this.put({ ...verified, status: 'refused', refused_code: 'hosted_totp_required', email: null })]);
          throw new CustodyError('hosted_totp_required', 'this application requires an authenticator app (TOTP) and this account has none; set one up in the Account Center, then sign in again');
        }
        return this.complete(verified, member, ['email_otp'], ops);
      });
    });
  }

  /** The TOTP step: a code of the current step or one either side, after the last step this member used. */
  submitTotp(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'totp') return { kind: 'page' };
      return this.o.store.exclusive(memberLock(a.member_id!), async () => {
        const member = await H.members.in(this.o.store).get(a.member_id!);
        if (!member || member.status !== 'active' || !member.totp_secret) return this.wrong(a, 'totp_wrong');
        const step = matchTotp(hexToBytes(member.totp_secret), (code ?? '').trim(), Math.floor(this.o.clock() / 1000), member.totp_last_step ?? -1);
        if (step === undefined) return this.wrong(a, 'totp_wrong');
        const used: HostedMemberRecord = { ...member, totp_last_step: step, updated_at: this.iso() };
        return this.complete(a, used, ['email_otp', 'otp', 'mfa'], [H.members.putOp(used.id, used, { index: memberIndex(used) })]);
      });
    });
  }

  // ── Lost-all-factor recovery (rule 13; docs/platform/account-center.md) ──────────────────────────────
  // From the TOTP step: one saved recovery code, then a fresh email code, then a new TOTP factor
  // confirmed by a code, then a new recovery-code set acknowledged, then the security notification
  // accepted. Each step needs the one before (409 account_center_step_out_of_order otherwise); nothing
  // changes on the member until the last, which replaces the factor and the codes, revokes every session
  // of the member, and restricts member actions for 24 hours (hosted-members.ts `recoveryRestricted`).

  /** "Lost your authenticator?": only from the TOTP step of a member with a factor. */
  startRecovery(id: string, cookie: string | undefined, csrf: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status === 'recovery_code') return { kind: 'page' };
      if (a.status !== 'totp') throw outOfOrder('recovery starts from the authenticator step, after the email code');
      await this.o.store.batch([this.put({ ...a, status: 'recovery_code' })]);
      return { kind: 'page' };
    });
  }

  /** One unused saved recovery code: it is used up, and a fresh email code goes out. */
  submitRecoveryCode(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'recovery_code') throw outOfOrder('start with "lost your authenticator" on the authenticator step');
      return this.o.store.exclusive(memberLock(a.member_id!), async () => {
        const member = await H.members.in(this.o.store).get(a.member_id!);
        const index = member && member.status === 'active' ? matchRecoveryCode(this.o.keys, member, code) : undefined;
        if (member === undefined || index === undefined) return this.wrong(a, 'recovery_code_wrong');
        const now = this.o.clock();
        const codes = member.recovery_codes!.map((c, i) => (i === index ? { ...c, used_at: this.iso(now) } : c));
        const used: HostedMemberRecord = { ...member, recovery_codes: codes, updated_at: this.iso(now) };
        const { next, code: emailCode } = this.newCode(a, now);
        await this.o.store.batch([
          H.members.putOp(used.id, used, { index: memberIndex(used) }),
          this.put({ ...next, status: 'recovery_email' }),
          this.o.audit.op(a, { type: 'hosted_member', id: member.id }, 'member_auth.hosted_member.recovery_code_use', member.id, factorSummary(member), factorSummary(used)),
        ]);
        return { kind: 'page', send: { to: member.email, code: emailCode, authorization: next } };
      });
    });
  }

  /** The fresh email code of the recovery; then a new TOTP secret to enrol. */
  submitRecoveryEmail(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'recovery_email') throw outOfOrder('a saved recovery code comes first');
      if (Date.parse(a.code_expires_at!) <= this.o.clock()) return { kind: 'page', notice: 'code_expired' };
      const given = /^\d{6}$/.test((code ?? '').trim()) ? code!.trim() : '';
      if (!a.code_sha256 || !sameSecret(this.o.keys.codeDigest(a.id, a.codes_sent, given), a.code_sha256)) return this.wrong(a, 'code_wrong');
      await this.o.store.batch([this.put({ ...a, status: 'recovery_enrol', code_sha256: null, attempts: 0, recovery: { secret: newTotpSecret(), confirmed_step: null, codes: null, acknowledged: false } })]);
      return { kind: 'page' };
    });
  }

  /** The replacement factor, confirmed by a current code of it. */
  submitRecoveryEnrol(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'recovery_enrol' || !a.recovery) throw outOfOrder('the saved recovery code and the fresh email code come first');
      const step = totpStepOf(a.recovery.secret, code, this.o.clock(), null);
      if (step === undefined) return this.wrong(a, 'totp_wrong');
      await this.o.store.batch([this.put({ ...a, status: 'recovery_codes', attempts: 0, recovery: { ...a.recovery, confirmed_step: step } })]);
      return { kind: 'page' };
    });
  }

  /** The new code set, shown in this answer only; asking again makes another set (the last one shown counts). */
  recoveryCodes(id: string, cookie: string | undefined, csrf: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'recovery_codes' || !a.recovery) throw outOfOrder('replace the authenticator first');
      const { codes, digests } = newRecoverySet(this.o.keys, a.member_id!);
      await this.o.store.batch([this.put({ ...a, recovery: { ...a.recovery, codes: digests.map((d) => d.digest), acknowledged: false } })]);
      return { kind: 'codes', codes };
    });
  }

  /** The member confirms it saved the new codes (a checked box). */
  acknowledgeRecoveryCodes(id: string, cookie: string | undefined, csrf: string | undefined, ack: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'recovery_codes' || !a.recovery?.codes) throw outOfOrder('show the new recovery codes first');
      if (ack !== 'yes') return { kind: 'page', notice: 'ack_required' };
      await this.o.store.batch([this.put({ ...a, status: 'recovery_notice', recovery: { ...a.recovery, acknowledged: true } })]);
      return { kind: 'page' };
    });
  }

  /**
   * The member accepts the security notification: the factor and the codes are replaced, every session
   * of the member ends, member actions are restricted for 24 hours, an email tells the member, and the
   * sign-in completes (its session is restricted too: it began before the restriction ends).
   */
  acceptRecovery(id: string, cookie: string | undefined, csrf: string | undefined, accept: string | undefined): Promise<StepOutcome> {
    return this.step(id, cookie, csrf, async (a) => {
      if (a.status !== 'recovery_notice' || !a.recovery?.acknowledged || !a.recovery.codes || a.recovery.confirmed_step === null) throw outOfOrder('acknowledge the new recovery codes first');
      if (accept !== 'yes') return { kind: 'page', notice: 'accept_required' };
      const r = a.recovery;
      return this.o.store.exclusive(memberLock(a.member_id!), async () => {
        const member = await H.members.in(this.o.store).get(a.member_id!);
        if (!member || member.status !== 'active') throw new CustodyError('member_binding_inactive', 'this member is not active in the application');
        const now = this.o.clock();
        const at = this.iso(now);
        const restrictedUntil = this.iso(now + RECOVERY_RESTRICTION_S * 1000);
        const after: HostedMemberRecord = {
          ...member, totp_secret: r.secret, totp_last_step: r.confirmed_step, totp_enrolled_at: at, recovery_codes: r.codes!.map((digest) => ({ digest, used_at: null })),
          recovery_codes_created_at: at, restricted_until: restrictedUntil, updated_at: at,
        };
        const families = (await S.families.in(this.o.store).byIndex(`${member.application}\x00${member.id}\x00`)).filter((f) => f.status === 'active');
        const actor: Actor = { type: 'hosted_member', id: member.id };
        const ops: Op[] = [
          H.members.putOp(member.id, after, { index: memberIndex(member) }),
          ...families.map((f) => S.families.putOp(f.id, { ...f, status: 'revoked', revoked_at: at, revoked_reason: 'member_recovery' } satisfies SessionFamilyRecord, { index: familyIndex(f) })),
          this.o.audit.op(a, actor, 'member_auth.hosted_member.recover', member.id, factorSummary(member), { ...factorSummary(after), sessions_revoked: families.length }),
        ];
        const out = await this.complete({ ...a, recovery: null }, after, ['email_otp', 'recovery_code', 'otp'], ops);
        return out.kind === 'callback' ? { ...out, notify: { to: member.email, authorization: a, restrictedUntil } } : out;
      });
    });
  }

  /** Authenticated: a one-time result for the callback; the address is no longer kept. */
  private async complete(a: HostedAuthorizationRecord, member: HostedMemberRecord, amr: string[], ops: Op[]): Promise<StepOutcome> {
    const now = this.o.clock();
    const result = newToken('hrc_');
    const hash = sha256hex(result);
    const done: HostedAuthorizationRecord = {
      ...a, status: 'authenticated', member_id: member.id, email: null, code_sha256: null, amr, authenticated_at: this.iso(now),
      result_sha256: hash, result_expires_at: this.iso(now + L.result * 1000),
    };
    await this.o.store.batch([...ops, this.put(done), H.results.putOp(hash, { authorization: a.id })]);
    const location = new URL(a.redirect_uri);
    location.searchParams.append('code', result);
    location.searchParams.append('state', a.state);
    return { kind: 'callback', location: location.toString() };
  }

  // ── The BFF's exchange ──────────────────────────────────────────────────────────────────────────────

  /**
   * POST /member-auth/hosted/authorizations/exchange. The result is one-time: a second exchange by the
   * same caller is refused (409 hosted_result_replayed) and, as OAuth 2.0 advises for a replayed
   * authorization code (RFC 6749 §4.1.2), revokes the session the first one created. A caller that is
   * not the authorization's own (application, publishable key, BFF principal) is told the result is
   * unknown, and nothing changes.
   */
  async exchange(caller: MemberCaller, actor: Actor, input: { code: string; code_verifier: string; redirect_uri: string }): Promise<SessionGrant> {
    checkHostedCaller(caller);
    if (!RESULT_CODE.test(input.code)) throw resultInvalid('unknown');
    const hash = sha256hex(input.code);
    const ref = await H.results.in(this.o.store).get(hash);
    const first = ref ? await H.authorizations.in(this.o.store).get(ref.authorization) : undefined;
    if (!first || !sameCaller(first, caller)) throw resultInvalid('unknown');
    return this.lock(first.id, () => this.o.store.exclusive(configLock(caller.workspace), async () => {
      const a = (await H.authorizations.in(this.o.store).get(first.id))!;
      if (!a.result_sha256 || !sameSecret(a.result_sha256, hash)) throw resultInvalid('unknown');
      if (a.status === 'exchanged') {
        const family = a.family ? await S.families.in(this.o.store).get(a.family) : undefined;
        if (family && family.status === 'active') {
          await this.o.store.batch([
            S.families.putOp(family.id, { ...family, status: 'revoked', revoked_at: this.iso(), revoked_reason: 'result_replay' } satisfies SessionFamilyRecord, { index: familyIndex(family) }),
            this.o.audit.op(family, actor, 'member_auth.session_family.revoke', family.id, null, { member_id: family.member_id, application: family.application, reason: 'result_replay' }),
          ]);
        }
        throw new CustodyError('hosted_result_replayed', 'this Hosted Auth result was already exchanged: the session made from it is revoked; the member must sign in again');
      }
      if (a.status !== 'authenticated') throw resultInvalid('unknown');
      const now = this.o.clock();
      if (Date.parse(a.result_expires_at!) <= now) throw resultInvalid(`it expired (a result must be exchanged within ${L.result} s)`);
      if (input.redirect_uri !== a.redirect_uri) throw redirectMismatch();
      if (!pkceMatches(input.code_verifier, a.code_challenge)) throw resultInvalid('code_verifier does not match the code_challenge (S256)');
      // Rule 6: the application is read again under the configuration lock; any change since the
      // authorization began (or since the caller's publishable key resolved it) refuses creation.
      const current = await C.applications.in(this.o.store).get(a.application);
      if (!current || current.version !== a.application_version || current.version !== caller.application.version || current.publishable_key !== caller.publishable_key) {
        throw new CustodyError('member_auth_changed', 'the member-auth application changed during the sign-in; no session was created: start a new authorization');
      }
      const member = await H.members.in(this.o.store).get(a.member_id!);
      if (!member || member.status !== 'active' || member.application !== current.id) throw new CustodyError('member_binding_inactive', 'this member is not active in the application');
      const { grant, ops, family } = this.session({ ...caller, application: current }, member, a.amr, a.authenticated_at!, a.member_created);
      await this.o.store.batch([
        ...ops,
        this.put({ ...a, status: 'exchanged', family: family.id, exchanged_at: this.iso(now) }),
        H.members.putOp(member.id, { ...member, last_sign_in_at: this.iso(now) }, { index: memberIndex(member) }),
        this.o.audit.op(caller, actor, 'member_auth.session.create', family.id, null, {
          member_id: member.id, application: current.id, application_version: current.version, binding_created: a.member_created, kind: 'hosted',
        }),
      ]);
      return grant;
    }));
  }

  /** A new family and session for a hosted member, as ops for the caller's batch. */
  private session(caller: MemberCaller, member: HostedMemberRecord, amr: string[], authenticatedAt: string, created: boolean): { grant: SessionGrant; ops: Op[]; family: SessionFamilyRecord } {
    const now = this.o.clock();
    const family: SessionFamilyRecord = {
      v: 1, id: newId('msf', now), tenant: caller.tenant, workspace: caller.workspace, application: caller.application.id, publishable_key: caller.publishable_key,
      principal: caller.principal, member_id: member.id, binding: member.id, status: 'active', current_session: '', created_at: this.iso(now),
      expires_at: this.iso(now + LIFETIMES.family * 1000), revoked_at: null, revoked_reason: null, authenticated_at: authenticatedAt, acr: null, amr,
    };
    const minted = this.o.sessions.mint(caller, family);
    family.current_session = minted.sessionHash;
    return { grant: { ...minted.grant, member: { id: member.id, created } }, ops: [S.families.putOp(family.id, family, { index: familyIndex(family) }), ...minted.ops], family };
  }

  /**
   * POST /member-auth/hosted/authorizations/sandbox-demo: the application's demo persona (a hosted member
   * marked demo, made on first use) gets a session at once. Sandbox workspaces only.
   */
  async sandboxDemo(caller: MemberCaller, actor: Actor): Promise<SessionGrant> {
    checkHostedCaller(caller);
    if (caller.environment !== 'sandbox' || caller.application.environment !== 'sandbox') {
      throw new CustodyError('sandbox_only', 'the demo persona exists in sandbox workspaces only; production members sign in through the Hosted Auth ceremony');
    }
    return this.o.store.exclusive(membersLock(caller.application.id), () => this.o.store.exclusive(configLock(caller.workspace), async () => {
      const current = await C.applications.in(this.o.store).get(caller.application.id);
      if (!current || current.version !== caller.application.version || current.publishable_key !== caller.publishable_key) {
        throw new CustodyError('member_auth_changed', 'the member-auth application changed; no session was created');
      }
      const { member, ops: memberOps, created } = await this.o.members.demoMember(current);
      if (member.status !== 'active') throw new CustodyError('member_binding_inactive', 'the demo persona of this application is disabled');
      const now = this.o.clock();
      const { grant, ops, family } = this.session({ ...caller, application: current }, member, ['demo'], this.iso(now), created);
      await this.o.store.batch([
        ...memberOps,
        ...ops,
        H.members.putOp(member.id, { ...member, last_sign_in_at: this.iso(now) }, { index: memberIndex(member) }),
        this.o.audit.op(caller, actor, 'member_auth.session.create', family.id, null, {
          member_id: member.id, application: current.id, application_version: current.version, binding_created: created, kind: 'hosted_demo',
        }),
      ]);
      return grant;
    }));
  }
}
