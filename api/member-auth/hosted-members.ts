// Hosted members (platform-api.md "Confidential exchange rules" 11, 12): the people who may sign in to a
// Hosted Auth application. Invite-only applications admit only members the tenant invited here; open ones
// create a member at its first verified email (hosted-authorizations.ts). A member is its hosted subject id
// (`hsub_…`) in one application: an email is where codes go, never an identity shared with another
// application or with a BYO OIDC binding. A disabled member's codes lead nowhere and its sessions stop
// working at their next use (member-sessions.ts checks `hostedMemberActive`).
import { randomBytes } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { ApplicationRecord } from './member-auth-records.ts';
import {
  HOSTED_COLLECTIONS as H, HOSTED_LIMITS, MEMBER_ID, emailKey, hostedMemberView, memberIndex, normalizeEmail,
  type HostedMemberRecord, type HostedMemberView,
} from './hosted-records.ts';

const invalid = (why: string) => new CustodyError('validation_failed', why);

/** Lock of one application's member list: invitations, open enrolment and the demo persona. */
export const membersLock = (application: string) => `member-auth-hosted-members:${application}`;
/** Lock of one member's factor (its last TOTP step), on every instance. */
export const memberLock = (member: string) => `member-auth-hosted-member:${member}`;

/** Whether `memberId` is an active member of the caller's Hosted application (a session's recheck). */
export async function hostedMemberActive(store: RecordRepository, scope: { tenant: string; workspace: string; application: string }, memberId: string): Promise<boolean> {
  const m = MEMBER_ID.test(memberId) ? await H.members.in(store).get(memberId) : undefined;
  return !!m && m.status === 'active' && m.tenant === scope.tenant && m.workspace === scope.workspace && m.application === scope.application;
}

/** How long lost-all-factor recovery restricts a member (platform-api.md "Confidential exchange rules" 13). */
export const RECOVERY_RESTRICTION_S = 86_400;

/**
 * Whether a sign-in authenticated at `authenticatedAt` may use member authority (member actions) now:
 * after a lost-all-factor recovery, not before `restricted_until` has passed AND the member has signed in
 * again after it (rule 13). A sign-in from before the recovery was revoked by it; one made during the
 * 24 hours stays restricted for its whole life.
 */
export function recoveryRestricted(member: Pick<HostedMemberRecord, 'restricted_until'>, authenticatedAt: string, now: number): boolean {
  const until = member.restricted_until ? Date.parse(member.restricted_until) : NaN;
  if (Number.isNaN(until)) return false;
  return now < until || Date.parse(authenticatedAt) <= until;
}

/**
 * The check member actions run for a hosted member before anything else (member-actions.ts): 403
 * member_recovery_restricted while `recoveryRestricted` holds. An unknown member passes here; the
 * session's own trust check refuses it.
 */
export async function checkHostedMemberAuthority(store: RecordRepository, memberId: string, authenticatedAt: string, now: number): Promise<void> {
  const m = MEMBER_ID.test(memberId) ? await H.members.in(store).get(memberId) : undefined;
  if (m && recoveryRestricted(m, authenticatedAt, now)) {
    throw new CustodyError('member_recovery_restricted', `this member recovered lost factors: member actions are refused until ${m.restricted_until!} and a fresh sign-in after it`);
  }
}

/** A hosted member's `restricted_until` (null when none): the safe field of the session context. */
export async function hostedRestrictedUntil(store: RecordRepository, memberId: string): Promise<string | null> {
  const m = MEMBER_ID.test(memberId) ? await H.members.in(store).get(memberId) : undefined;
  return m?.restricted_until ?? null;
}

export class HostedMembers {
  constructor(private readonly store: RecordRepository, private readonly audit: AuditLog, private readonly cursors: CursorCodec, private readonly clock: () => number) {}

  private iso(): string {
    return new Date(this.clock()).toISOString();
  }

  /** A new member record and the ops that write it (the caller holds `membersLock`). */
  newMember(app: ApplicationRecord, email: string, source: HostedMemberRecord['source']): { member: HostedMemberRecord; ops: Op[] } {
    const now = this.iso();
    const member: HostedMemberRecord = {
      v: 1, id: newId('hsub', this.clock()), tenant: app.tenant, workspace: app.workspace, application: app.id, email, status: 'active', source, demo: source === 'demo',
      totp_secret: null, totp_last_step: null, last_sign_in_at: null, created_at: now, updated_at: now,
    };
    return { member, ops: [H.members.putOp(member.id, member, { index: memberIndex(member) }), H.memberEmails.putOp(emailKey(app.id, email), { id: member.id })] };
  }

