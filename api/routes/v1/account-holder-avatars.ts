// Account holder avatars, the `embedded:avatar` operations (docs/platform/account-holders.md "Avatars"):
// an upload URL, the confirmation by magic bytes, a short-lived presigned GET, and removal. With the
// embedded object store, the upload goes to PUT /v1/uploads/... (routes/v1/branding.ts) and the presigned
// GET to /v1/downloads/... here; with S3 both point at the bucket.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DATA_EXPORT_PREFIX } from '../../account-holders/holder-data-exports.ts';
import { DirectoryObjectStore } from '../../adapters/directory-object-store.ts';
import { UPLOAD_IMAGE_TYPES, fromStore } from '../../adapters/uploaded-image.ts';
import { sniffImage } from '../../branding/sniff-image.ts';
import { AccountHolderService } from '../../account-holders/account-holder-service.ts';
import { AccountHolderAvatars, MAX_AVATAR_BYTES } from '../../account-holders/account-holder-avatars.ts';
import { DOCUMENT_PREFIX, sniffDocument } from '../../rwa/documents/document-service.ts';

const TAGS = ['account holders'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 502: ErrorBody };
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Avatar = Type.Object({ account_holder_id: Type.String(), object_key: Type.String(), content_type: Type.String(), size: Type.Integer(), confirmed_at: Type.String() });

export const accountHolderAvatarRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; publicOrigin?: string | undefined }> = async (app, { platform, publicOrigin }) => {
  const holders = new AccountHolderService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, clock: platform.clock });
  const avatars = new AccountHolderAvatars({ store: platform.store, objects: platform.objects, holders, audit: platform.audit, clock: platform.clock });
  const originOf = (req: { headers: { host?: string | undefined } }) => publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;

  app.post('/account-holders/:id/avatar/upload-url', {
    config: { permission: 'account_holder.manage' },
    schema: {
      summary: 'An upload URL for the account holder\'s avatar image (at most 2 MiB), valid 15 minutes; confirm with .../avatar/confirm',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ content_type: Type.Union(UPLOAD_IMAGE_TYPES.map((t) => Type.Literal(t))), content_length: Type.Integer({ minimum: 1, maximum: MAX_AVATAR_BYTES }) }, { additionalProperties: false }),
      response: { 201: Type.Object({ upload_url: Type.String(), object_key: Type.String(), expires_at: Type.String(), max_bytes: Type.Integer() }), ...errors },
    },
  }, async (req, reply) => reply.code(201).send(await avatars.uploadUrl(scopeOf(req), req.params.id, req.body.content_type, req.body.content_length, originOf(req))));

  app.post('/account-holders/:id/avatar/confirm', {
    config: { permission: 'account_holder.manage' },
    schema: {
      summary: 'Set the uploaded image as the account holder\'s avatar once its bytes decode as a PNG, JPEG, GIF or WebP image (stored written again, without metadata)',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ object_key: Type.String({ maxLength: 200 }) }, { additionalProperties: false }),
      // 503: too many images already waiting to be decoded (api/adapters/image-reencode.ts MAX_QUEUED_IMAGES).
      response: { 200: Avatar, ...errors, 503: ErrorBody },
    },
  }, async (req) => avatars.confirm(scopeOf(req), actorOf(req), req.params.id, req.body.object_key));

  app.get('/account-holders/:id/avatar', {
    config: { permission: 'account_holder.read' },
    schema: {
      summary: 'The account holder\'s avatar: a presigned GET URL valid 5 minutes, and the image\'s type and size',
      tags: TAGS, security: read, params: IdParam,
      response: { 200: Type.Intersect([Avatar, Type.Object({ url: Type.String(), expires_at: Type.String() })]), ...errors },
    },
  }, async (req) => avatars.read(scopeOf(req), req.params.id, originOf(req)));

  app.delete('/account-holders/:id/avatar', {
    config: { permission: 'account_holder.manage' },
    schema: { summary: 'Remove the account holder\'s avatar', tags: TAGS, security: change, params: IdParam, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    await avatars.remove(scopeOf(req), actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  const objects = platform.objects;
  // The embedded store's presigned GET; an S3 store's URLs point at the bucket instead.
  if (objects instanceof DirectoryObjectStore) app.get('/downloads/:prefix/:name', {
    config: { public: true },
    schema: {
      summary: 'Download an object of the embedded object store through a presigned GET URL',
      description: 'Authorized by the signed, expiring URL an API read answered (e.g. GET /v1/account-holders/{id}/avatar), not by a key.',
      tags: TAGS, security: [], params: Type.Object({ prefix: Type.String(), name: Type.String() }), querystring: Type.Object({ exp: Type.Optional(Type.String()), sig: Type.Optional(Type.String()) }), // the presigned URL's, checked by its signature
    },
  }, async (req, reply) => {
    const key = `${req.params.prefix}/${req.params.name}`;
    if (!objects.checkDownload(key, req.query, platform.clock())) throw new CustodyError('upload_denied', 'the download URL is invalid or expired');
    const bytes = await fromStore(() => objects.read(key));
    // A member's data export (api/account-holders/holder-data-exports.ts) is the API's own JSON; every other object must be an image.
    // A token's document (api/rwa/documents/document-service.ts) is a PDF or an image, served as an attachment.
    const exported = req.params.prefix === DATA_EXPORT_PREFIX;
    const document = req.params.prefix === DOCUMENT_PREFIX;
    const type = bytes ? (exported ? 'application/json' : document ? sniffDocument(bytes) : sniffImage(bytes)) : undefined;
    if (!bytes || !type) throw new CustodyError('not_found', 'no such object');
    if (exported) reply.header('content-disposition', 'attachment; filename="data-export.json"');
    if (document) reply.header('content-disposition', 'attachment');
    return reply.type(type).header('x-content-type-options', 'nosniff').header('cache-control', 'private, no-store').send(bytes);
  });
};
