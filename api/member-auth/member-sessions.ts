// Member sessions (platform-api.md "Member-session artifacts", "Confidential exchange rules" 5, 7 and 10):
// a session id the BFF keeps server-side and sends as X-Member-Session-Id, short-lived, and a single-use
// refresh credential that rotates both. The sessions and refresh credentials descending from one accepted
// proof form a family; one session of a family is current at a time.
//
// Every use rechecks the caller (tenant, workspace, application, publishable key, bearer principal), the
// application's version and the member's binding. A refresh credential presented twice revokes its
// family, but only once the caller has been shown to be the family's own: a caller that does not match
// is told the credential is unknown, and nothing is revoked (rule 7), so a leaked credential in another
// tenant's hands cannot be used to sign a member out. Changes to a family run under its lock, on every
// API instance, so a refresh and a sign-out never both win.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { AuditLog, Actor } from '../tenancy/audit-log.ts';
import type { ApplicationRecord } from './member-auth-records.ts';
import type { ExchangeCipher } from './exchange-cipher.ts';
import { hostedMemberActive, hostedRestrictedUntil } from './hosted-members.ts';
import {
  LIFETIMES, REFRESH_CREDENTIAL, SESSION_COLLECTIONS as S, SESSION_ID, newSecret, sameDigest, sha256hex,
  type CallerBinding, type MemberBindingRecord, type MemberContext, type MemberSessionRecord, type RefreshCredentialRecord,
  type SessionFamilyRecord, type SessionGrant,
} from './member-session-records.ts';

/** The authenticated caller of a member-auth operation and the application its publishable key selected. */
export interface MemberCaller {
  tenant: string;
  workspace: string;
  environment: string;
  principal: string;
  publishable_key: string;
  application: ApplicationRecord;
}

export const bindingOf = (c: MemberCaller): CallerBinding => ({ tenant: c.tenant, workspace: c.workspace, application: c.application.id, publishable_key: c.publishable_key, principal: c.principal });

export function sameCaller(r: CallerBinding, c: MemberCaller): boolean {
  return r.tenant === c.tenant && r.workspace === c.workspace && r.application === c.application.id && r.publishable_key === c.publishable_key && r.principal === c.principal;
}

export const familyIndex = (f: Pick<SessionFamilyRecord, 'application' | 'member_id' | 'id'>) => [`${f.application}\x00${f.member_id}\x00${f.id}`];

export type SignOutScope = 'session' | 'all';

const sessionInvalid = (why: string) => new CustodyError('member_session_invalid', `the member session is not valid: ${why}`);
/** How long the same refresh (credential and refresh_id) repeated after a lost answer gets its grant back. */
export const REFRESH_RETRY_SECONDS = 60;
const retryAad = (credentialHash: string, refreshId: string) => `refresh\x00${credentialHash}\x00${refreshId}`;

const refreshInvalid = (why: string) => new CustodyError('refresh_invalid', `the refresh credential is not valid: ${why}`);

export interface Minted {
  grant: Omit<SessionGrant, 'member'>;
  sessionHash: string;
  ops: Op[];
}

export class MemberSessions {
  /**
   * `cipher` seals the grant of a refresh that names a `refresh_id` (POST /member-auth/refresh), so a
   * repeat after a lost answer gets it back; without one, every repeat is a replay.
   */
  constructor(private readonly store: RecordRepository, private readonly audit: AuditLog, private readonly clock: () => number, private readonly cipher?: ExchangeCipher) {}

  private iso(ms = this.clock()): string {
    return new Date(ms).toISOString();
  }

  /** Lock of one family: refresh and sign-out of its sessions, on every instance. */
  static familyLock(family: string): string {
    return `member-auth-family:${family}`;
  }

  /** A new session id and refresh credential for `family`, as records to write in the caller's batch. */
  mint(caller: MemberCaller, family: Pick<SessionFamilyRecord, 'id' | 'member_id' | 'binding' | 'expires_at'>): Minted {
    const now = this.clock();
    const familyEnd = Date.parse(family.expires_at);
    const refreshEnd = Math.min(now + LIFETIMES.refresh * 1000, familyEnd);
    const sessionEnd = Math.min(now + LIFETIMES.session * 1000, refreshEnd);
    const sessionId = newSecret('mss_');
    const refreshCredential = newSecret('mrc_');
    const sessionHash = sha256hex(sessionId);
    const session: MemberSessionRecord = {
      v: 1, ...bindingOf(caller), family: family.id, member_id: family.member_id, binding: family.binding,
      application_version: caller.application.version, created_at: this.iso(now), expires_at: this.iso(sessionEnd), refresh_expires_at: this.iso(refreshEnd),
    };
    const refresh: RefreshCredentialRecord = {
      v: 1, ...bindingOf(caller), family: family.id, session: sessionHash, status: 'active', issued_at: this.iso(now), expires_at: this.iso(refreshEnd), consumed_at: null,
    };
    return {
      grant: { session_id: sessionId, refresh_credential: refreshCredential, expires_at: session.expires_at, refresh_expires_at: refresh.expires_at, application_id: caller.application.id },
      sessionHash,
      ops: [
        S.sessions.putOp(sessionHash, session),
        S.refresh.putOp(sha256hex(refreshCredential), refresh),
      ],
    };
  }

