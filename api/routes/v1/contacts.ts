// Contacts (docs/platform/account-holders.md "Contacts"): staff operations with a workspace bearer key;
// each contact belongs to one account holder of the workspace. Contacts are a customer-server resource:
// never a member self call (platform-api.md "BFF helper and browser rules").
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, MAX_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { AccountHolderService } from '../../account-holders/account-holder-service.ts';
import { Contacts, contactView, type ContactRecord } from '../../account-holders/contacts.ts';
import { ifMatchOf } from './account-holders.ts';
import { Nullable } from './schema-helpers.ts';

const TAGS = ['account holders'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$' });
const HolderRef = Type.String({ maxLength: 64 });
const Contact = Type.Object({
  id: Type.String(), account_holder_id: Type.String(), name: Type.String(), email: Nullable(Type.String()), email_hash: Nullable(Type.String()),
  phone: Nullable(Type.String()), phone_hash: Nullable(Type.String()), reference: Nullable(Type.String()), version: Type.Integer(), created_at: Type.String(), updated_at: Type.String(),
});
const Email = Type.String({ minLength: 1, maxLength: 320 });
const Phone = Type.String({ minLength: 1, maxLength: 20 });
const Reference = Type.String({ minLength: 1, maxLength: 64 });
const Name = Type.String({ minLength: 1, maxLength: 140 });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const contactRoutes: FastifyPluginAsyncTypebox<{ platform: Platform }> = async (app, { platform }) => {
  const holders = new AccountHolderService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, clock: platform.clock });
  const contacts = new Contacts({ store: platform.store, holders, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, clock: platform.clock });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const send = (reply: FastifyReply, c: ContactRecord, code = 200) => reply.code(code).header('etag', `"${c.version}"`).send(contactView(c));

  app.get('/contacts', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'The workspace\'s contacts, oldest first, optionally of one account holder',
      tags: TAGS, security: read, querystring: Type.Object({ ...PageQuery, account_holder_id: Type.Optional(HolderRef) }, { additionalProperties: false }), response: { 200: Page(Contact), ...errors },
    },
  }, async (req) => contacts.list(scopeOf(req), { account_holder_id: req.query.account_holder_id }, req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/contacts', {
    config: { permission: 'account_holder.manage' },
    schema: {
      summary: 'Create a contact of an account holder: a name and an email or a phone',
      description: 'An `Idempotency-Key` with the same body returns the same contact; with another body, 409 idempotency_key_reused.',
      tags: TAGS, security: change,
      body: Type.Object({ account_holder_id: HolderRef, name: Name, email: Type.Optional(Email), phone: Type.Optional(Phone), reference: Type.Optional(Reference) }, { additionalProperties: false }),
      response: { 201: Contact, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const { account_holder_id, ...input } = req.body;
    const made = await idempotent.run(scope.workspace, 'create_contact', idempotencyKeyOf(req), req.body, async () => ({ id: (await contacts.create(scope, actorOf(req), account_holder_id, input)).id }));
    return send(reply, await contacts.get(scope, made.id), 201);
  });

  app.post('/contacts/search', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'Find contacts by the SHA-256 hash of their normalized email or phone (exactly one), optionally of one account holder',
      description: 'A POST so no hash appears in a URL. Pages as a list does: `cursor` and `limit` in the body.',
      tags: TAGS, security: read,
      body: Type.Union([
        Type.Object({ email_hash: Hash, account_holder_id: Type.Optional(HolderRef), cursor: Type.Optional(Type.String({ maxLength: 1024 })), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT })) }, { additionalProperties: false }),
        Type.Object({ phone_hash: Hash, account_holder_id: Type.Optional(HolderRef), cursor: Type.Optional(Type.String({ maxLength: 1024 })), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT })) }, { additionalProperties: false }),
      ]),
      response: { 200: Page(Contact), ...errors },
    },
  }, async (req) => {
    const b = req.body as { email_hash?: string; phone_hash?: string; account_holder_id?: string; cursor?: string; limit?: number };
    return contacts.list(scopeOf(req), { email_hash: b.email_hash, phone_hash: b.phone_hash, account_holder_id: b.account_holder_id }, b.cursor, b.limit ?? DEFAULT_LIMIT, 'contacts_search');
  });

  app.get('/contacts/:id', {
    config: { permission: 'account_holder.read' },
    schema: { summary: 'Read a contact; the ETag is its version', tags: TAGS, security: read, params: IdParam, response: { 200: Contact, ...errors } },
  }, async (req, reply) => send(reply, await contacts.get(scopeOf(req), req.params.id)));

  app.patch('/contacts/:id', {
    config: { permission: 'account_holder.manage' },
    schema: {
      summary: 'Change a contact\'s name, email, phone or reference; needs If-Match',
      description: 'If-Match: the ETag read (`"<version>"`); 428 without it, 412 precondition_failed when the contact changed since. The holder cannot change.',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ name: Type.Optional(Name), email: Type.Optional(Nullable(Email)), phone: Type.Optional(Nullable(Phone)), reference: Type.Optional(Nullable(Reference)) }, { additionalProperties: false }),
      response: { 200: Contact, ...errors, 412: ErrorBody, 428: ErrorBody },
    },
  }, async (req, reply) => send(reply, await contacts.patch(scopeOf(req), actorOf(req), req.params.id, ifMatchOf(req, 'contact'), req.body)));

  app.delete('/contacts/:id', {
    config: { permission: 'account_holder.manage' },
    schema: { summary: 'Delete a contact', tags: TAGS, security: change, params: IdParam, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    await contacts.remove(scopeOf(req), actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });
};
