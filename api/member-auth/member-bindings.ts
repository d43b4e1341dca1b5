// Member bindings (platform-api.md "Confidential exchange rules" 1, 5 and 11): which member an accepted
// proof is. A BYO OIDC identity is (issuer, subject) inside the application's pinned provider namespace
// of the workspace; an email claim is never read, so two provider accounts sharing an address are two
// members, and a BYO identity is never linked to a Hosted one or to another namespace.
//
// Enrolment for BYO OIDC is open: the institution's identity provider decides who can sign in to the
// client the application pins, so the first accepted proof of an identity creates its binding. A binding
// can be disabled (`disable`; the tenant's route: `disableMember`), which refuses its exchanges, its member
// actions and its signing sessions, and revokes its sign-ins at once.
// Invite-only registration is a Hosted Auth setting (rule 12) and has no BYO counterpart yet.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { ApplicationRecord } from './member-auth-records.ts';
import { configLock } from './member-auth-config.ts';
import { MemberSessions, familyIndex } from './member-sessions.ts';
import { SESSION_COLLECTIONS as S, bindingKey, type MemberBindingRecord, type SessionFamilyRecord } from './member-session-records.ts';

/** A BYO member id: `mem_` and a time-ordered id (api/store/ids.ts). */
export const BYO_MEMBER_ID = /^mem_[0-9a-f]{26}$/;

/** What the tenant sees of a binding: its own provider's identifiers and the state, nothing of sessions. */
export interface MemberBindingView {
  id: string;
  status: MemberBindingRecord['status'];
  provider_namespace: string;
  issuer: string;
  subject: string;
  created_at: string;
  updated_at: string;
}

export const bindingView = (b: MemberBindingRecord): MemberBindingView => ({
  id: b.member_id, status: b.status, provider_namespace: b.provider_namespace, issuer: b.issuer, subject: b.subject, created_at: b.created_at, updated_at: b.updated_at,
});


export interface ResolvedBinding {
  binding: MemberBindingRecord;
  /** The put that creates it, for the exchange's batch; absent when it existed. */
  create?: Op;
}

const memberIndex = (b: MemberBindingRecord) => [`${b.workspace}\x00${b.member_id}`];

export class MemberBindings {
  constructor(private readonly store: RecordRepository, private readonly clock: () => number) {}

  get(key: string): Promise<MemberBindingRecord | undefined> {
    return S.bindings.in(this.store).get(key);
  }

  /**
   * The binding of (issuer, subject) in `namespace`, or a new active one (open enrolment) to be written
   * with the session. A disabled binding is refused: 403 member_binding_inactive.
   */
  async resolve(scope: { tenant: string; workspace: string }, namespace: string, issuer: string, subject: string): Promise<ResolvedBinding> {
    const key = bindingKey(scope.workspace, namespace, issuer, subject);
    const found = await this.get(key);
    if (found) {
      // The key is a hash of all four parts; the record is compared too, as the index only points.
      if (found.workspace !== scope.workspace || found.tenant !== scope.tenant || found.provider_namespace !== namespace || found.issuer !== issuer || found.subject !== subject) {
        throw new CustodyError('bug', 'a member binding does not match its key');
      }
      if (found.status !== 'active') throw new CustodyError('member_binding_inactive', 'this member\'s binding to the application is disabled');
      return { binding: found };
    }
    const now = new Date(this.clock()).toISOString();
    const binding: MemberBindingRecord = {
      v: 1, key, member_id: newId('mem', this.clock()), tenant: scope.tenant, workspace: scope.workspace,
      provider_namespace: namespace, issuer, subject, status: 'active', created_at: now, updated_at: now,
    };
    return { binding, create: S.bindings.putOp(key, binding, { index: memberIndex(binding) }) };
  }

  /** The binding of `memberId` in the BYO application's workspace and pinned namespace; anything else (malformed, another tenant's or namespace's) is 404. */
  async own(app: ApplicationRecord, memberId: string): Promise<MemberBindingRecord> {
    const found = BYO_MEMBER_ID.test(memberId) && app.byo_oidc ? (await S.bindings.in(this.store).byIndex(`${app.workspace}\x00${memberId}\x00`, 1))[0] : undefined;
    if (!found || found.member_id !== memberId || found.tenant !== app.tenant || found.workspace !== app.workspace || found.provider_namespace !== app.byo_oidc!.provider_namespace) {
      throw new CustodyError('not_found', `no member ${memberId} in this application`);
    }
    return found;
  }

  /**
   * The application's members (bindings of its workspace in its pinned namespace), oldest first. Bindings
   * of an earlier namespace are skipped, so a page is read in slices until it is full or the list ends.
   */
  async list(app: ApplicationRecord, cursors: CursorCodec, cursor: string | undefined, limit: number): Promise<PageResult<MemberBindingView>> {
    const namespace = app.byo_oidc!.provider_namespace;
    let after = cursors.decode(cursor, S.bindings.name, app.id, {});
    const items: MemberBindingView[] = [];
    for (;;) {
      const slice = await S.bindings.in(this.store).byIndexAfter(`${app.workspace}\x00`, after, limit + 1);
      for (const b of slice) if (b.provider_namespace === namespace && b.tenant === app.tenant && items.length <= limit) items.push(bindingView(b));
      if (slice.length < limit + 1 || items.length > limit) break;
      after = slice[slice.length - 1]!.member_id;
    }
    return pageOf(cursors, items, limit, S.bindings.name, app.id, {});
  }

  /**
   * The tenant disables a member: under the workspace's configuration lock, which the exchange's commit
   * holds (so no session of it is made after this), the binding is disabled and every active sign-in of
   * the member in the application is revoked, each under its family's lock (so a concurrent refresh cannot
   * write it back). Idempotent: a disabled member changes nothing and writes no audit entry.
   */
  disableMember(app: ApplicationRecord, actor: Actor, audit: AuditLog, memberId: string): Promise<MemberBindingRecord> {
    return this.store.exclusive(configLock(app.workspace), async () => {
      const b = await this.own(app, memberId);
      if (b.status === 'disabled') return b;
      const now = new Date(this.clock()).toISOString();
      const after: MemberBindingRecord = { ...b, status: 'disabled', updated_at: now };
      await this.store.batch([
        S.bindings.putOp(b.key, after, { index: memberIndex(b) }),
        audit.op(app, actor, 'member_auth.binding.disable', b.member_id, { ...bindingView(b), application: app.id }, { ...bindingView(after), application: app.id }),
      ]);
      const families = (await S.families.in(this.store).byIndex(`${app.id}\x00${b.member_id}\x00`)).filter((f) => f.status === 'active');
      for (const { id } of families) {
        await this.store.exclusive(MemberSessions.familyLock(id), async () => {
          const f = await S.families.in(this.store).get(id);
          if (!f || f.status !== 'active') return;
          await this.store.batch([
            S.families.putOp(f.id, { ...f, status: 'revoked', revoked_at: now, revoked_reason: 'member_disabled' } satisfies SessionFamilyRecord, { index: familyIndex(f) }),
            audit.op(f, actor, 'member_auth.session_family.revoke', f.id, null, { member_id: f.member_id, application: f.application, reason: 'member_disabled' }),
          ]);
        });
      }
      return after;
    });
  }

  /** Disables a binding: its exchanges are refused and its sessions stop working on their next call. */
  async disable(key: string): Promise<void> {
    const b = await this.get(key);
    if (!b) throw new CustodyError('not_found', 'no such member binding');
    await S.bindings.in(this.store).put(key, { ...b, status: 'disabled', updated_at: new Date(this.clock()).toISOString() }, memberIndex(b));
  }
}
