// Real-world assets: asset schemas (8 operations), schema rebinds (5), and per token its schema binding (2),
// fields (3) and attesters (3) (docs/platform/rwa.md "Asset schemas, bindings, fields and attesters"), with a
// workspace bearer key: tokenization.read for reads and compile-preview, tokenization.manage for schemas,
// bindings, rebinds and attesters, tokenization.operate for field values and attestations. Every POST that
// creates or changes something takes a required Idempotency-Key: the same key and body answer the same.
import { TEXT_KIND } from '../../text-input.ts';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery, pageOf } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf, requiredIdempotencyKey } from '../../idempotency.ts';
import { filteredWalk } from '../../account-holders/filtered-walk.ts';
import type { RwaSchemas } from '../../rwa/schema/schema-setup.ts';
import { assetSchemaView, schemaVersionView } from '../../rwa/schema/asset-schema-service.ts';
import { attesterView, bindingView, fieldView } from '../../rwa/schema/token-fields-service.ts';
import { rebindView } from '../../rwa/schema/schema-rebind-service.ts';
import { ATTESTERS } from '../../rwa/schema/collections.ts';
import { FIELD_PATH, VISIBILITIES } from '../../rwa/schema/asset-schema-compiler.ts';
import { REBIND_STATES } from '../../rwa/schema/records.ts';
import type { AttesterKey } from '../../rwa/schema/attestation.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody };
const DOC = 'docs/platform/rwa.md#asset-schemas-bindings-fields-and-attesters';

const SchemaIdParam = Type.Object({ id: Type.String({ maxLength: 64, description: 'the asset schema\'s id: a slug of the workspace, chosen by the caller' }) });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const FieldParams = Type.Object({ id: Type.String({ maxLength: 64 }), fieldPath: Type.String({ maxLength: 1100, pattern: FIELD_PATH.source, description: 'a field of the bound schema: property names joined by dots' }) });
const AttesterParams = Type.Object({ id: Type.String({ maxLength: 64 }), attesterId: Type.String({ maxLength: 64 }) });
const Hash = Type.String({ description: 'SHA-256, lower-case hex' });
const Version = Type.Integer({ minimum: 1, maximum: 1000 });
const JsonSchemaDoc = Type.Unknown({ description: 'a JSON Schema draft 2020-12 document: {"type": "object", "properties": {...}}, `x-visibility` public | committed | private on properties (default private)' });
const Visibility = literals(VISIBILITIES);

const FieldSpec = Type.Object({
  path: Type.String(), type: Type.Union([Type.String(), Type.Array(Type.String()), Type.Null()]), visibility: Visibility, required: Type.Boolean(),
  title: Nullable(Type.String()), description: Nullable(Type.String()),
});
const Origin = Nullable(Type.Union([Type.Object({ template: Type.String() }), Type.Object({ schema_id: Type.String(), version: Type.Integer() })]));
const AssetSchema = Type.Object({
  id: Type.String(), name: Type.String(), description: Nullable(Type.String()), versions: Type.Integer(), draft_version: Nullable(Type.Integer()), latest_published: Nullable(Type.Integer()),
  origin: Origin, created_at: Type.String(), updated_at: Type.String(),
});
const SchemaVersion = Type.Object({
  schema_id: Type.String(), version: Type.Integer(), status: literals(['draft', 'published'] as const), sha256: Hash, json_schema: Type.Unknown(), fields: Type.Array(FieldSpec),
  forked_from: Nullable(Type.Object({ schema_id: Type.String(), version: Type.Integer() })), created_at: Type.String(), updated_at: Type.String(), published_at: Nullable(Type.String()),
});
const SchemaWithVersion = Type.Object({ schema: AssetSchema, version: SchemaVersion });
const SchemaRead = Type.Object({
  schema: AssetSchema, version: SchemaVersion,
  versions: Type.Array(Type.Object({ version: Type.Integer(), status: literals(['draft', 'published'] as const), sha256: Hash, published_at: Nullable(Type.String()) })),
});
const Template = Type.Object({ id: Type.String(), name: Type.String(), description: Type.String(), json_schema: Type.Unknown(), fields: Type.Array(FieldSpec) });
const TokenMetadata = Type.Object({
  attributes: Type.Array(Type.Object({ trait_type: Type.String(), value: Type.Unknown() })),
  properties: Type.Object({ asset_schema: Type.Object({ id: Type.String(), version: Type.Integer(), sha256: Hash }), commitments: Type.Record(Type.String(), Type.String()) }),
}, { description: 'the ERC-721/1155 metadata JSON conventions: public fields as attributes, committed fields as salted SHA-256 commitments' });
const Preview = Type.Object({
  schema_id: Type.String(), version: Type.Integer(), status: literals(['draft', 'published'] as const), sha256: Hash, fields: Type.Array(FieldSpec),
  on_chain: Type.Object({ public: Type.Array(Type.String()), committed: Type.Array(Type.String()) }), off_chain: Type.Array(Type.String()), token_metadata: TokenMetadata,
  values_valid: Nullable(Type.Boolean()), problems: Type.Array(Type.Object({ path: Type.String(), message: Type.String() })),
});

