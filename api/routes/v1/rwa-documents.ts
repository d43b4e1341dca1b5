// A token's documents, their entitlements and its metadata (docs/platform/rwa.md "Documents and metadata"):
// uploads through a signed URL as the logo and avatar flows, confirmed with their SHA-256; reads by grantees
// only, through a 5-minute presigned GET; the ERC-721 / ERC-1155 metadata JSON, the placeholder, the
// ERC-7572 contract document, instances from the chain's mint events and checked relationships. Documents
// and entitlements change with tokenization.manage; everything else reads with tokenization.read.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import { IdempotentRequests, requiredIdempotencyKey } from '../../idempotency.ts';
import type { DocumentService } from '../../rwa/documents/document-service.ts';
import { DOCUMENT_TYPES, MAX_DOCUMENT_BYTES } from '../../rwa/documents/document-service.ts';
import { RELATIONS, type MetadataService } from '../../rwa/documents/metadata-service.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 502: ErrorBody, 503: ErrorBody };
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const DOCS = 'docs/platform/rwa.md#documents-and-metadata.';

const Document = Type.Object({
  id: Type.String(), token_id: Type.String(), name: Type.String(), content_type: Type.String(), size: Type.Integer(),
  sha256: Type.String({ description: 'hex SHA-256 of the bytes, as confirmed' }), log_index: Type.Integer({ description: 'the `document` entry\'s index in the token\'s log' }), created_at: Type.String(),
});
const Entitlement = Type.Object({ token_id: Type.String(), grantee: Type.String(), document_ids: Nullable(Type.Array(Type.String())), expires_at: Nullable(Type.String()), granted_at: Type.String() });
const Attribute = Type.Object({ trait_type: Type.String(), value: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]) });
const MetadataJson = Type.Object({
  name: Type.String(), description: Nullable(Type.String()), image: Nullable(Type.String()), attributes: Type.Array(Attribute),
  external_url: Type.Optional(Type.String()), decimals: Type.Optional(Type.Integer()),
}, { description: 'ERC-721 / ERC-1155 metadata JSON' });
const Checks = Type.Object({ exists: Type.Boolean(), same_chain: Type.Boolean(), on_chain: Nullable(Type.Boolean({ description: 'null: the chain is not read here' })), reciprocal: Type.Boolean() });

