// Account holders of a workspace (docs/platform/account-holders.md): create, search, read, patch and the
// append-only change history. A holder of another workspace (also the tenant's other environment) is
// 404, as one that does not exist. Every change is one batch: the record, its index entries, the
// history entry, the audit-log entry, the member claim and the webhook event with its deliveries.
import { CustodyError } from '../../core/errors/custody-error.ts';
import { FieldValidationError, type FieldError } from '../validation.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import { SESSION_COLLECTIONS } from '../member-auth/member-session-records.ts';
import { HOSTED_COLLECTIONS, MEMBER_ID as HOSTED_MEMBER_ID } from '../member-auth/hosted-records.ts';
import { normalizeEmail, normalizePhone, searchHash } from './contact-hash.ts';
import { statusMayBecome, verificationMayBecome, VERIFICATION_EVENTS, type HolderStatus, type VerificationStatus } from './account-holder-states.ts';
import type { AccountHolderRecord, HistoryEntryRecord, HolderChange, HolderType, MemberKind } from './account-holder-records.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_HISTORY, ACCOUNT_HOLDER_MEMBERS } from './collections.ts';
import { filteredWalk } from './filtered-walk.ts';

export const HOLDER_ID = /^ah_[0-9a-f]{26}$/;
const BYO_MEMBER_ID = /^mem_[0-9a-f]{26}$/;

export interface CreateHolderInput {
  type: HolderType;
  given_name?: string | undefined;
  family_name?: string | undefined;
  legal_name?: string | undefined;
  email?: string | undefined;
  phone?: string | undefined;
  reference?: string | undefined;
  member_id?: string | undefined;
}

export interface PatchHolderInput {
  given_name?: string | undefined;
  family_name?: string | undefined;
  legal_name?: string | undefined;
  email?: string | null | undefined;
  phone?: string | null | undefined;
  reference?: string | null | undefined;
  member_id?: string | null | undefined;
  status?: HolderStatus | undefined;
  verification_status?: VerificationStatus | undefined;
}

export interface HolderFilters {
  status?: HolderStatus | undefined;
  type?: HolderType | undefined;
  verification_status?: VerificationStatus | undefined;
  email_hash?: string | undefined;
  phone_hash?: string | undefined;
  member_id?: string | undefined;
  created_gte?: string | undefined;
  created_lt?: string | undefined;
}

/** What the API answers: the record without its tenancy and format fields. */
export function holderView(h: AccountHolderRecord) {
  const { v: _v, tenant: _t, workspace: _w, ...rest } = h;
  return rest;
}

/** What the history, the audit log and events may carry: no address or number, only their hashes. */
function redacted(h: AccountHolderRecord): Record<string, unknown> {
  const { v: _v, tenant: _t, workspace: _w, email: _e, phone: _p, ...rest } = h;
  return rest;
}

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);
const notFound = (id: string) => new CustodyError('not_found', `no account holder ${id}`);

const allIndex = (h: AccountHolderRecord) => `${h.workspace}\x00all\x00${h.id}`;
function indexOf(h: AccountHolderRecord): string[] {
  return [allIndex(h), ...(h.email_hash ? [`${h.workspace}\x00email\x00${h.email_hash}\x00${h.id}`] : []), ...(h.phone_hash ? [`${h.workspace}\x00phone\x00${h.phone_hash}\x00${h.id}`] : [])];
}
const memberKey = (workspace: string, member: string) => `${workspace}\x00${member}`;

export interface AccountHolderServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  deliveries: DeliveryEngine;
  clock: () => number;
}

export class AccountHolderService {
  constructor(private readonly o: AccountHolderServiceOptions) {}

  private iso(): string {
    return new Date(this.o.clock()).toISOString();
  }

  async get(scope: Scope, id: string): Promise<AccountHolderRecord> {
    const h = HOLDER_ID.test(id) ? await ACCOUNT_HOLDERS.in(this.o.store).get(id) : undefined;
    if (!h || h.workspace !== scope.workspace || h.tenant !== scope.tenant) throw notFound(id);
    return h;
  }