  /**
   * The application's trust in the member still holds: same version, binding active in its namespace. A
   * Hosted application's session names its hosted member (hosted-members.ts), never a BYO binding.
   */
  private async checkTrust(caller: MemberCaller, version: number, bindingKey: string): Promise<MemberBindingRecord | undefined> {
    const app = caller.application;
    if (app.kind === 'hosted' && app.hosted) {
      if (version !== app.version) throw sessionInvalid('the application\'s configuration changed since the member signed in; sign in again');
      if (!(await hostedMemberActive(this.store, { tenant: caller.tenant, workspace: caller.workspace, application: app.id }, bindingKey))) throw new CustodyError('member_binding_inactive', 'this member is not active in the application');
      return undefined;
    }
    if (app.kind !== 'byo_oidc' || !app.byo_oidc) throw sessionInvalid('the application is not a BYO OIDC application');
    if (version !== app.version) throw sessionInvalid('the application\'s configuration changed since the member signed in; sign in again');
    const binding = await S.bindings.in(this.store).get(bindingKey);
    if (!binding || binding.status !== 'active' || binding.workspace !== caller.workspace || binding.provider_namespace !== app.byo_oidc.provider_namespace) {
      throw new CustodyError('member_binding_inactive', 'this member\'s binding to the application is not active');
    }
    return binding;
  }

  /** The exact current session `sessionId` names for this caller, or member_session_invalid (rule 5). */
  async validate(caller: MemberCaller, sessionId: string | undefined): Promise<{ session: MemberSessionRecord; family: SessionFamilyRecord }> {
    const { session, family } = await this.find(caller, sessionId);
    if (Date.parse(session.expires_at) <= this.clock()) throw sessionInvalid('it expired; refresh it');
    await this.checkTrust(caller, session.application_version, session.binding);
    return { session, family };
  }

  /** The session and its family, for this caller, current and not ended (expiry and trust are the caller's to check). */
  private async find(caller: MemberCaller, sessionId: string | undefined): Promise<{ session: MemberSessionRecord; family: SessionFamilyRecord; hash: string }> {
    if (sessionId === undefined || sessionId === '') throw new CustodyError('invalid_request', 'X-Member-Session-Id is required');
    if (!SESSION_ID.test(sessionId)) throw sessionInvalid('unknown');
    const hash = sha256hex(sessionId);
    const session = await S.sessions.in(this.store).get(hash);
    // Another caller's session is "unknown", as one that does not exist: nothing about it is revealed.
    if (!session || !sameCaller(session, caller)) throw sessionInvalid('unknown');
    const family = await S.families.in(this.store).get(session.family);
    if (!family || family.status !== 'active' || !sameDigest(family.current_session, hash)) throw sessionInvalid('it was ended or replaced by a refresh');
    return { session, family, hash };
  }

  /** GET /member-auth/session: the safe member context, never a token. */
  async context(caller: MemberCaller, sessionId: string | undefined): Promise<MemberContext> {
    const { session, family } = await this.validate(caller, sessionId);
    return {
      member: { id: session.member_id },
      application: { id: caller.application.id, kind: caller.application.kind, version: session.application_version },
      workspace: caller.workspace,
      environment: caller.environment,
      session: { expires_at: session.expires_at, refresh_expires_at: session.refresh_expires_at, authenticated_at: family.authenticated_at, created_at: session.created_at },
      acr: family.acr,
      amr: family.amr,
      ...(caller.application.kind === 'hosted' ? { restricted_until: await hostedRestrictedUntil(this.store, session.member_id) } : {}),
    };
  }

  private revokeOps(family: SessionFamilyRecord, reason: NonNullable<SessionFamilyRecord['revoked_reason']>, actor: Actor, action: string): Op[] {
    const revoked: SessionFamilyRecord = { ...family, status: 'revoked', revoked_at: this.iso(), revoked_reason: reason };
    return [
      S.families.putOp(family.id, revoked, { index: familyIndex(family) }),
      this.audit.op(family, actor, action, family.id, null, { member_id: family.member_id, application: family.application, reason }),
    ];
  }

