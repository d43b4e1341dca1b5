// The Hosted Account Center (platform-api.md "Confidential exchange rules" 13 and "BFF helper and browser
// rules"; docs/platform/account-center.md). The BFF of a Hosted application begins a handoff from a
// member's session: one-use, bound to the application, its publishable key, the BFF principal and the
// session family, carrying context only (the member expected). On the page the API serves
// (api/hosted-page/account-center-routes.ts) that member authenticates (email code, then TOTP when it
// has one); any other address gets the same page and codes that never work. Only then can the member
// enrol a TOTP factor (confirmed by a current code), remove it (with a current code) or generate a new
// set of recovery codes (shown once). Finish sends the browser to the return URL with a one-time result
// that the BFF, with the PKCE verifier (RFC 7636 S256) and the same session family, exchanges for a
// summary of what changed: no secret ever reaches the BFF.
//
// Every step runs under the handoff's lock and writes its changes in one batch; a refusal writes
// nothing, except the attempt counter of a wrong code, which bounds guessing.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import { COLLECTIONS as C, type ApplicationRecord } from './member-auth-records.ts';
import { sameCaller, type MemberCaller, type MemberSessions } from './member-sessions.ts';
import { checkHostedCaller } from './hosted-authorizations.ts';
import { memberLock } from './hosted-members.ts';
import {
  CODE_CHALLENGE, HOSTED_COLLECTIONS as H, HOSTED_LIMITS as HL, STATE, memberIndex, newEmailCode, newToken, normalizeEmail, pkceMatches, sameSecret, sha256hex,
  type HostedKeys, type HostedMemberRecord,
} from './hosted-records.ts';
import {
  ACCOUNT_CENTER_COLLECTIONS as AC, ACCOUNT_CENTER_LIMITS as L, ACCOUNT_CENTER_RESULT, HANDOFF_ID, handoffRetireIndex,
  type AccountCenterChange, type AccountCenterHandoffRecord,
} from './account-center-records.ts';
import { factorSummary, newRecoverySet, newTotpSecret, totpStepOf, type FactorSummary } from './hosted-factors.ts';
import { enrolPasskey, passkeyOptIn, passkeysOn, registrationOptions, type AccountCenterPasskeySource, type RegistrationFields } from './account-center-passkeys.ts';
import { ACTION_COLLECTIONS as A, type MemberActionRecord } from './member-action-records.ts';
import { MEMBER_ACTION_ID, memberActionBatchNonce, memberActionNonce } from '../../core/auth/member-action.ts';
import { EndUserTokenError, verifyEndUserToken } from '../../core/auth/end-user-token.ts';
import type { PasskeyAssertion } from '../../core/session/member-action-binding.ts';
import { intentLine } from './member-action-summary.ts';
import type { PasskeyAssertionFields } from './account-center-records.ts';

export interface HandoffInput { return_url: string; state: string; code_challenge: string; code_challenge_method?: string | undefined; member_action_id?: string | undefined }
export interface HandoffResult { id: string; handoff_url: string; expires_at: string }
/** What the member approved on an approval visit: for POST /v1/member-actions/passkey/complete. */
export interface AccountCenterApproval { action_id: string; credential: string; assertion: PasskeyAssertionFields }
export interface AccountCenterSummary extends FactorSummary { member_id: string; changes: AccountCenterChange[]; approval: AccountCenterApproval | null }

/** What the approval page shows and runs: the action in words and the WebAuthn request (JSON). */
export interface ApprovalView { action_id: string; lines: string[]; purpose: string | null; request: string }

/** A code for the mailer to send, outside the lock. */
export interface AccountCenterCode { to: string; code: string; tenant: string; workspace: string }

export type AccountCenterOutcome =
  | { kind: 'page'; notice?: string; send?: AccountCenterCode }
  | { kind: 'codes'; codes: string[] }
  | { kind: 'callback'; location: string };

export interface AccountCenterOptions {
  store: RecordRepository;
  audit: AuditLog;
  sessions: MemberSessions;
  keys: HostedKeys;
  clock: () => number;
  /** Account Center passkeys (account-center-passkeys.ts); without, they are off for every tenant. */
  passkeys?: AccountCenterPasskeySource | undefined;
}