  /** The holder linked to a member of the workspace, if any (the member self calls). */
  async byMember(scope: Scope, memberId: string): Promise<AccountHolderRecord | undefined> {
    const claim = await ACCOUNT_HOLDER_MEMBERS.in(this.o.store).get(memberKey(scope.workspace, memberId));
    const h = claim ? await ACCOUNT_HOLDERS.in(this.o.store).get(claim.account_holder_id) : undefined;
    return h && h.workspace === scope.workspace && h.tenant === scope.tenant && h.member_id === memberId && h.status !== 'closed' ? h : undefined;
  }

  /** Which kind of member `id` is when it is an active member of this workspace; 422 otherwise. */
  private async memberKind(scope: Scope, id: string): Promise<MemberKind> {
    if (BYO_MEMBER_ID.test(id)) {
      const [b] = await SESSION_COLLECTIONS.bindings.in(this.o.store).byIndex(`${scope.workspace}\x00${id}`, 1);
      if (b && b.member_id === id && b.workspace === scope.workspace && b.tenant === scope.tenant && b.status === 'active') return 'byo_oidc';
    } else if (HOSTED_MEMBER_ID.test(id)) {
      const m = await HOSTED_COLLECTIONS.members.in(this.o.store).get(id);
      if (m && m.workspace === scope.workspace && m.tenant === scope.tenant && m.status === 'active') return 'hosted';
    }
    throw invalid('member_id', 'no active member with this id in this workspace');
  }

  /** Runs `fn` holding the claim locks of `members` (one holder per member, on every instance), in sorted order so two changes never wait on each other. */
  private withMembers<T>(scope: Scope, members: (string | null | undefined)[], fn: () => Promise<T>): Promise<T> {
    const names = [...new Set(members.filter((m): m is string => !!m))].sort().map((m) => `account-holder-member:${memberKey(scope.workspace, m)}`);
    return names.reduceRight<() => Promise<T>>((next, name) => () => this.o.store.exclusive(name, next), fn)();
  }

  private async claimFree(scope: Scope, member: string, holder: string): Promise<void> {
    const claim = await ACCOUNT_HOLDER_MEMBERS.in(this.o.store).get(memberKey(scope.workspace, member));
    if (claim && claim.account_holder_id !== holder) throw new CustodyError('member_binding_taken', 'member_id: this member is already linked to another account holder');
  }

