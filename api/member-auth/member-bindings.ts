// Member bindings (platform-api.md "Confidential exchange rules" 1, 5 and 11): which member an accepted
// proof is. A BYO OIDC identity is (issuer, subject) inside the application's pinned provider namespace
// of the workspace; an email claim is never read, so two provider accounts sharing an address are two
// members, and a BYO identity is never linked to a Hosted one or to another namespace.
//
// Enrolment for BYO OIDC is open: the institution's identity provider decides who can sign in to the
// client the application pins, so the first accepted proof of an identity creates its binding. A binding
// can be disabled (`disable`), which refuses its exchanges and ends the use of its sessions at once.
// Invite-only registration is a Hosted Auth setting (rule 12) and has no BYO counterpart yet.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { SESSION_COLLECTIONS as S, bindingKey, type MemberBindingRecord } from './member-session-records.ts';

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

  /** Disables a binding: its exchanges are refused and its sessions stop working on their next call. */
  async disable(key: string): Promise<void> {
    const b = await this.get(key);
    if (!b) throw new CustodyError('not_found', 'no such member binding');
    await S.bindings.in(this.store).put(key, { ...b, status: 'disabled', updated_at: new Date(this.clock()).toISOString() }, memberIndex(b));
  }
}
