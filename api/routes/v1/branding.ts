// Branding: resolved and raw theme, theme patch, logo removal and the public bundle
// (docs/platform/branding.md).
import { DOCUMENT_TYPES, MAX_DOCUMENT_BYTES } from '../../rwa/documents/document-service.ts';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { randomBytes } from 'node:crypto';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { principalOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { SURFACES } from '../../branding/branding-service.ts';
import { sniffImage } from '../../branding/sniff-image.ts';
import { UPLOAD_IMAGE_TYPES, confirmUploadedImage, fromStore } from '../../adapters/uploaded-image.ts';
import { DirectoryObjectStore } from '../../adapters/directory-object-store.ts';
import type { DomainRecord } from '../../branding/email-domains.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { BRANDING_LOGOS, UPLOAD_GRANTS } from '../../branding/collections.ts';

const Loose = Type.Record(Type.String(), Type.Unknown());
const SurfaceName = Type.Union(SURFACES.map((s) => Type.Literal(s)));
const View = Type.Object({ resolved: Loose, theme: Loose, surfaces: Type.Record(Type.String(), Type.Object({ theme: Loose, resolved: Loose })), resolution_order: Type.Array(Type.String()), public_claim_token: Type.String(), updated_at: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 422: ErrorBody };

export const brandingRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; publicPerMinute?: number }> = async (app, { platform, publicPerMinute }) => {
  const b = platform.branding;
  const scope = (req: { principal?: unknown }) => {
    const p = principalOf(req as never);
    return { tenant: p.tenant, workspace: p.workspace };
  };
  const actor = (req: { principal?: unknown }) => ({ type: 'api_key' as const, id: principalOf(req as never).keyId });

  app.get('/branding', { schema: { summary: 'The workspace\'s theme as set, resolved, and per surface', tags: ['branding'], security: [{ bearer: [] }], response: { 200: View, ...errors } } }, async (req) => b.view(scope(req)));

  // Idempotency-Key (platform-api.md): the same key and body replay the first answer; another body is 409.
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  app.put('/branding', {
    config: { permission: 'branding.manage' },
    schema: { summary: 'Patch the workspace\'s theme (Idempotency-Key replays the first answer)', tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], body: Type.Record(Type.String(), Type.Unknown()), response: { 200: View, ...errors, 409: ErrorBody } },
  }, async (req) => idempotent.run(scope(req).workspace, 'put_branding', idempotencyKeyOf(req), req.body, () => b.patch(scope(req), actor(req), req.body)));

  app.delete('/branding/logo', {
    config: { permission: 'branding.manage' },
    schema: { summary: 'Remove the workspace\'s logo', tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], response: { 200: View, ...errors } },
  }, async (req) => b.clearLogo(scope(req), actor(req)));

  app.get('/public/branding', {
    // Anyone holding a claim token may read it without a key: a stricter budget per client address.
    config: { public: true, addressLimit: { policy: 'public_branding', max: publicPerMinute ?? 60, windowMs: 60_000 } },
    schema: { summary: 'The public branding bundle for a claim token, rate-limited per address', tags: ['branding'], security: [], querystring: Type.Object({ claim_token: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'the capability; anything but one valid token (none, an unknown, expired or repeated one) answers the platform default' })), surface: Type.Optional(SurfaceName) }, { additionalProperties: false }), response: { 200: Loose, 400: ErrorBody, 429: ErrorBody } },
  }, async (req) => {
    // The spec: this read always answers 200. A repeated claim_token is no one token: the platform default.
    const token = typeof req.query.claim_token === 'string' ? req.query.claim_token : undefined;
    return b.publicBundle(token, req.query.surface);
  });
};

const LOGO_TYPES = UPLOAD_IMAGE_TYPES;
export const MAX_LOGO_BYTES = 5 * 1024 * 1024;
const UPLOAD_TTL_MS = 15 * 60_000;
const logoErrors = { ...errors, 502: ErrorBody };