  async create(scope: Scope, actor: Actor, input: CreateHolderInput): Promise<AccountHolderRecord> {
    // Every rejected field at once (docs/platform/errors.md), before the member is looked up.
    const errors: FieldError[] = [];
    const names = checkNames(input.type, input, errors);
    const email = input.email === undefined ? null : normalizeEmail(input.email) ?? reject(errors, 'email', 'not a valid email address');
    const phone = input.phone === undefined ? null : normalizePhone(input.phone) ?? reject(errors, 'phone', 'must be E.164: + and 7 to 15 digits');
    if (errors.length) throw new FieldValidationError(errors);
    const kind = input.member_id === undefined ? null : await this.memberKind(scope, input.member_id);
    const now = this.iso();
    const h: AccountHolderRecord = {
      v: 1, id: newId('ah', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, type: input.type,
      status: 'pending_verification', verification_status: 'unverified', ...names,
      email, email_hash: email && searchHash(email), phone, phone_hash: phone && searchHash(phone), reference: input.reference ?? null,
      member_id: input.member_id ?? null, member_kind: kind, version: 1, created_at: now, updated_at: now, closed_at: null,
    };
    return this.withMembers(scope, [h.member_id], async () => {
      if (h.member_id) await this.claimFree(scope, h.member_id, h.id);
      const changes = Object.fromEntries(Object.entries(redacted(h)).filter(([k]) => !['id', 'version', 'created_at', 'updated_at'].includes(k)).map(([k, v]) => [k, { from: null, to: v }]));
      await this.commit(scope, actor, null, h, changes, 'account_holder.created');
      return h;
    });
  }

  async patch(scope: Scope, actor: Actor, id: string, ifMatch: number, input: PatchHolderInput): Promise<AccountHolderRecord> {
    return this.o.store.exclusive(`account-holder:${id}`, async () => {
      const before = await this.get(scope, id);
      if (before.version !== ifMatch) throw new CustodyError('precondition_failed', `If-Match: the account holder is at version ${before.version}; read it again and retry`);
      if (before.status === 'closed') throw new CustodyError('account_holder_closed', 'the account holder is closed; closed is final');
      if (Object.keys(input).length === 0) return before;
      const after = await this.applyPatch(scope, before, input);
      const changes: Record<string, HolderChange> = {};
      const b = redacted(before);
      for (const [k, v] of Object.entries(redacted(after))) if (!['version', 'updated_at', 'closed_at'].includes(k) && JSON.stringify(b[k]) !== JSON.stringify(v)) changes[k] = { from: b[k], to: v };
      if (Object.keys(changes).length === 0) return before;
      const members = after.member_id !== before.member_id || after.status === 'closed' ? [before.member_id, after.member_id] : [];
      return this.withMembers(scope, members, async () => {
        if (after.member_id && after.member_id !== before.member_id && after.status !== 'closed') await this.claimFree(scope, after.member_id, after.id);
        await this.commit(scope, actor, before, after, changes, 'account_holder.updated');
        return after;
      });
    });
  }

  private async applyPatch(scope: Scope, before: AccountHolderRecord, input: PatchHolderInput): Promise<AccountHolderRecord> {
    const next: AccountHolderRecord = { ...before };
    const errors: FieldError[] = [];
    if (input.given_name !== undefined || input.family_name !== undefined || input.legal_name !== undefined) {
      Object.assign(next, checkNames(before.type, { given_name: input.given_name ?? before.given_name ?? undefined, family_name: input.family_name ?? before.family_name ?? undefined, legal_name: input.legal_name ?? before.legal_name ?? undefined }, errors));
    }
    if (input.email !== undefined) {
      next.email = input.email === null ? null : normalizeEmail(input.email) ?? reject(errors, 'email', 'not a valid email address');
      next.email_hash = next.email && searchHash(next.email);
    }
    if (input.phone !== undefined) {
      next.phone = input.phone === null ? null : normalizePhone(input.phone) ?? reject(errors, 'phone', 'must be E.164: + and 7 to 15 digits');
      next.phone_hash = next.phone && searchHash(next.phone);
    }
    if (errors.length) throw new FieldValidationError(errors);
    if (input.reference !== undefined) next.reference = input.reference;
    if (input.member_id !== undefined && input.member_id !== before.member_id) {
      next.member_kind = input.member_id === null ? null : await this.memberKind(scope, input.member_id);
      next.member_id = input.member_id;
    }
    if (input.verification_status !== undefined && input.verification_status !== before.verification_status) {
      if (!verificationMayBecome(before.verification_status, input.verification_status)) throw new CustodyError('invalid_transition', `verification_status cannot go from ${before.verification_status} to ${input.verification_status}`);
      next.verification_status = input.verification_status;
    }
    if (input.status !== undefined && input.status !== before.status) {
      if (!statusMayBecome(before.status, input.status)) throw new CustodyError('invalid_transition', `status cannot go from ${before.status} to ${input.status}`);
      if (input.status === 'active' && next.verification_status !== 'verified') throw new CustodyError('invalid_transition', 'status: only a verified account holder can be active');
      next.status = input.status;
    }
    const now = this.iso();
    return { ...next, version: before.version + 1, updated_at: now, closed_at: next.status === 'closed' ? now : null };
  }

  /** One batch: record and indexes, member claim, history, audit log, and the events with their deliveries. */
  private async commit(scope: Scope, actor: Actor, before: AccountHolderRecord | null, after: AccountHolderRecord, changes: Record<string, HolderChange>, event: string): Promise<void> {
    const ops: Op[] = [];
    if (before) ops.push(ACCOUNT_HOLDERS.delOp(before.id, indexOf(before).filter((i) => !indexOf(after).includes(i))));
    ops.push(ACCOUNT_HOLDERS.putOp(after.id, after, { index: indexOf(after) }));
    const members = ACCOUNT_HOLDER_MEMBERS;
    if (before?.member_id && (before.member_id !== after.member_id || after.status === 'closed')) ops.push(members.delOp(memberKey(scope.workspace, before.member_id)));
    if (after.member_id && after.status !== 'closed' && after.member_id !== before?.member_id) ops.push(members.putOp(memberKey(scope.workspace, after.member_id), { v: 1, account_holder_id: after.id }));
    const entry: HistoryEntryRecord = { v: 1, id: newId('ahh', this.o.clock()), account_holder_id: after.id, workspace: scope.workspace, version: after.version, action: before ? 'updated' : 'created', actor, at: after.updated_at, changes };
    ops.push(ACCOUNT_HOLDER_HISTORY.putOp(entry.id, entry, { index: [`${after.id}\x00${entry.id}`] }));
    ops.push(this.o.audit.op(scope, actor, before ? 'account_holder.update' : 'account_holder.create', after.id, before && redacted(before), redacted(after)));
    const resource = { type: 'account_holder', id: after.id };
    const data = { account_holder_id: after.id, status: after.status, verification_status: after.verification_status, version: after.version };
    const verification = before && before.verification_status !== after.verification_status ? VERIFICATION_EVENTS[after.verification_status] : undefined;
    // A verification decision is its own event, in the same batch as the change and its update event.
    await this.o.deliveries.emitAll(scope, [
      { type: event, resource, actor, data },
      ...(verification ? [{ type: verification, resource, actor, data: { account_holder_id: after.id, status: after.verification_status } }] : []),
    ], ops);
  }

  async list(scope: Scope, f: HolderFilters, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<typeof holderView>>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, 'account_holders', scope.workspace, filters);
    const prefix = f.email_hash ? `${scope.workspace}\x00email\x00${f.email_hash}\x00` : f.phone_hash ? `${scope.workspace}\x00phone\x00${f.phone_hash}\x00` : `${scope.workspace}\x00all\x00`;
    const keep = (h: AccountHolderRecord) => h.workspace === scope.workspace && (!f.status || h.status === f.status) && (!f.type || h.type === f.type)
      && (!f.verification_status || h.verification_status === f.verification_status) && (!f.email_hash || h.email_hash === f.email_hash)
      && (!f.phone_hash || h.phone_hash === f.phone_hash) && (!f.member_id || h.member_id === f.member_id)
      && (!f.created_gte || h.created_at >= f.created_gte) && (!f.created_lt || h.created_at < f.created_lt);
    const out = await filteredWalk(this.o.store, ACCOUNT_HOLDERS, prefix, after, limit, keep);
    const page = pageOf(this.o.cursors, out, limit, 'account_holders', scope.workspace, filters);
    return { ...page, data: page.data.map(holderView) };
  }

