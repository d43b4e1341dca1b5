// Contacts of account holders (docs/platform/account-holders.md "Contacts"): the people or businesses a
// holder deals with, kept by the customer's server with a workspace bearer key. A contact belongs to one
// holder of the workspace; it is found by the SHA-256 search hash of its normalized email or phone
// (contact-hash.ts). Changes carry If-Match like the holder's; each is audited, and creation emits
// no webhook event (a creation is answered to its caller; docs/platform/events.md).
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import type { AccountHolderService } from './account-holder-service.ts';
import { normalizeEmail, normalizePhone, searchHash } from './contact-hash.ts';
import { filteredWalk } from './filtered-walk.ts';
import { CONTACTS } from './collections.ts';

export const CONTACT_ID = /^con_[0-9a-f]{26}$/;

export interface ContactRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  account_holder_id: string;
  name: string;
  email: string | null;
  email_hash: string | null;
  phone: string | null;
  phone_hash: string | null;
  reference: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

export interface ContactInput { name?: string | undefined; email?: string | null | undefined; phone?: string | null | undefined; reference?: string | null | undefined }

export function contactView(c: ContactRecord) {
  const { v: _v, tenant: _t, workspace: _w, ...rest } = c;
  return rest;
}
const redacted = (c: ContactRecord) => {
  const { v: _v, tenant: _t, workspace: _w, email: _e, phone: _p, ...rest } = c;
  return rest;
};
const invalid = (why: string): never => {
  throw new CustodyError('validation_failed', why);
};

function indexOf(c: ContactRecord): string[] {
  const w = c.workspace;
  return [`${w}\x00all\x00${c.id}`, `${w}\x00holder\x00${c.account_holder_id}\x00${c.id}`,
    ...(c.email_hash ? [`${w}\x00email\x00${c.email_hash}\x00${c.id}`] : []), ...(c.phone_hash ? [`${w}\x00phone\x00${c.phone_hash}\x00${c.id}`] : [])];
}

export class Contacts {
  constructor(private readonly o: { store: RecordRepository; holders: AccountHolderService; audit: AuditLog; cursors: CursorCodec; deliveries: DeliveryEngine; clock: () => number }) {}

  async get(scope: Scope, id: string): Promise<ContactRecord> {
    const c = CONTACT_ID.test(id) ? await CONTACTS.in(this.o.store).get(id) : undefined;
    if (!c || c.workspace !== scope.workspace || c.tenant !== scope.tenant) throw new CustodyError('not_found', `no contact ${id}`);
    return c;
  }

  /** Name, email and phone checked and normalized; a contact needs a name and an email or a phone. */
  private fields(base: Pick<ContactRecord, 'name' | 'email' | 'phone' | 'reference'>, input: ContactInput) {
    const name = input.name === undefined ? base.name : input.name.trim();
    if (!name) invalid('name: required');
    if (/[\r\n<>]/.test(name)) invalid('name: line breaks and angle brackets are not allowed');
    const email = input.email === undefined ? base.email : input.email === null ? null : normalizeEmail(input.email) ?? invalid('email: not a valid email address');
    const phone = input.phone === undefined ? base.phone : input.phone === null ? null : normalizePhone(input.phone) ?? invalid('phone: must be E.164: + and 7 to 15 digits');
    if (!email && !phone) invalid('email: a contact needs an email or a phone');
    const reference = input.reference === undefined ? base.reference : input.reference;
    return { name, email, email_hash: email && searchHash(email), phone, phone_hash: phone && searchHash(phone), reference };
  }

  async create(scope: Scope, actor: Actor, holderId: string, input: ContactInput): Promise<ContactRecord> {
    const holder = await this.o.holders.get(scope, holderId).catch(() => invalid('account_holder_id: no account holder with this id in this workspace'));
    if (holder.status === 'closed') throw new CustodyError('account_holder_closed', 'the account holder is closed; it takes no new contact');
    const now = new Date(this.o.clock()).toISOString();
    const c: ContactRecord = {
      v: 1, id: newId('con', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, account_holder_id: holder.id,
      ...this.fields({ name: '', email: null, phone: null, reference: null }, input), version: 1, created_at: now, updated_at: now,
    };
    // No webhook: the contact is the caller's own answer (docs/platform/events.md); the audit log keeps it.
    await this.o.store.batch([
      CONTACTS.putOp(c.id, c, { index: indexOf(c) }),
      this.o.audit.op(scope, actor, 'contact.create', c.id, null, redacted(c)),
    ]);
    return c;
  }

  async patch(scope: Scope, actor: Actor, id: string, ifMatch: number, input: ContactInput): Promise<ContactRecord> {
    return this.o.store.exclusive(`contact:${id}`, async () => {
      const before = await this.get(scope, id);
      if (before.version !== ifMatch) throw new CustodyError('precondition_failed', `If-Match: the contact is at version ${before.version}; read it again and retry`);
      const f = this.fields(before, input);
      if ((['name', 'email', 'phone', 'reference'] as const).every((k) => f[k] === before[k])) return before;
      const after: ContactRecord = { ...before, ...f, version: before.version + 1, updated_at: new Date(this.o.clock()).toISOString() };
      await this.o.store.batch([
        CONTACTS.delOp(before.id, indexOf(before).filter((i) => !indexOf(after).includes(i))),
        CONTACTS.putOp(after.id, after, { index: indexOf(after) }),
        this.o.audit.op(scope, actor, 'contact.update', id, redacted(before), redacted(after)),
      ]);
      return after;
    });
  }

  async remove(scope: Scope, actor: Actor, id: string): Promise<void> {
    await this.o.store.exclusive(`contact:${id}`, async () => {
      const c = await this.get(scope, id);
      await this.o.store.batch([CONTACTS.delOp(c.id, indexOf(c)), this.o.audit.op(scope, actor, 'contact.delete', c.id, redacted(c), null)]);
    });
  }

  /** GET /contacts (optionally one holder's) and POST /contacts/search (by one hash), oldest first. */
  async list(scope: Scope, f: { account_holder_id?: string | undefined; email_hash?: string | undefined; phone_hash?: string | undefined }, cursor: string | undefined, limit: number, list = 'contacts'): Promise<PageResult<ReturnType<typeof contactView>>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, list, scope.workspace, filters);
    const w = scope.workspace;
    const prefix = f.email_hash ? `${w}\x00email\x00${f.email_hash}\x00` : f.phone_hash ? `${w}\x00phone\x00${f.phone_hash}\x00` : f.account_holder_id ? `${w}\x00holder\x00${f.account_holder_id}\x00` : `${w}\x00all\x00`;
    const keep = (c: ContactRecord) => c.workspace === w && (!f.account_holder_id || c.account_holder_id === f.account_holder_id)
      && (!f.email_hash || c.email_hash === f.email_hash) && (!f.phone_hash || c.phone_hash === f.phone_hash);
    const items = await filteredWalk(this.o.store, CONTACTS, prefix, after, limit, keep);
    const page = pageOf(this.o.cursors, items, limit, list, w, filters);
    return { ...page, data: page.data.map(contactView) };
  }
}