  /** The member `email` names in the application, whatever its status. */
  async byEmail(application: string, email: string): Promise<HostedMemberRecord | undefined> {
    const ref = await H.memberEmails.in(this.store).get(emailKey(application, email));
    const m = ref ? await H.members.in(this.store).get(ref.id) : undefined;
    return m && m.application === application && m.email === email ? m : undefined;
  }

  /** A member of this application by id; anything else (malformed, another application's or tenant's) is 404. */
  async own(app: ApplicationRecord, id: string): Promise<HostedMemberRecord> {
    const m = MEMBER_ID.test(id) ? await H.members.in(this.store).get(id) : undefined;
    if (!m || m.application !== app.id || m.workspace !== app.workspace || m.tenant !== app.tenant) throw new CustodyError('not_found', `no hosted member ${id} in this application`);
    return m;
  }

  /** The application's members, oldest first; cursors are bound to the list and the application. */
  async list(app: ApplicationRecord, cursor: string | undefined, limit: number): Promise<PageResult<HostedMemberView>> {
    const after = this.cursors.decode(cursor, H.members.name, app.id, {});
    const items = await H.members.in(this.store).byIndexAfter(`${app.id}\x00`, after, limit + 1);
    const p = pageOf(this.cursors, items, limit, H.members.name, app.id, {});
    return { ...p, data: p.data.map(hostedMemberView) };
  }

  /** Invites `email` to the application: an active member that may sign in. An address already a member is 409. */
  invite(app: ApplicationRecord, actor: Actor, text: string): Promise<HostedMemberRecord> {
    const email = normalizeEmail(text);
    if (!email) throw invalid('email: must be an email address (at most 254 characters)');
    return this.store.exclusive(membersLock(app.id), async () => {
      if (await this.byEmail(app.id, email)) throw new CustodyError('conflict', 'this address is already a member of the application');
      if ((await H.members.in(this.store).byIndex(`${app.id}\x00`, HOSTED_LIMITS.members)).length >= HOSTED_LIMITS.members) throw invalid(`an application has at most ${HOSTED_LIMITS.members} hosted members`);
      const { member, ops } = this.newMember(app, email, 'invited');
      await this.store.batch([...ops, this.audit.op(app, actor, 'member_auth.hosted_member.invite', member.id, null, { ...hostedMemberView(member), application: app.id })]);
      return member;
    });
  }

  /** Disables a member: its codes lead nowhere and its sessions stop at their next use. Idempotent. */
  disable(app: ApplicationRecord, actor: Actor, id: string): Promise<HostedMemberRecord> {
    return this.store.exclusive(membersLock(app.id), async () => {
      const m = await this.own(app, id);
      if (m.status === 'disabled') return m;
      const after: HostedMemberRecord = { ...m, status: 'disabled', updated_at: this.iso() };
      await this.store.batch([
        H.members.putOp(m.id, after, { index: memberIndex(m) }),
        this.audit.op(app, actor, 'member_auth.hosted_member.disable', m.id, { ...hostedMemberView(m), application: app.id }, { ...hostedMemberView(after), application: app.id }),
      ]);
      return after;
    });
  }

  /**
   * Gives a member a new TOTP factor (RFC 6238, SHA-1, 6 digits, 30 s) and returns its secret, once.
   * Members enrol factors themselves in the Account Center (account-center.ts), confirmed by a code;
   * this unconfirmed entry point is the service's, for tests and operators, with no HTTP route.
   */
  async enrollTotp(memberId: string): Promise<{ secretHex: string }> {
    const secretHex = randomBytes(20).toString('hex');
    await this.store.exclusive(memberLock(memberId), async () => {
      const m = await H.members.in(this.store).get(memberId);
      if (!m) throw new CustodyError('not_found', 'no such hosted member');
      await H.members.in(this.store).put(m.id, { ...m, totp_secret: secretHex, totp_last_step: null, totp_enrolled_at: this.iso(), updated_at: this.iso() }, memberIndex(m));
    });
    return { secretHex };
  }

  /** The application's sandbox demo persona, made on first use (the caller holds `membersLock`). */
  async demoMember(app: ApplicationRecord): Promise<{ member: HostedMemberRecord; ops: Op[]; created: boolean }> {
    const email = `demo+${app.id.slice(4)}@sandbox.invalid`;
    const found = await this.byEmail(app.id, email);
    if (found) return { member: found, ops: [], created: false };
    return { ...this.newMember(app, email, 'demo'), created: true };
  }
}