export const rwaDocumentsRoutes: FastifyPluginAsyncTypebox<{ documents: DocumentService; metadata: MetadataService; store: RecordRepository; clock: () => number; idempotencyWindowMs?: number; publicOrigin?: string | undefined }> = async (app, { documents, metadata, store, clock, idempotencyWindowMs, publicOrigin }) => {
  const idem = new IdempotentRequests(store, clock, idempotencyWindowMs);
  const originOf = (req: { headers: { host?: string | undefined } }) => publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;

  app.post('/rwa/tokens/:id/documents/upload-url', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'An upload URL for one of the token\'s documents (a PDF or an image, at most 20 MiB), valid 15 minutes; confirm with .../documents/confirm',
      description: `Idempotency-Key required. ${DOCS}`, tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), content_type: Type.Union(DOCUMENT_TYPES.map((t) => Type.Literal(t))), content_length: Type.Integer({ minimum: 1, maximum: MAX_DOCUMENT_BYTES }) }, { additionalProperties: false }),
      response: { 201: Type.Object({ upload_url: Type.String(), object_key: Type.String(), expires_at: Type.String(), max_bytes: Type.Integer() }), ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'upload URL');
    return reply.code(201).send(await idem.run(scope.workspace, `rwa_document_upload:${req.params.id}`, key, req.body, () => documents.uploadUrl(scope, req.params.id, req.body, originOf(req))));
  });

  app.post('/rwa/tokens/:id/documents/confirm', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Record an uploaded object as a document of the token once its bytes are a PDF or an image and their SHA-256 is the one given; appended to the token\'s log',
      description: `Idempotency-Key required; confirming the same object again answers the same document. ${DOCS}`, tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ object_key: Type.String({ maxLength: 200 }), sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'lower-case hex SHA-256 of the uploaded bytes' }) }, { additionalProperties: false }),
      response: { 201: Document, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'document');
    return reply.code(201).send(await idem.run(scope.workspace, `rwa_document_confirm:${req.params.id}`, key, req.body, () => documents.confirm(scope, actorOf(req), req.params.id, req.body.object_key, req.body.sha256)));
  });

  app.get('/rwa/tokens/:id/documents/:docId', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'One of the token\'s documents with a presigned GET URL valid 5 minutes, for a key entitled to it (by its id or its role) only',
      description: `403 document_not_entitled for any other key. ${DOCS}`, tags: TAGS, security: read,
      params: Type.Object({ id: Type.String({ maxLength: 64 }), docId: Type.String({ maxLength: 64 }) }),
      response: { 200: Type.Intersect([Document, Type.Object({ url: Type.String(), url_expires_at: Type.String() })]), ...errors },
    },
  }, async (req) => {
    const p = principalOf(req);
    return documents.read(scopeOf(req), { keyId: p.keyId, role: p.role }, req.params.id, req.params.docId, originOf(req));
  });

  app.post('/rwa/tokens/:id/document-entitlements', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Entitle a grantee (key:<key id> or role:<role>) to the token\'s documents, all or those listed, optionally until a time; replaces its previous entitlement',
      description: `Idempotency-Key required. Appended to the token's log. ${DOCS}`, tags: TAGS, security: change, params: IdParam,
      body: Type.Object({
        grantee: Type.String({ maxLength: 80, description: 'key:<workspace key id> or role:<role>' }),
        document_ids: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 100, description: 'absent: every document of the token, present and future' })),
        expires_at: Type.Optional(Type.String({ maxLength: 40, description: 'an RFC 3339 time in the future' })),
      }, { additionalProperties: false }),
      response: { 201: Entitlement, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'entitlement');
    return reply.code(201).send(await idem.run(scope.workspace, `rwa_document_grant:${req.params.id}`, key, req.body, () => documents.grant(scope, actorOf(req), req.params.id, req.body)));
  });

  app.delete('/rwa/tokens/:id/document-entitlements/:grantee', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Revoke a grantee\'s entitlement to the token\'s documents; appended to the token\'s log',
      description: DOCS, tags: TAGS, security: change,
      params: Type.Object({ id: Type.String({ maxLength: 64 }), grantee: Type.String({ maxLength: 80 }) }),
      response: { 204: Type.Null(), ...errors },
    },
  }, async (req, reply) => {
    await documents.revoke(scopeOf(req), actorOf(req), req.params.id, req.params.grantee);
    return reply.code(204).send(null);
  });

  app.get('/rwa/tokens/:id/metadata', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'The token\'s metadata: name, symbol, description, image and attributes from its record and public fields, whether it is revealed, and its token URI convention',
      description: DOCS, tags: TAGS, security: read, params: IdParam,
      response: {
        200: Type.Object({
          token_id: Type.String(), kind: Type.String(), chain: Type.String(), address: Type.String(), name: Nullable(Type.String()), symbol: Nullable(Type.String()),
          description: Nullable(Type.String()), image: Nullable(Type.String()), external_url: Nullable(Type.String()), attributes: Type.Array(Attribute), revealed: Type.Boolean(),
          token_uri_template: Nullable(Type.String()),
        }),
        ...errors,
      },
    },
  }, async (req) => metadata.metadata(scopeOf(req), req.params.id));

  app.get('/rwa/tokens/:id/metadata/:tokenId', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'One instance\'s metadata JSON (ERC-721 / ERC-1155 conventions; ERC-1155 {id} substituted), the placeholder before reveal',
      description: `tokenId: decimal, or ERC-1155's 64 hex digits. ${DOCS}`, tags: TAGS, security: read,
      params: Type.Object({ id: Type.String({ maxLength: 64 }), tokenId: Type.String({ maxLength: 80 }) }),
      response: { 200: MetadataJson, ...errors },
    },
  }, async (req) => metadata.instanceMetadata(scopeOf(req), req.params.id, req.params.tokenId));

  app.get('/rwa/tokens/:id/placeholder', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'The metadata document every instance shows before the token is revealed', description: DOCS, tags: TAGS, security: read, params: IdParam, response: { 200: MetadataJson, ...errors } },
  }, async (req) => metadata.placeholder(scopeOf(req), req.params.id));

  app.get('/rwa/tokens/:id/instances', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'The token ids of an ERC-721 or ERC-1155 minted so far, with minted, burned and supply, read from the chain\'s mint and burn events',
      description: DOCS, tags: TAGS, security: read, params: IdParam,
      response: {
        200: Type.Object({
          token_id: Type.String(), kind: Type.String(), chain: Type.String(), address: Type.String(), block: Type.String({ description: 'the block read up to' }),
          data: Type.Array(Type.Object({ token_id: Type.String(), token_id_hex: Type.String(), minted: Type.String(), burned: Type.String(), supply: Type.String() })),
        }),
        ...errors,
      },
    },
  }, async (req) => metadata.instances(scopeOf(req), req.params.id));

  app.get('/rwa/tokens/:id/relationships', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'The token\'s declared share classes, parent and child tokens, each checked against the records and the chain',
      description: DOCS, tags: TAGS, security: read, params: IdParam,
      response: {
        200: Type.Object({
          token_id: Type.String(), chain: Type.String(), on_chain: Nullable(Type.Boolean()),
          data: Type.Array(Type.Object({ relation: literals(RELATIONS), token_id: Type.String(), chain: Nullable(Type.String()), address: Nullable(Type.String()), kind: Nullable(Type.String()), checks: Checks, consistent: Type.Boolean() })),
        }),
        ...errors,
      },
    },
  }, async (req) => metadata.relationships(scopeOf(req), req.params.id));

  app.get('/rwa/contracts/:id/contract-metadata', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'The ERC-7572 contractURI document of a token\'s contract (the contract id is the token id)',
      description: DOCS, tags: TAGS, security: read, params: IdParam,
      response: {
        200: Type.Object({
          name: Type.String(), symbol: Type.Optional(Type.String()), description: Type.Optional(Type.String()), image: Type.Optional(Type.String()),
          banner_image: Type.Optional(Type.String()), featured_image: Type.Optional(Type.String()), external_link: Type.Optional(Type.String()), collaborators: Type.Array(Type.String()),
        }),
        ...errors,
      },
    },
  }, async (req) => metadata.contractMetadata(scopeOf(req), req.params.id));
};