const Key = Type.Union([
  Type.Object({ scheme: Type.Literal('ed25519'), public_key: Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: '32-byte Ed25519 public key, hex' }) }, { additionalProperties: false }),
  Type.Object({ scheme: Type.Literal('eip712'), address: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: 'the EVM address that signs EIP-712 (an EOA)' }) }, { additionalProperties: false }),
]);
const Binding = Type.Object({
  token_id: Type.String(), schema_id: Type.String(), version: Type.Integer(), sha256: Hash, rebind_policy: Type.Object({ attestations: Type.Integer() }),
  rebind_id: Nullable(Type.String()), bound_at: Type.String(), log_index: Type.Integer(),
});
const FieldStatement = Type.Object({
  token_id: Type.String(), chain_id: Type.Integer(), contract: Type.String(), field: Type.String(), value_sha256: Hash, schema_id: Type.String(), schema_version: Type.Integer(),
  schema_sha256: Hash, attester_id: Type.String(), nonce: Type.Integer(),
});
const Field = Type.Object({
  path: Type.String(), value: Type.Unknown(), value_sha256: Hash, visibility: Visibility, commitment: Nullable(Hash), salt: Nullable(Type.String()), schema_id: Type.String(), schema_version: Type.Integer(),
  sequence: Type.Integer(), source: Type.Union([Type.Object({ type: Type.Literal('issuer'), actor: Type.String() }), Type.Object({ type: Type.Literal('attester'), attester_id: Type.String() })]),
  attestations: Type.Array(Type.Object({ attester_id: Type.String(), statement: FieldStatement, key: Key, signature: Type.String(), at: Type.String(), log_index: Type.Integer() })),
  set_at: Type.String(), log_index: Type.Integer(),
});
const Fields = Type.Object({
  token_id: Type.String(), schema: Nullable(Type.Object({ id: Type.String(), version: Type.Integer(), sha256: Hash })), fields: Type.Array(Field),
  missing_required: Type.Array(Type.String()), token_metadata: Nullable(TokenMetadata),
});
const Attester = Type.Object({
  id: Type.String(), token_id: Type.String(), name: Type.String(), key: Key, fields: Type.Array(Type.String()), status: literals(['active', 'removed'] as const),
  last_nonce: Type.Integer({ description: 'the highest accepted nonce: the next field attestation must be above it' }), created_at: Type.String(), removed_at: Nullable(Type.String()),
});
const DryRun = Type.Object({
  ran_at: Type.String(), values_sha256: Hash, passed: Type.Boolean(),
  fields: Type.Array(Type.Object({ path: Type.String(), status: literals(['ok', 'invalid', 'undefined_field'] as const), problems: Type.Array(Type.String()), from_visibility: Visibility, to_visibility: Nullable(Visibility) })),
  other_problems: Type.Array(Type.String()), added_fields: Type.Array(Type.String()), missing_required: Type.Array(Type.String()), sha256: Type.String({ description: 'what attesters sign (dry_run_sha256)' }),
});
const RebindStatement = Type.Object({
  rebind_id: Type.String(), token_id: Type.String(), chain_id: Type.Integer(), contract: Type.String(), schema_id: Type.String(), from_version: Type.Integer(), from_sha256: Hash,
  to_version: Type.Integer(), to_sha256: Hash, dry_run_sha256: Hash, attester_id: Type.String(),
});
const Rebind = Type.Object({
  id: Type.String(), token_id: Type.String(), schema_id: Type.String(), from_version: Type.Integer(), from_sha256: Hash, to_version: Type.Integer(), to_sha256: Hash,
  state: literals(REBIND_STATES), required_attestations: Type.Integer(), dry_run: Nullable(DryRun),
  attestations: Type.Array(Type.Object({ attester_id: Type.String(), statement: RebindStatement, key: Key, signature: Type.String(), at: Type.String(), log_index: Type.Integer() })),
  created_at: Type.String(), updated_at: Type.String(), committed_at: Nullable(Type.String()), log_index: Nullable(Type.Integer()),
});
const Signature = Type.String({ pattern: '^([0-9a-fA-F]{128}|0x[0-9a-fA-F]{130})$', description: 'Ed25519: 64 bytes hex over the statement\'s text; EIP-712: the 65-byte 0x signature over its typed data' });