const returnUrlInvalid = () => new CustodyError('account_center_return_url_invalid', 'return_url must be exactly a registered redirect URL of the workspace at the application\'s origin');
const notFound = () => new CustodyError('not_found', 'no such Account Center visit; go back to the application and start again');
const resultUnknown = () => new CustodyError('not_found', 'no such Account Center result for this caller');
const outOfOrder = (why: string) => new CustodyError('account_center_step_out_of_order', why);
const approvalOnly = () => outOfOrder('this visit approves a member action; it changes no factor');
/** The nonce the action's proof carries (core/auth/member-action.ts): the WebAuthn challenge. */
const nonceOf = (a: MemberActionRecord) => (a.batch ? memberActionBatchNonce(a.id, Buffer.from(a.salt, 'hex'), a.batch.sha256) : memberActionNonce(a.id, Buffer.from(a.salt, 'hex'), a.intent_sha256));
/** The assertion's parts as bytes: canonical base64url, else validation_failed. */
function assertionOf(f: PasskeyAssertionFields): PasskeyAssertion {
  const bytes = (v: string, what: string) => {
    const b = Buffer.from(v, 'base64url');
    if (b.length === 0 || b.toString('base64url') !== v) throw new CustodyError('validation_failed', `the passkey answer's ${what} is not canonical base64url`);
    return new Uint8Array(b);
  };
  return { credentialId: bytes(f.id, 'id'), authenticatorData: bytes(f.authenticator_data, 'authenticator data'), clientDataJson: bytes(f.client_data_json, 'client data'), signature: bytes(f.signature, 'signature') };
}
/** The audit actor of a member's own change. */
export const memberActor = (memberId: string): Actor => ({ type: 'hosted_member', id: memberId });