/** Logo flow: an upload target, the direct PUT (to the embedded store's route or the bucket), and confirmation. */
export const logoRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; publicOrigin?: string | undefined }> = async (app, { platform, publicOrigin }) => {
  const objects = platform.objects;
  // A token's document (api/rwa/documents/document-service.ts) goes up the same route: its images (kept
  // as uploaded, where a logo is written again) as a logo's, its PDF with its own limit.
  const imageTypes = new Set<string>([...LOGO_TYPES, ...DOCUMENT_TYPES.filter((ct) => ct.startsWith('image/'))]);
  if (objects instanceof DirectoryObjectStore) for (const ct of imageTypes) app.addContentTypeParser(ct, { parseAs: 'buffer', bodyLimit: MAX_LOGO_BYTES }, (_req, body: Buffer, done) => done(null, body));
  if (objects instanceof DirectoryObjectStore) app.addContentTypeParser('application/pdf', { parseAs: 'buffer', bodyLimit: MAX_DOCUMENT_BYTES }, (_req, body: Buffer, done) => done(null, body));

  app.post('/branding/logo/upload-url', {
    config: { permission: 'branding.manage' },
    schema: {
      summary: 'An upload URL for a logo image, valid 15 minutes; confirm the upload with POST /v1/branding/logo',
      tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }],
      body: Type.Object({ content_type: Type.Union(LOGO_TYPES.map((t) => Type.Literal(t))), content_length: Type.Integer({ minimum: 1, maximum: MAX_LOGO_BYTES }) }, { additionalProperties: false }),
      response: { 201: Type.Object({ upload_url: Type.String(), object_key: Type.String(), expires_at: Type.String() }), ...logoErrors },
    },
  }, async (req, reply) => {
    const expires = platform.clock() + UPLOAD_TTL_MS;
    const object_key = `logos/${randomBytes(16).toString('hex')}`;
    const origin = publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
    const upload_url = await objects.uploadUrl({ object_key, content_type: req.body.content_type, max_bytes: req.body.content_length, expires_at: expires }, origin);
    await UPLOAD_GRANTS.in(platform.store).put(object_key, { tenant: principalOf(req).tenant, workspace: principalOf(req).workspace });
    return reply.code(201).send({ upload_url, object_key, expires_at: new Date(expires).toISOString() });
  });

  // The signed upload URL's query (api/adapters/directory-object-store.ts), checked by its signature.
  const UploadQuery = Type.Object({ ct: Type.Optional(Type.String()), max: Type.Optional(Type.String()), exp: Type.Optional(Type.String()), sig: Type.Optional(Type.String()) });
  // The embedded store takes the PUT here; an S3 store's URLs point at the bucket instead.
  if (objects instanceof DirectoryObjectStore) app.put('/uploads/:prefix/:name', {
    config: { public: true },
    schema: {
      summary: 'Upload a logo to the embedded object store', description: 'Authorized by the signed upload URL from POST /v1/branding/logo/upload-url, not by a key.',
      tags: ['branding'], security: [], params: Type.Object({ prefix: Type.String(), name: Type.String() }), querystring: UploadQuery, response: { 204: Type.Null(), ...errors } },
  }, async (req, reply) => {
    const key = `${req.params.prefix}/${req.params.name}`;
    const g = objects.checkUpload(key, req.query, platform.clock());
    if (!g) throw new CustodyError('upload_denied', 'the upload URL is invalid or expired');
    if (req.headers['content-type'] !== g.content_type) throw new CustodyError('unsupported_media_type', `this upload URL accepts ${g.content_type} only`);
    const body = req.body as Buffer | undefined;
    if (!Buffer.isBuffer(body) || body.length === 0 || body.length > g.max_bytes) throw new CustodyError('payload_too_large', `the object must be 1 to ${g.max_bytes} bytes`);
    await objects.write(key, body);
    return reply.code(204).send(null);
  });

  app.get('/objects/:prefix/:name', {
    config: { public: true },
    schema: { summary: 'A confirmed logo image, served publicly', tags: ['branding'], security: [], params: Type.Object({ prefix: Type.String(), name: Type.String() }) },
  }, async (req, reply) => {
    const key = `${req.params.prefix}/${req.params.name}`;
    const bytes = key.startsWith('logos/') && (await BRANDING_LOGOS.in(platform.store).get(key)) ? await fromStore(() => objects.read(key)) : undefined;
    const type = bytes ? sniffImage(bytes) : undefined;
    if (!bytes || !type) throw new CustodyError('not_found', 'no such object');
    return reply.type(type).header('x-content-type-options', 'nosniff').send(bytes);
  });

  // 503: too many images already waiting to be decoded (api/adapters/image-reencode.ts MAX_QUEUED_IMAGES).
  app.post('/branding/logo', {
    config: { permission: 'branding.manage' },
    schema: { summary: 'Set the uploaded image as the workspace\'s logo', tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], body: Type.Object({ object_key: Type.String({ maxLength: 200 }) }, { additionalProperties: false }), response: { 200: View, ...logoErrors, 503: ErrorBody } },
  }, async (req) => {
    const p = principalOf(req);
    // Only the workspace that asked for the upload URL may confirm it (sandbox and production are separate).
    const grant = await UPLOAD_GRANTS.in(platform.store).get(req.body.object_key);
    if (grant?.tenant !== p.tenant || grant.workspace !== p.workspace) throw new CustodyError('validation_failed', 'object_key: no uploaded object with this key');
    await confirmUploadedImage(objects, req.body.object_key, MAX_LOGO_BYTES);
    await BRANDING_LOGOS.in(platform.store).put(req.body.object_key, { tenant: p.tenant, workspace: p.workspace });
    return platform.branding.setLogo({ tenant: p.tenant, workspace: p.workspace }, { type: 'api_key', id: p.keyId }, req.body.object_key, `/v1/objects/${req.body.object_key}`);
  });
};