export const rwaSchemaRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; rwa: RwaSchemas }> = async (app, { platform, rwa }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const { schemas, fields, rebinds } = rwa;
  const pair = (r: { head: Parameters<typeof assetSchemaView>[0]; version: Parameters<typeof schemaVersionView>[0] }) => ({ schema: assetSchemaView(r.head), version: schemaVersionView(r.version) });

  // ── Asset schemas ──────────────────────────────────────────────────────────────────────────────────
  app.get('/rwa/asset-schemas', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'List the workspace\'s asset schemas by id', tags: TAGS, security: read, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(AssetSchema), ...errors } },
  }, async (req) => schemas.list(scopeOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.get('/rwa/asset-schemas/templates', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'The asset schema templates: a bond, an equity share class, a fund unit, a real-estate interest', tags: TAGS, security: read, response: { 200: Type.Object({ data: Type.Array(Template) }), ...errors } },
  }, async () => ({ data: schemas.templates() }));

  app.get('/rwa/asset-schemas/:id', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'Read an asset schema: a version (default the draft, else the latest published) and the list of its versions',
      tags: TAGS, security: read, params: SchemaIdParam, querystring: Type.Object({ version: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })) }, { additionalProperties: false }),
      response: { 200: SchemaRead, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const head = await schemas.get(scope, req.params.id);
    const v = await schemas.version(scope, head.id, req.query.version !== undefined ? Number(req.query.version) : (head.draft_version ?? head.latest_published!));
    const all = await schemas.versions(scope, head.id);
    return { schema: assetSchemaView(head), version: schemaVersionView(v), versions: all.map((x) => ({ version: x.version, status: x.status, sha256: x.sha256, published_at: x.published_at })) };
  });

  const schemaChange = <B extends object>(path: string, summary: string, description: string, body: Parameters<typeof Type.Object>[0], run: (scope: ReturnType<typeof scopeOf>, actor: ReturnType<typeof actorOf>, id: string, b: B) => Promise<Parameters<typeof pair>[0]>) => {
    app.post(`/rwa/asset-schemas/:id/${path}`, {
      config: { permission: 'tokenization.manage' },
      schema: { summary, description: `${description} Idempotency-Key required. ${DOC}.`, tags: TAGS, security: change, params: SchemaIdParam, body: Type.Object(body, { additionalProperties: false }), response: { 200: SchemaWithVersion, ...errors } },
    }, async (req) => {
      const scope = scopeOf(req);
      const key = requiredIdempotencyKey(req, 'asset schema version');
      return idempotent.run(scope.workspace, `rwa_asset_schema_${path}:${req.params.id}`, key, req.body, async () => pair(await run(scope, actorOf(req), req.params.id, req.body as B)));
    });
  };

  schemaChange<{ name?: string; description?: string; json_schema?: Record<string, unknown>; template?: string }>('draft',
    'Write the asset schema\'s draft: create the schema, replace its open draft, or open its next version',
    'Exactly one of `json_schema` (JSON Schema draft 2020-12) and `template` (an id of GET /rwa/asset-schemas/templates). The document is compiled by ajv first: one it refuses, or over the limits, is 422 asset_schema_invalid and nothing is stored.',
    { name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })), description: Type.Optional(Type.String({ maxLength: 2000, [TEXT_KIND]: 'multiline' })), json_schema: Type.Optional(JsonSchemaDoc), template: Type.Optional(Type.String({ maxLength: 64 })) },
    (scope, actor, id, b) => schemas.draft(scope, actor, id, b));

  schemaChange<{ version?: number; expect_sha256?: string }>('publish',
    'Publish the asset schema\'s open draft; a published version never changes',
    '`version` and `expect_sha256`, when given, must be the draft\'s (409 conflict otherwise): publish what was reviewed. No open draft is 409 conflict.',
    { version: Type.Optional(Version), expect_sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })) },
    (scope, actor, id, b) => schemas.publish(scope, actor, id, b));

  schemaChange<{ version?: number; into?: string }>('fork',
    'Start a new draft from a published version: the next version of this schema, or version 1 of a new schema',
    '`version` default the latest published (a draft is 409 conflict); `into`: a new schema id (an existing one is 409 conflict); without it, the draft is this schema\'s next version (409 while a draft is open).',
    { version: Type.Optional(Version), into: Type.Optional(Type.String({ maxLength: 64 })) },
    (scope, actor, id, b) => schemas.fork(scope, actor, id, b));

  schemaChange<{ name?: string; description?: string; json_schema: Record<string, unknown> }>('upload-publish',
    'Upload a JSON Schema and publish it as the asset schema\'s next version at once',
    'Creates the schema when the id is new. Refused (409 conflict) while a draft is open. One ajv refuses is 422 asset_schema_invalid, nothing stored.',
    { name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })), description: Type.Optional(Type.String({ maxLength: 2000, [TEXT_KIND]: 'multiline' })), json_schema: JsonSchemaDoc },
    (scope, actor, id, b) => schemas.uploadPublish(scope, actor, id, b));

  app.post('/rwa/asset-schemas/:id/compile-preview', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'What a schema version compiles to: fields public on chain, committed on chain by hash only, off chain, and the token metadata they produce',
      description: `\`version\` default the draft, else the latest published; with \`values\`, a sample document, it is checked (\`problems\`) and its public values placed. Changes nothing. ${DOC}.`,
      tags: TAGS, security: change, params: SchemaIdParam,
      body: Type.Object({ version: Type.Optional(Version), values: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }, { additionalProperties: false }),
      response: { 200: Preview, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return schemas.compilePreview(scopeOf(req), req.params.id, req.body);
  });

  // ── Schema rebinds ─────────────────────────────────────────────────────────────────────────────────
  app.post('/rwa/schema-rebinds', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Propose moving a token\'s binding to a newer published version of its schema',
      description: `Then dry-run it, have the token's attesters attest it as the binding's policy requires, and commit it. An unbound token, or a draft version, is 409 conflict; another schema or an older version 422 validation_failed. Idempotency-Key required. ${DOC}.`,
      tags: TAGS, security: change,
      body: Type.Object({ token_id: Type.String({ maxLength: 64 }), schema_id: Type.Optional(Type.String({ maxLength: 64 })), version: Version }, { additionalProperties: false }),
      response: { 201: Rebind, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'schema rebind');
    const done = await idempotent.run(scope.workspace, 'rwa_schema_rebind', key, req.body, async () => ({ id: (await rebinds.create(scope, actorOf(req), req.body)).id }));
    return reply.code(201).send(rebindView(await rebinds.get(scope, done.id)));
  });

  app.get('/rwa/schema-rebinds/:id', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a schema rebind: its state, dry run and attestations', tags: TAGS, security: read, params: IdParam, response: { 200: Rebind, ...errors } },
  }, async (req) => rebindView(await rebinds.get(scopeOf(req), req.params.id)));

  app.post('/rwa/schema-rebinds/:id/dry-run', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Check every current field value of the token against the new version and list what differs',
      description: `A dry run that passes moves the rebind to attesting (or ready when the policy needs no attestation); one that fails to dry_run_failed. A dry run with another outcome than the last clears its attestations (they are over its hash). ${DOC}.`,
      tags: TAGS, security: change, params: IdParam, response: { 200: Rebind, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return rebindView(await rebinds.dryRun(scopeOf(req), req.params.id));
  });

  app.post('/rwa/schema-rebinds/:id/attest', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Add an attester\'s signature over the rebind and its dry run',
      description: `The attester (active, of the token) signs the rebind statement (Ed25519 over its text, or EIP-712). A bad signature is 422 attestation_signature_invalid; an attester that already attested 409 attestation_replayed; a removed one 403 attester_out_of_scope. ${DOC}.`,
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ attester_id: Type.String({ maxLength: 64 }), signature: Signature }, { additionalProperties: false }),
      response: { 200: Rebind, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return rebindView(await rebinds.attest(scopeOf(req), actorOf(req), req.params.id, req.body));
  });

  app.post('/rwa/schema-rebinds/:id/commit', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Commit a ready rebind: the binding moves and the fields take the new version\'s visibility, atomically',
      description: `The dry run is run again and must come out the same; the attestations of active attesters must meet the policy; the binding must still be at the rebind's from-version. Otherwise 409 conflict and nothing changes. ${DOC}.`,
      tags: TAGS, security: change, params: IdParam, response: { 200: Rebind, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return rebindView(await rebinds.commit(scopeOf(req), actorOf(req), req.params.id));
  });

  // ── Per token: schema binding, fields, attesters ───────────────────────────────────────────────────
  app.get('/rwa/tokens/:id/schema-binding', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'The published asset schema version the token is bound to', description: 'A token bound to none is 404 not_found.', tags: TAGS, security: read, params: IdParam, response: { 200: Binding, ...errors } },
  }, async (req) => bindingView(await fields.binding(scopeOf(req), req.params.id)));

  app.post('/rwa/tokens/:id/schema-binding', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Bind the token to a published asset schema version, with its rebind policy',
      description: `\`rebind_policy.attestations\`: how many distinct active attesters of the token must attest a later rebind (default 1; 0 to 20). A draft version, or a token already bound (move it with a schema rebind), is 409 conflict. Idempotency-Key required. ${DOC}.`,
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ schema_id: Type.String({ maxLength: 64 }), version: Version, rebind_policy: Type.Optional(Type.Object({ attestations: Type.Integer({ minimum: 0, maximum: 20 }) }, { additionalProperties: false })) }, { additionalProperties: false }),
      response: { 201: Binding, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'schema binding');
    const b = await idempotent.run(scope.workspace, `rwa_schema_binding:${req.params.id}`, key, req.body, async () => bindingView(await fields.bind(scope, actorOf(req), req.params.id, req.body)));
    return reply.code(201).send(b);
  });

  app.get('/rwa/tokens/:id/fields', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'The token\'s field values with their attestations, what its schema still requires, and the metadata they produce', tags: TAGS, security: read, params: IdParam, response: { 200: Fields, ...errors } },
  }, async (req) => fields.fields(scopeOf(req), req.params.id));

  app.post('/rwa/tokens/:id/fields/:fieldPath', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Set a field of the token (the issuer), validated against its bound schema version',
      description: `A field the bound version does not define, or a value that fails it (the document with it in place; a required field still unset is not a failure), is 422 field_value_invalid and nothing is stored; an unbound token 409 conflict. Idempotency-Key required. ${DOC}.`,
      tags: TAGS, security: change, params: FieldParams, body: Type.Object({ value: Type.Unknown() }, { additionalProperties: false }), response: { 200: Field, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'field value');
    return idempotent.run(scope.workspace, `rwa_field:${req.params.id}:${req.params.fieldPath}`, key, req.body, async () => fieldView(await fields.setField(scope, actorOf(req), req.params.id, req.params.fieldPath, req.body.value)));
  });

  app.post('/rwa/tokens/:id/fields/:fieldPath/attested-entry', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'An attester\'s signed entry for a field: verified against its registered key and kept with the signature',
      description: `The attester signs the field statement (token, chain id, contract, field, SHA-256 of the value's canonical JSON, schema id, version and SHA-256, attester id, nonce) with Ed25519 over its text or EIP-712. The nonce must be above the attester's last accepted one (409 attestation_replayed); a path outside its scope or a removed attester 403 attester_out_of_scope; a bad signature 422 attestation_signature_invalid; a value that fails the schema 422 field_value_invalid. Nothing changes on a refusal. Idempotency-Key required. ${DOC}.`,
      tags: TAGS, security: change, params: FieldParams,
      body: Type.Object({ attester_id: Type.String({ maxLength: 64 }), value: Type.Unknown(), nonce: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), signature: Signature }, { additionalProperties: false }),
      response: { 200: Field, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'attested entry');
    return idempotent.run(scope.workspace, `rwa_attested_entry:${req.params.id}:${req.params.fieldPath}`, key, req.body, async () => fieldView(await fields.attestedEntry(scope, actorOf(req), req.params.id, req.params.fieldPath, req.body)));
  });

  app.get('/rwa/tokens/:id/attesters', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'The token\'s attesters, oldest first, removed ones included', tags: TAGS, security: read, params: IdParam, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(Attester), ...errors } },
  }, async (req) => {
    const scope = scopeOf(req);
    await fields.token(scope, req.params.id);
    const limit = req.query.limit ?? DEFAULT_LIMIT;
    const list = `rwa_attesters:${req.params.id}`;
    const after = platform.cursors.decode(req.query.cursor, list, scope.workspace, {});
    const rows = await filteredWalk(platform.store, ATTESTERS, `${req.params.id}\x00`, after, limit, () => true);
    const page = pageOf(platform.cursors, rows, limit, list, scope.workspace, {});
    return { ...page, data: page.data.map(attesterView) };
  });

  app.post('/rwa/tokens/:id/attesters', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Register an attester on the token: its key and the field paths it may attest',
      description: `\`key\`: {scheme: ed25519, public_key} or {scheme: eip712, address}. \`fields\`: field paths, each covering itself and the paths below it, or \`*\`; on a bound token each must cover a field of the bound version (422 validation_failed). A key already active on the token is 409 conflict. Idempotency-Key required. ${DOC}.`,
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 120 }), key: Key, fields: Type.Array(Type.String({ maxLength: 1100 }), { minItems: 1, maxItems: 50 }) }, { additionalProperties: false }),
      response: { 201: Attester, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'attester');
    const a = await idempotent.run(scope.workspace, `rwa_attester:${req.params.id}`, key, req.body, async () => attesterView(await fields.addAttester(scope, actorOf(req), req.params.id, { ...req.body, key: req.body.key as AttesterKey })));
    return reply.code(201).send(a);
  });

  app.delete('/rwa/tokens/:id/attesters/:attesterId', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Remove an attester from the token: it attests nothing more; what it attested stays verifiable',
      description: `Removing a removed attester answers it unchanged. ${DOC}.`,
      tags: TAGS, security: change, params: AttesterParams, response: { 200: Attester, ...errors },
    },
  }, async (req) => attesterView(await fields.removeAttester(scopeOf(req), actorOf(req), req.params.id, req.params.attesterId)));
};