export class AccountCenter {
  constructor(private readonly o: AccountCenterOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  private lock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`member-auth-account-center:${id}`, fn);
  }

  private put(h: AccountCenterHandoffRecord): Op {
    return AC.handoffs.putOp(h.id, h, { index: handoffRetireIndex(h) });
  }

  /** POST /account-center/handoffs: the member of the exact session `sessionId` names is the one expected. */
  async begin(caller: MemberCaller, actor: Actor, sessionId: string | undefined, input: HandoffInput, publicOrigin: string): Promise<HandoffResult> {
    const hosted = checkHostedCaller(caller);
    const { session, family } = await this.o.sessions.validate(caller, sessionId);
    if ((input.code_challenge_method ?? 'S256') !== 'S256') throw new CustodyError('invalid_request', 'code_challenge_method must be S256');
    if (!CODE_CHALLENGE.test(input.code_challenge)) throw new CustodyError('invalid_request', 'code_challenge must be base64url(SHA-256(code_verifier)), 43 characters');
    if (!STATE.test(input.state)) throw new CustodyError('invalid_request', 'state must be 1 to 512 printable ASCII characters');
    // The exact-URL rules (exact-urls.ts): the stored, normalized form, registered in this workspace, at the application's origin.
    const ref = await C.redirectNames.in(this.o.store).get(`${caller.workspace}\x00${input.return_url}`);
    const registered = ref ? await C.redirectUrls.in(this.o.store).get(ref.id) : undefined;
    if (!registered || registered.workspace !== caller.workspace || registered.url !== input.return_url || registered.origin !== hosted.origin) throw returnUrlInvalid();
    const now = this.o.clock();
    const app = caller.application;
    // An approval visit: an action of this sign-in, still waiting for its proof, of a member with an Account Center passkey.
    let action: MemberActionRecord | undefined;
    if (input.member_action_id !== undefined) {
      action = MEMBER_ACTION_ID.test(input.member_action_id) ? await A.actions.in(this.o.store).get(input.member_action_id) : undefined;
      if (!action || !sameCaller(action, caller) || action.family !== family.id || action.member_id !== session.member_id) throw new CustodyError('not_found', 'no such member action');
      if (action.status !== 'pending_proof') throw new CustodyError('member_action_not_pending', `the member action is ${action.status}`);
      if (Date.parse(action.expires_at) <= now) throw new CustodyError('member_action_expired', 'the member action expired; begin a new one');
      await passkeyOptIn(this.o.passkeys, app);
      const member = await H.members.in(this.o.store).get(session.member_id);
      if (!member || !this.usablePasskeys(member, now).length) throw outOfOrder('the member has no Account Center passkey: enrol one on the Account Center first');
    }
    // An approval visit lasts no longer than the action can wait for its proof.
    const expires = Math.min(now + L.handoff * 1000, action ? Date.parse(action.expires_at) : Infinity);
    const h: AccountCenterHandoffRecord = {
      v: 1, id: newToken('hac_'), tenant: caller.tenant, workspace: caller.workspace, environment: app.environment, application: app.id, application_version: app.version,
      publishable_key: caller.publishable_key, principal: caller.principal, family: family.id, member_id: session.member_id, origin: hosted.origin,
      return_url: registered.url, state: input.state, code_challenge: input.code_challenge, status: 'pending', created_at: this.iso(now), expires_at: this.iso(expires),
      flow_cookie_sha256: null, eligible: false, code_sha256: null, code_expires_at: null, codes_sent: 0, last_code_sent_at: null, attempts: 0, authenticated_at: null,
      pending_totp: null, changes: [], ...(action ? { member_action_id: action.id } : {}), result_sha256: null, result_expires_at: null, exchanged_at: null, retire_after: this.iso(expires + L.retain * 1000),
    };
    await this.o.store.batch([
      this.put(h),
      this.o.audit.op(caller, actor, 'member_auth.account_center.handoff', newId('hal', now), null, { application: app.id, member_id: h.member_id, expires_at: h.expires_at, ...(action ? { member_action_id: action.id } : {}) }),
    ]);
    return { id: h.id, handoff_url: `${publicOrigin}/v1/account-center/${h.id}`, expires_at: h.expires_at };
  }

  // ── The page ────────────────────────────────────────────────────────────────────────────────────────

  async find(id: string): Promise<AccountCenterHandoffRecord> {
    const h = HANDOFF_ID.test(id) ? await AC.handoffs.in(this.o.store).get(id) : undefined;
    if (!h || h.id !== id) throw notFound();
    return h;
  }

  /** The member this visit is for, active in the application. */
  async memberOf(h: AccountCenterHandoffRecord): Promise<HostedMemberRecord> {
    const m = await H.members.in(this.o.store).get(h.member_id);
    if (!m || m.status !== 'active' || m.application !== h.application) throw new CustodyError('member_binding_inactive', 'this member is not active in the application');
    return m;
  }

  private async live(h: AccountCenterHandoffRecord): Promise<ApplicationRecord> {
    if (h.status === 'locked') throw new CustodyError('hosted_attempts_exhausted', 'too many wrong codes: this visit is locked; go back to the application and start again');
    if (h.status === 'finished' || h.status === 'exchanged') throw new CustodyError('hosted_authorization_used', 'this visit is finished; go back to the application');
    if (Date.parse(h.expires_at) <= this.o.clock()) throw new CustodyError('hosted_authorization_expired', 'this visit expired; go back to the application and start again');
    const app = await C.applications.in(this.o.store).get(h.application);
    if (!app || app.version !== h.application_version || app.workspace !== h.workspace || !app.hosted) {
      throw new CustodyError('member_auth_changed', 'the application\'s sign-in settings changed since this visit began; go back to the application and start again');
    }
    return app;
  }

  private checkCookie(h: AccountCenterHandoffRecord, cookie: string | undefined): void {
    if (!cookie || h.flow_cookie_sha256 === null || !sameSecret(sha256hex(cookie), h.flow_cookie_sha256)) {
      throw new CustodyError('hosted_flow_mismatch', 'this visit was opened in another browser (or its cookie is gone); go back to the application and start again');
    }
  }

  /** GET of the page: the first browser gets the flow cookie; later ones must carry it. */
  open(id: string, cookie: string | undefined): Promise<{ handoff: AccountCenterHandoffRecord; member: HostedMemberRecord | undefined; setCookie?: string; csrf: string }> {
    return this.lock(id, async () => {
      const h = await this.find(id);
      await this.live(h);
      const member = h.status === 'authenticated' ? await this.memberOf(h) : undefined;
      if (h.flow_cookie_sha256 === null) {
        const value = newToken('');
        const bound = { ...h, flow_cookie_sha256: sha256hex(value) };
        await this.o.store.batch([this.put(bound)]);
        return { handoff: bound, member, setCookie: value, csrf: this.o.keys.csrfToken(id, value) };
      }
      this.checkCookie(h, cookie);
      return { handoff: h, member, csrf: this.o.keys.csrfToken(id, cookie!) };
    });
  }

  private step(id: string, cookie: string | undefined, csrf: string | undefined, fn: (h: AccountCenterHandoffRecord, app: ApplicationRecord) => Promise<AccountCenterOutcome>): Promise<AccountCenterOutcome> {
    return this.lock(id, async () => {
      const h = await this.find(id);
      this.checkCookie(h, cookie);
      if (!csrf || !sameSecret(csrf, this.o.keys.csrfToken(id, cookie!))) throw new CustodyError('hosted_csrf_failed', 'the form is stale or was not sent by this page; reload it');
      return fn(h, await this.live(h));
    });
  }

  /** A factor step, once the member authenticated: under the member's lock too. */
  private factorStep(id: string, cookie: string | undefined, csrf: string | undefined, fn: (h: AccountCenterHandoffRecord, m: HostedMemberRecord, app: ApplicationRecord) => Promise<AccountCenterOutcome>): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h, app) => {
      if (h.member_action_id) throw approvalOnly();
      if (h.status !== 'authenticated') throw outOfOrder('authenticate first: factors change only after the member signed in on this page');
      return this.o.store.exclusive(memberLock(h.member_id), async () => fn(h, await this.memberOf(h), app));
    });
  }

  private newCode(h: AccountCenterHandoffRecord, now: number): { next: AccountCenterHandoffRecord; code: string } {
    const code = newEmailCode();
    const sent = h.codes_sent + 1;
    return {
      code,
      next: {
        ...h, status: 'code_sent', codes_sent: sent, attempts: 0, last_code_sent_at: this.iso(now),
        code_sha256: this.o.keys.codeDigest(h.id, sent, code), code_expires_at: this.iso(Math.min(now + HL.emailCode * 1000, Date.parse(h.expires_at))),
      },
    };
  }

  /** The address step: only the expected member's address is sent a code; any other gets the same page and no code. */
  submitEmail(id: string, cookie: string | undefined, csrf: string | undefined, text: string | undefined): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h) => {
      if (h.member_action_id) throw approvalOnly();
      if (h.status !== 'pending') return { kind: 'page' };
      const email = normalizeEmail(text ?? '');
      if (!email) return { kind: 'page', notice: 'email_invalid' };
      const member = await this.memberOf(h);
      const eligible = member.email === email;
      const { next, code } = this.newCode({ ...h, eligible }, this.o.clock());
      await this.o.store.batch([this.put(next)]);
      return { kind: 'page', ...(eligible ? { send: { to: member.email, code, tenant: h.tenant, workspace: h.workspace } } : {}) };
    });
  }

  resend(id: string, cookie: string | undefined, csrf: string | undefined): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h) => {
      if (h.status !== 'code_sent') return { kind: 'page' };
      const now = this.o.clock();
      if (h.codes_sent >= HL.codesPerAuthorization) return { kind: 'page', notice: 'resend_exhausted' };
      if (now - Date.parse(h.last_code_sent_at!) < HL.resendInterval * 1000) return { kind: 'page', notice: 'resend_wait' };
      const { next, code } = this.newCode(h, now);
      await this.o.store.batch([this.put(next)]);
      const member = h.eligible ? await this.memberOf(h) : undefined;
      return { kind: 'page', notice: 'resent', ...(member ? { send: { to: member.email, code, tenant: h.tenant, workspace: h.workspace } } : {}) };
    });
  }

  private async wrong(h: AccountCenterHandoffRecord, notice: string): Promise<AccountCenterOutcome> {
    const attempts = h.attempts + 1;
    const locked = attempts >= HL.attempts;
    await this.o.store.batch([this.put({ ...h, attempts, ...(locked ? { status: 'locked', code_sha256: null, pending_totp: null } : {}) })]);
    if (locked) throw new CustodyError('hosted_attempts_exhausted', 'too many wrong codes: this visit is locked; go back to the application and start again');
    return { kind: 'page', notice };
  }

  submitCode(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h) => {
      if (h.status !== 'code_sent') return { kind: 'page' };
      const now = this.o.clock();
      if (Date.parse(h.code_expires_at!) <= now) return { kind: 'page', notice: 'code_expired' };
      const given = /^\d{6}$/.test((code ?? '').trim()) ? code!.trim() : '';
      if (!sameSecret(this.o.keys.codeDigest(h.id, h.codes_sent, given), h.code_sha256!) || !h.eligible) return this.wrong(h, 'code_wrong');
      const member = await this.memberOf(h);
      const next: AccountCenterHandoffRecord = { ...h, code_sha256: null, attempts: 0, status: member.totp_secret ? 'totp' : 'authenticated', authenticated_at: member.totp_secret ? null : this.iso(now) };
      await this.o.store.batch([this.put(next)]);
      return { kind: 'page' };
    });
  }

  submitTotp(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h) => {
      if (h.status !== 'totp') return { kind: 'page' };
      return this.o.store.exclusive(memberLock(h.member_id), async () => {
        const member = await this.memberOf(h);
        const step = member.totp_secret ? totpStepOf(member.totp_secret, code, this.o.clock(), member.totp_last_step) : undefined;
        if (step === undefined) return this.wrong(h, 'totp_wrong');
        const used: HostedMemberRecord = { ...member, totp_last_step: step, updated_at: this.iso() };
        await this.o.store.batch([H.members.putOp(used.id, used, { index: memberIndex(used) }), this.put({ ...h, status: 'authenticated', attempts: 0, authenticated_at: this.iso() })]);
        return { kind: 'page' };
      });
    });
  }

  /** Enrolment, first half: a new secret held on the handoff (shown on the page) until a code confirms it. */
  startEnrol(id: string, cookie: string | undefined, csrf: string | undefined): Promise<AccountCenterOutcome> {
    return this.factorStep(id, cookie, csrf, async (h, m) => {
      if (m.totp_secret) throw outOfOrder('this member already has an authenticator; remove it first');
      if (h.pending_totp) return { kind: 'page' };
      await this.o.store.batch([this.put({ ...h, pending_totp: newTotpSecret() })]);
      return { kind: 'page' };
    });
  }

  /** Enrolment, second half: a current code of the new secret makes it the member's factor; that step is used. */
  confirmEnrol(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<AccountCenterOutcome> {
    return this.factorStep(id, cookie, csrf, async (h, m) => {
      if (!h.pending_totp) throw outOfOrder('start the authenticator setup first');
      if (m.totp_secret) throw outOfOrder('this member already has an authenticator; remove it first');
      const step = totpStepOf(h.pending_totp, code, this.o.clock(), null);
      if (step === undefined) return this.wrong(h, 'totp_wrong');
      const now = this.iso();
      const after: HostedMemberRecord = { ...m, totp_secret: h.pending_totp, totp_last_step: step, totp_enrolled_at: now, updated_at: now };
      await this.o.store.batch([
        H.members.putOp(m.id, after, { index: memberIndex(m) }),
        this.put({ ...h, pending_totp: null, attempts: 0, changes: [...h.changes, 'totp_enrolled'] }),
        this.o.audit.op(h, memberActor(m.id), 'member_auth.hosted_member.totp_enrol', m.id, factorSummary(m), factorSummary(after)),
      ]);
      return { kind: 'page', notice: 'totp_enrolled' };
    });
  }

  /**
   * Removal needs a current code of the factor (a step not used before). While the application requires
   * TOTP, the member's last factor is not removed (409 hosted_totp_last_factor, before the code is read,
   * so nothing is counted or used): without it every later sign-in would be refused, and only
   * lost-all-factor recovery could bring the member back.
   */
  removeFactor(id: string, cookie: string | undefined, csrf: string | undefined, code: string | undefined): Promise<AccountCenterOutcome> {
    return this.factorStep(id, cookie, csrf, async (h, m, app) => {
      if (!m.totp_secret) throw outOfOrder('this member has no authenticator to remove');
      if (app.hosted?.require_totp) {
        throw new CustodyError('hosted_totp_last_factor', 'This application requires an authenticator app to sign in, so your only one cannot be removed. If you lost it, use "Lost your authenticator?" when you next sign in.');
      }
      const step = totpStepOf(m.totp_secret, code, this.o.clock(), m.totp_last_step);
      if (step === undefined) return this.wrong(h, 'totp_wrong');
      const now = this.iso();
      const after: HostedMemberRecord = { ...m, totp_secret: null, totp_last_step: null, totp_enrolled_at: null, updated_at: now };
      await this.o.store.batch([
        H.members.putOp(m.id, after, { index: memberIndex(m) }),
        this.put({ ...h, attempts: 0, changes: [...h.changes, 'totp_removed'] }),
        this.o.audit.op(h, memberActor(m.id), 'member_auth.hosted_member.totp_remove', m.id, factorSummary(m), factorSummary(after)),
      ]);
      return { kind: 'page', notice: 'totp_removed' };
    });
  }

  /** A new set of ten recovery codes replaces the old one; the codes are in this answer only. */
  generateCodes(id: string, cookie: string | undefined, csrf: string | undefined): Promise<AccountCenterOutcome> {
    return this.factorStep(id, cookie, csrf, async (h, m) => {
      const { codes, digests } = newRecoverySet(this.o.keys, m.id);
      const now = this.iso();
      const after: HostedMemberRecord = { ...m, recovery_codes: digests, recovery_codes_created_at: now, updated_at: now };
      await this.o.store.batch([
        H.members.putOp(m.id, after, { index: memberIndex(m) }),
        this.put({ ...h, changes: [...h.changes, 'recovery_codes_generated'] }),
        this.o.audit.op(h, memberActor(m.id), 'member_auth.hosted_member.recovery_codes_generate', m.id, factorSummary(m), factorSummary(after)),
      ]);
      return { kind: 'codes', codes };
    });
  }

  /** Finish: the browser goes back to the return URL with a one-time result and the BFF's state. */
  finish(id: string, cookie: string | undefined, csrf: string | undefined): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h) => {
      // On an approval visit Done declines: back to the application with no approval.
      if (h.status !== 'authenticated' && !(h.member_action_id && h.status === 'pending')) throw outOfOrder('authenticate first');
      const now = this.o.clock();
      const result = newToken('acr_');
      const hash = sha256hex(result);
      await this.o.store.batch([
        this.put({ ...h, status: 'finished', pending_totp: null, pending_passkey: null, result_sha256: hash, result_expires_at: this.iso(now + L.result * 1000) }),
        AC.results.putOp(hash, { handoff: h.id }),
      ]);
      return this.callback(h, result);
    });
  }

  /** Back to the return URL with the one-time result and the BFF's state. */
  private callback(h: AccountCenterHandoffRecord, result: string): AccountCenterOutcome {
    const location = new URL(h.return_url);
    location.searchParams.append('code', result);
    location.searchParams.append('state', h.state);
    return { kind: 'callback', location: location.toString() };
  }

  // ── Passkeys (docs/platform/account-center.md "Passkeys") ───────────────────────────────────────────

  /** The member's passkeys whose credential has not expired. */
  private usablePasskeys(m: HostedMemberRecord, now = this.o.clock()) {
    return (m.passkeys ?? []).filter((p) => Date.parse(p.expires_at) > now);
  }

  /** Whether the account page offers passkey enrolment: the opt-in holds now. */
  passkeysOffered(app: ApplicationRecord): Promise<boolean> {
    return passkeysOn(this.o.passkeys, app);
  }

  /** The application of a live visit (for what the page offers). */
  applicationOf(h: AccountCenterHandoffRecord): Promise<ApplicationRecord> {
    return this.live(h);
  }

  /** Registration, first half: options with a fresh challenge held on the handoff, used once within 300 s. */
  passkeyBegin(id: string, cookie: string | undefined, csrf: string | undefined, rpName: string): Promise<AccountCenterOutcome> {
    return this.factorStep(id, cookie, csrf, async (h, m, app) => {
      const o = await passkeyOptIn(this.o.passkeys, app);
      if ((m.passkeys ?? []).length >= L.passkeysPerMember) throw outOfOrder(`a member has at most ${L.passkeysPerMember} passkeys`);
      const { options, challenge } = await registrationOptions(o, m, rpName);
      await this.o.store.batch([this.put({ ...h, pending_passkey: { options, challenge, expires_at: this.iso(this.o.clock() + L.passkeyChallenge * 1000) } })]);
      return { kind: 'page' };
    });
  }

  /**
   * Registration, second half: the browser's answer verified against the held challenge (gone after this
   * attempt, whatever its outcome); the passkey and the member credential the service signs for it are
   * stored on the member. A refused answer counts as a wrong code.
   */
  passkeyFinish(id: string, cookie: string | undefined, csrf: string | undefined, answer: RegistrationFields): Promise<AccountCenterOutcome> {
    return this.factorStep(id, cookie, csrf, async (h, m, app) => {
      const pending = h.pending_passkey;
      if (!pending) throw outOfOrder('start adding a passkey first');
      const o = await passkeyOptIn(this.o.passkeys, app);
      const used = { ...h, pending_passkey: null };
      if (Date.parse(pending.expires_at) <= this.o.clock()) {
        await this.o.store.batch([this.put(used)]);
        return { kind: 'page', notice: 'passkey_expired' };
      }
      let passkey;
      try {
        passkey = await enrolPasskey(this.o.passkeys!, o, m, pending.challenge, answer, this.o.clock());
      } catch (err) {
        if (err instanceof CustodyError && err.code === 'validation_failed') return this.wrong(used, 'passkey_failed');
        throw err;
      }
      const after: HostedMemberRecord = { ...m, passkeys: [...(m.passkeys ?? []), passkey], updated_at: this.iso() };
      await this.o.store.batch([
        H.members.putOp(m.id, after, { index: memberIndex(m) }),
        this.put({ ...used, attempts: 0, changes: [...h.changes, 'passkey_enrolled'] }),
        this.o.audit.op(h, memberActor(m.id), 'member_auth.hosted_member.passkey_enrol', m.id, factorSummary(m), factorSummary(after)),
      ]);
      return { kind: 'page', notice: 'passkey_enrolled' };
    });
  }

  /** The action of an approval visit, still pending, with the member; else the refusal the page shows. */
  private async pendingAction(h: AccountCenterHandoffRecord): Promise<MemberActionRecord> {
    const a = await A.actions.in(this.o.store).get(h.member_action_id!);
    if (!a || a.member_id !== h.member_id || a.family !== h.family) throw new CustodyError('not_found', 'no such member action');
    if (a.status !== 'pending_proof') throw new CustodyError('member_action_not_pending', `the member action is ${a.status}`);
    if (Date.parse(a.expires_at) <= this.o.clock()) throw new CustodyError('member_action_expired', 'the member action expired; go back to the application and start again');
    return a;
  }

  /** The approval page: the action read from its intent bytes, and the WebAuthn request whose challenge is its nonce. */
  async approvalView(h: AccountCenterHandoffRecord): Promise<ApprovalView> {
    const a = await this.pendingAction(h);
    const app = await this.live(h);
    const o = await passkeyOptIn(this.o.passkeys, app);
    const member = await this.memberOf(h);
    const request = {
      challenge: nonceOf(a), rpId: o.rpId, timeout: 120_000, userVerification: 'required',
      allowCredentials: this.usablePasskeys(member).map((p) => ({ type: 'public-key', id: p.credential_id })),
    };
    return {
      action_id: a.id, lines: (a.batch?.intents ?? [a.intent]).map((x) => intentLine(Buffer.from(x, 'hex'))),
      purpose: a.purpose ? `${a.purpose.type} ${a.purpose.id}` : null, request: JSON.stringify(request),
    };
  }

  /**
   * The member's answer on an approval visit: an assertion by one of its Account Center passkeys over the
   * action's nonce, checked now as every node will check it. It completes nothing: the visit finishes and
   * the BFF, with its credentials, session and PKCE verifier, gets it from the exchange and sends it to
   * POST /v1/member-actions/passkey/complete. A refused answer counts as a wrong code.
   */
  approve(id: string, cookie: string | undefined, csrf: string | undefined, form: Record<string, string>): Promise<AccountCenterOutcome> {
    return this.step(id, cookie, csrf, async (h, app) => {
      if (!h.member_action_id) throw outOfOrder('this visit approves no member action');
      if (h.status !== 'pending') throw outOfOrder('this approval was already answered');
      const a = await this.pendingAction(h);
      const o = await passkeyOptIn(this.o.passkeys, app);
      const member = await this.memberOf(h);
      const fields: PasskeyAssertionFields = { id: form['id'] ?? '', authenticator_data: form['authenticator_data'] ?? '', client_data_json: form['client_data_json'] ?? '', signature: form['signature'] ?? '' };
      const passkey = this.usablePasskeys(member).find((p) => p.credential_id === fields.id);
      if (!passkey) return this.wrong(h, 'passkey_failed');
      try {
        const assertion = assertionOf(fields);
        const binding = { actionId: a.id, salt: new Uint8Array(Buffer.from(a.salt, 'hex')), ...(a.batch ? { batch: a.batch.sha256.map((d) => new Uint8Array(Buffer.from(d, 'hex'))) } : {}), passkey: assertion };
        for (const x of a.batch?.intents ?? [a.intent]) await verifyEndUserToken(o.config, passkey.credential, Buffer.from(x, 'hex'), a.subject, Math.floor(this.o.clock() / 1000), binding);
      } catch (err) {
        if ((err instanceof CustodyError && err.code === 'validation_failed') || err instanceof EndUserTokenError) return this.wrong(h, 'passkey_failed');
        throw err;
      }
      const now = this.o.clock();
      const result = newToken('acr_');
      const hash = sha256hex(result);
      await this.o.store.batch([
        this.put({
          ...h, status: 'finished', attempts: 0, authenticated_at: this.iso(now), changes: [...h.changes, 'member_action_approved'],
          approval: { credential: passkey.credential, assertion: fields }, result_sha256: hash, result_expires_at: this.iso(now + L.result * 1000),
        }),
        AC.results.putOp(hash, { handoff: h.id }),
        this.o.audit.op(h, memberActor(member.id), 'member_auth.account_center.approve', a.id, null, { member_id: member.id, credential_id: passkey.credential_id }),
      ]);
      return this.callback(h, result);
    });
  }

  // ── The BFF's exchange ──────────────────────────────────────────────────────────────────────────────

  /**
   * POST /account-center/handoffs/exchange: once, by the caller (application, publishable key, BFF
   * principal) and the session family that began the handoff, with the PKCE verifier. Anyone else is told
   * the result is unknown; a second exchange is 409 and changes nothing.
   */
  async exchange(caller: MemberCaller, actor: Actor, sessionId: string | undefined, input: { code: string; code_verifier: string; return_url: string }): Promise<AccountCenterSummary> {
    checkHostedCaller(caller);
    const { family } = await this.o.sessions.validate(caller, sessionId);
    if (!ACCOUNT_CENTER_RESULT.test(input.code)) throw resultUnknown();
    const hash = sha256hex(input.code);
    const ref = await AC.results.in(this.o.store).get(hash);
    const first = ref ? await AC.handoffs.in(this.o.store).get(ref.handoff) : undefined;
    if (!first || !sameCaller(first, caller) || first.family !== family.id) throw resultUnknown();
    return this.lock(first.id, async () => {
      const h = (await AC.handoffs.in(this.o.store).get(first.id))!;
      if (!h.result_sha256 || !sameSecret(h.result_sha256, hash)) throw resultUnknown();
      if (h.status === 'exchanged') throw new CustodyError('account_center_result_replayed', 'this Account Center result was already exchanged');
      if (h.status !== 'finished') throw resultUnknown();
      const now = this.o.clock();
      if (Date.parse(h.result_expires_at!) <= now) throw new CustodyError('account_center_result_invalid', `the result expired (it must be exchanged within ${L.result} s)`);
      if (input.return_url !== h.return_url) throw returnUrlInvalid();
      if (!pkceMatches(input.code_verifier, h.code_challenge)) throw new CustodyError('account_center_result_invalid', 'code_verifier does not match the code_challenge (S256)');
      const member = await H.members.in(this.o.store).get(h.member_id);
      if (!member) throw new CustodyError('member_binding_inactive', 'this member is not in the application');
      await this.o.store.batch([
        this.put({ ...h, status: 'exchanged', exchanged_at: this.iso(now), approval: null }),
        this.o.audit.op(caller, actor, 'member_auth.account_center.exchange', newId('hal', now), null, { member_id: h.member_id, changes: h.changes }),
      ]);
      const approval = h.approval && h.member_action_id ? { action_id: h.member_action_id, ...h.approval } : null;
      return { member_id: member.id, changes: h.changes, ...factorSummary(member), approval };
    });
  }
}