const DnsRecordSchema = Type.Object({ record: Type.String(), name: Type.String(), value: Type.String(), type: Type.String(), ttl: Type.Integer(), priority: Type.Union([Type.Null(), Type.Integer()]) });
const Domain = Type.Object({
  id: Type.String(), domain: Type.String(), status: Type.String(), region: Type.String(), dns_records: Type.Array(DnsRecordSchema),
  verified_at: Type.Union([Type.Null(), Type.String()]), last_synced_at: Type.Union([Type.Null(), Type.String()]), created_at: Type.String(),
});
const domainErrors = { ...errors, 409: ErrorBody, 502: ErrorBody, 503: ErrorBody };

/** Sending domains: list with provider_configured, add, verify, delete. */
export const emailDomainRoutes: FastifyPluginAsyncTypebox<{ platform: Platform }> = async (app, { platform }) => {
  const d = platform.emailDomains;
  const who = (req: { principal?: unknown }) => {
    const p = principalOf(req as never);
    return { scope: { tenant: p.tenant, workspace: p.workspace }, actor: { type: 'api_key' as const, id: p.keyId } };
  };
  const out = (r: DomainRecord) => {
    const { tenant: _t, workspace: _w, ...rest } = r;
    return rest;
  };
  app.get('/branding/email-domains', { schema: { summary: 'The workspace\'s sending domains, and whether an email provider is configured', tags: ['branding'], security: [{ bearer: [] }], response: { 200: Type.Object({ data: Type.Array(Domain), provider_configured: Type.Boolean() }), ...domainErrors } } },
    async (req) => ({ data: (await d.list(who(req).scope)).map(out), provider_configured: d.configured }));
  app.post('/branding/email-domains', {
    config: { permission: 'branding.email_domain.manage' },
    schema: { summary: 'Add a sending domain; answers the DNS records to publish', tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], body: Type.Object({ domain: Type.String({ maxLength: 253 }) }, { additionalProperties: false }), response: { 201: Domain, ...domainErrors } },
  }, async (req, reply) => reply.code(201).send(out(await d.add(who(req).scope, who(req).actor, req.body.domain))));
  app.post('/branding/email-domains/:id/verify', {
    config: { permission: 'branding.email_domain.manage' },
    schema: { summary: 'Check a sending domain\'s DNS records with the email provider', tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: Domain, ...domainErrors } },
  }, async (req) => out(await d.verify(who(req).scope, who(req).actor, req.params.id)));
  app.delete('/branding/email-domains/:id', {
    config: { permission: 'branding.email_domain.manage' },
    schema: { summary: 'Remove a sending domain', tags: ['branding'], security: [{ bearer: [] }, { bearer: [], httpSignature: [] }], params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 204: Type.Null(), ...domainErrors } },
  }, async (req, reply) => {
    await d.remove(who(req).scope, who(req).actor, req.params.id);
    return reply.code(204).send(null);
  });
};