  /**
   * POST /member-auth/refresh: rotates the session and the refresh credential (rule 7). A `refreshId` the
   * BFF chose for this refresh makes a repeat of it within REFRESH_RETRY_SECONDS, with the same credential
   * and id, answer the same grant while that session is still the family's current one; any other repeat
   * is a replay.
   */
  async refresh(caller: MemberCaller, actor: Actor, credential: string, refreshId?: string): Promise<SessionGrant> {
    if (!REFRESH_CREDENTIAL.test(credential)) throw refreshInvalid('unknown');
    const hash = sha256hex(credential);
    const first = await S.refresh.in(this.store).get(hash);
    // Before anything can be revoked, the caller must be the family's own, part by part.
    if (!first || !sameCaller(first, caller)) throw refreshInvalid('unknown');
    return this.store.exclusive(MemberSessions.familyLock(first.family), async () => {
      const r = (await S.refresh.in(this.store).get(hash))!;
      const family = await S.families.in(this.store).get(r.family);
      if (!family) throw refreshInvalid('unknown');
      if (r.status === 'consumed') {
        const again = this.retried(r, hash, refreshId, family);
        if (again) return again;
        if (family.status === 'active') await this.store.batch(this.revokeOps(family, 'refresh_replay', actor, 'member_auth.session_family.revoke'));
        throw new CustodyError('refresh_replayed', 'this refresh credential was already used: every session of its sign-in is revoked; the member must sign in again');
      }
      if (family.status !== 'active') throw refreshInvalid('its sessions were ended');
      const now = this.clock();
      if (Date.parse(r.expires_at) <= now || Date.parse(family.expires_at) <= now) throw refreshInvalid('it expired; the member must sign in again');
      const old = await S.sessions.in(this.store).get(r.session);
      if (!old) throw refreshInvalid('its session is gone');
      await this.checkTrust(caller, old.application_version, old.binding);
      const minted = this.mint(caller, family);
      const grant: SessionGrant = { ...minted.grant, member: { id: family.member_id, created: false } };
      const retry = refreshId !== undefined && this.cipher
        ? { retry: { id: sha256hex(refreshId), sealed: this.cipher.seal(JSON.stringify(grant), retryAad(hash, refreshId)), until: this.iso(now + REFRESH_RETRY_SECONDS * 1000) } }
        : {};
      await this.store.batch([
        S.refresh.putOp(hash, { ...r, status: 'consumed', consumed_at: this.iso(now), ...retry } satisfies RefreshCredentialRecord),
        S.sessions.delOp(r.session),
        ...minted.ops,
        S.families.putOp(family.id, { ...family, current_session: minted.sessionHash } satisfies SessionFamilyRecord, { index: familyIndex(family) }),
      ]);
      return grant;
    });
  }

  /** The grant of the refresh `refreshId` named, for its repeat within the window, while its session is current. */
  private retried(r: RefreshCredentialRecord, hash: string, refreshId: string | undefined, family: SessionFamilyRecord): SessionGrant | undefined {
    if (refreshId === undefined || !r.retry || !this.cipher || family.status !== 'active') return undefined;
    if (!sameDigest(r.retry.id, sha256hex(refreshId)) || Date.parse(r.retry.until) <= this.clock()) return undefined;
    const plain = this.cipher.open(r.retry.sealed, retryAad(hash, refreshId));
    if (plain === undefined) return undefined;
    const grant = JSON.parse(plain) as SessionGrant;
    return sameDigest(family.current_session, sha256hex(grant.session_id)) ? grant : undefined;
  }

  /**
   * POST /member-auth/sign-out: ends the exact session's sign-in (its family, so its refresh credential
   * dies with it); `all` ends every sign-in of the member in this application. An expired session id
   * still signs out: its refresh credential would otherwise outlive it.
   */
  async signOut(caller: MemberCaller, actor: Actor, sessionId: string | undefined, scope: SignOutScope): Promise<{ revoked_sessions: number }> {
    const { family } = await this.find(caller, sessionId);
    const targets = scope === 'session'
      ? [family.id]
      : (await S.families.in(this.store).byIndex(`${caller.application.id}\x00${family.member_id}\x00`)).filter((f) => f.status === 'active').map((f) => f.id);
    let revoked = 0;
    for (const id of targets) {
      revoked += await this.store.exclusive(MemberSessions.familyLock(id), async () => {
        const f = await S.families.in(this.store).get(id);
        // Only this caller's families: another BFF principal's sign-ins of the same member are not its to end.
        if (!f || f.status !== 'active' || !sameCaller(f, caller)) return 0;
        await this.store.batch(this.revokeOps(f, scope === 'session' ? 'sign_out' : 'sign_out_all', actor, scope === 'session' ? 'member_auth.session.sign_out' : 'member_auth.session.sign_out_all'));
        return 1;
      });
    }
    return { revoked_sessions: revoked };
  }
}