  async history(scope: Scope, id: string, cursor: string | undefined, limit: number): Promise<PageResult<Omit<HistoryEntryRecord, 'v' | 'workspace'>>> {
    const h = await this.get(scope, id);
    const list = `account_holder_history/${h.id}`;
    const after = this.o.cursors.decode(cursor, list, scope.workspace, {});
    const items = await ACCOUNT_HOLDER_HISTORY.in(this.o.store).byIndexAfter(`${h.id}\x00`, after, limit + 1);
    const page = pageOf(this.o.cursors, items, limit, list, scope.workspace, {});
    return { ...page, data: page.data.map(({ v: _v, workspace: _w, ...e }) => e) };
  }
}

/** Records a rejected field and answers null in the field's place; the caller throws once all are checked. */
function reject(errors: FieldError[], field: string, reason: string): null {
  errors.push({ field, reason });
  return null;
}

/** The name fields a holder of `type` must have, the others null; each rejected one is added to `errors`. */
function checkNames(type: HolderType, n: { given_name?: string | undefined; family_name?: string | undefined; legal_name?: string | undefined }, errors: FieldError[]) {
  const clean = (field: string, v: string | undefined) => {
    if (v === undefined || v.trim() === '') return reject(errors, field, `required for ${type === 'individual' ? 'an' : 'a'} ${type} account holder`);
    if (/[\r\n<>]/.test(v)) return reject(errors, field, 'line breaks and angle brackets are not allowed');
    return v.trim();
  };
  if (type === 'individual') {
    if (n.legal_name !== undefined) reject(errors, 'legal_name', 'an individual has given_name and family_name');
    return { given_name: clean('given_name', n.given_name), family_name: clean('family_name', n.family_name), legal_name: null };
  }
  if (n.given_name !== undefined) reject(errors, 'given_name', 'a business has legal_name');
  if (n.family_name !== undefined) reject(errors, 'family_name', 'a business has legal_name');
  return { given_name: null, family_name: null, legal_name: clean('legal_name', n.legal_name) };
}
