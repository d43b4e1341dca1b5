// Asset schemas (docs/platform/rwa.md "Asset schemas"): per workspace, named by the caller's slug, each a
// line of versions of which at most one, the highest, is a draft. A draft changes (`draft` replaces it);
// `publish` freezes it, and a published version is never written again; `fork` starts a new draft from a
// published version, in the same schema or as a new one; `upload-publish` publishes a document as the next
// version at once. Every document is compiled first (api/rwa/schema/asset-schema-compiler.ts), so a schema
// ajv refuses is never stored.
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { pageOf, type CursorCodec, type PageResult } from '../../store/pagination.ts';
import type { Actor, AuditLog } from '../../tenancy/audit-log.ts';
import type { Scope } from '../../tenancy/scope.ts';
import { filteredWalk } from '../../account-holders/filtered-walk.ts';
import { compileAssetSchema, documentProblems, getPath, type CompiledSchema } from './asset-schema-compiler.ts';
import { ASSET_SCHEMA_TEMPLATES, templateOf } from './asset-schema-templates.ts';
import { ASSET_SCHEMAS, SCHEMA_VERSIONS } from './collections.ts';
import type { AssetSchemaRecord, SchemaVersionRecord } from './records.ts';
import { fieldCommitmentForm } from './token-metadata.ts';

/** An asset schema's id: a slug of 3 to 64 characters, lower-case letters, digits and dashes. */
export const SCHEMA_ID = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
/** How many versions one schema may have. */
export const MAX_VERSIONS = 1000;

export interface AssetSchemaServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  clock: () => number;
}

export interface DraftInput { name?: string | undefined; description?: string | undefined; json_schema?: Record<string, unknown> | undefined; template?: string | undefined }
export interface UploadInput { name?: string | undefined; description?: string | undefined; json_schema: Record<string, unknown> }

const keyOf = (workspace: string, id: string) => `${workspace}\x00${id}`;
const versionKey = (workspace: string, id: string, version: number) => `${workspace}\x00${id}\x00${String(version).padStart(6, '0')}`;
const indexOf = (r: AssetSchemaRecord) => [`${r.workspace}\x00all\x00${r.id}`];

export function assetSchemaView(r: AssetSchemaRecord) {
  return {
    id: r.id, name: r.name, description: r.description, versions: r.versions, draft_version: r.draft_version, latest_published: r.latest_published,
    origin: r.origin, created_at: r.created_at, updated_at: r.updated_at,
  };
}

export function schemaVersionView(v: SchemaVersionRecord) {
  return {
    schema_id: v.schema_id, version: v.version, status: v.status, sha256: v.sha256, json_schema: v.json_schema, fields: v.fields, forked_from: v.forked_from,
    created_at: v.created_at, updated_at: v.updated_at, published_at: v.published_at,
  };
}

export class AssetSchemaService {
  constructor(private readonly o: AssetSchemaServiceOptions) {}

  private iso(): string {
    return new Date(this.o.clock()).toISOString();
  }

  private lock<T>(scope: Scope, id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`rwa:asset-schema:${scope.workspace}:${id}`, fn);
  }

  private async head(scope: Scope, id: string): Promise<AssetSchemaRecord | undefined> {
    if (!SCHEMA_ID.test(id)) return undefined;
    const r = await ASSET_SCHEMAS.in(this.o.store).get(keyOf(scope.workspace, id));
    return r && r.tenant === scope.tenant ? r : undefined;
  }

  async get(scope: Scope, id: string): Promise<AssetSchemaRecord> {
    const r = await this.head(scope, id);
    if (!r) throw new CustodyError('not_found', `no asset schema ${id}`);
    return r;
  }

  async version(scope: Scope, id: string, version: number): Promise<SchemaVersionRecord> {
    const r = await this.get(scope, id);
    const v = version >= 1 && version <= r.versions ? await SCHEMA_VERSIONS.in(this.o.store).get(versionKey(scope.workspace, id, version)) : undefined;
    if (!v) throw new CustodyError('not_found', `asset schema ${id} has no version ${version}`);
    return v;
  }

  /** A published version, compiled: what a token binds to. */
  async published(scope: Scope, id: string, version: number): Promise<{ record: SchemaVersionRecord; compiled: CompiledSchema }> {
    const v = await this.version(scope, id, version);
    if (v.status !== 'published') throw new CustodyError('conflict', `version ${version} of asset schema ${id} is a draft; publish it first`);
    return { record: v, compiled: compileAssetSchema(v.json_schema) };
  }

  async versions(scope: Scope, id: string): Promise<SchemaVersionRecord[]> {
    return SCHEMA_VERSIONS.in(this.o.store).byIndex(`${scope.workspace}\x00${id}\x00`, MAX_VERSIONS);
  }

  async list(scope: Scope, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<typeof assetSchemaView>>> {
    const after = this.o.cursors.decode(cursor, 'asset_schemas', scope.workspace, {});
    const rows = await filteredWalk(this.o.store, ASSET_SCHEMAS, `${scope.workspace}\x00all\x00`, after, limit, (r) => r.tenant === scope.tenant);
    const page = pageOf(this.o.cursors, rows, limit, 'asset_schemas', scope.workspace, {});
    return { ...page, data: page.data.map(assetSchemaView) };
  }

  templates() {
    return ASSET_SCHEMA_TEMPLATES.map((t) => ({ ...t, fields: compileAssetSchema(t.json_schema).fields }));
  }

  private putOps(scope: Scope, actor: Actor, action: string, before: AssetSchemaRecord | undefined, head: AssetSchemaRecord, version: SchemaVersionRecord) {
    return [
      ASSET_SCHEMAS.putOp(keyOf(scope.workspace, head.id), head, { index: indexOf(head) }),
      SCHEMA_VERSIONS.putOp(versionKey(scope.workspace, head.id, version.version), version, { index: [`${scope.workspace}\x00${head.id}\x00${String(version.version).padStart(6, '0')}`] }),
      this.o.audit.op(scope, actor, `rwa.asset_schema.${action}`, head.id, before ? assetSchemaView(before) : null, { ...assetSchemaView(head), version: version.version, status: version.status, sha256: version.sha256 }),
    ];
  }

  private newVersion(scope: Scope, id: string, version: number, status: 'draft' | 'published', doc: Record<string, unknown>, compiled: CompiledSchema, forkedFrom: SchemaVersionRecord['forked_from'], now: string): SchemaVersionRecord {
    return {
      v: 1, schema_id: id, tenant: scope.tenant, workspace: scope.workspace, version, status, json_schema: doc, sha256: compiled.sha256, fields: compiled.fields,
      forked_from: forkedFrom, created_at: now, updated_at: now, published_at: status === 'published' ? now : null,
    };
  }

  private newHead(scope: Scope, id: string, name: string, description: string | null, origin: AssetSchemaRecord['origin'], now: string): AssetSchemaRecord {
    return { v: 1, id, tenant: scope.tenant, workspace: scope.workspace, name, description, versions: 0, draft_version: null, latest_published: null, origin, created_at: now, updated_at: now };
  }

  private checkId(id: string): void {
    if (!SCHEMA_ID.test(id)) throw new CustodyError('validation_failed', `id: ${JSON.stringify(id)} is not a schema id (3 to 64 lower-case letters, digits and dashes, starting with a letter)`);
    // GET /rwa/asset-schemas/templates is the templates' list, so no schema may be called that.
    if (id === 'templates') throw new CustodyError('validation_failed', 'id: "templates" is reserved');
  }

  /** Writes the schema's draft: creates the schema (version 1), replaces the open draft, or opens the next version. */
  async draft(scope: Scope, actor: Actor, id: string, input: DraftInput): Promise<{ head: AssetSchemaRecord; version: SchemaVersionRecord }> {
    this.checkId(id);
    if ((input.json_schema === undefined) === (input.template === undefined)) throw new CustodyError('validation_failed', 'give exactly one of json_schema and template');
    const template = input.template !== undefined ? templateOf(input.template) : undefined;
    if (input.template !== undefined && !template) throw new CustodyError('validation_failed', `template: no template ${input.template} (GET /rwa/asset-schemas/templates)`);
    const doc = template ? structuredClone(template.json_schema) : input.json_schema!;
    const compiled = compileAssetSchema(doc);
    return this.lock(scope, id, async () => {
      const before = await this.head(scope, id);
      const now = this.iso();
      const head0 = before ?? this.newHead(scope, id, input.name ?? template?.name ?? id, input.description ?? null, template ? { template: template.id } : null, now);
      const number = head0.draft_version ?? head0.versions + 1;
      if (number > MAX_VERSIONS) throw new CustodyError('conflict', `asset schema ${id} has ${MAX_VERSIONS} versions`);
      const prior = head0.draft_version ? await SCHEMA_VERSIONS.in(this.o.store).get(versionKey(scope.workspace, id, number)) : undefined;
      const version: SchemaVersionRecord = prior
        ? { ...prior, json_schema: doc, sha256: compiled.sha256, fields: compiled.fields, updated_at: now }
        : this.newVersion(scope, id, number, 'draft', doc, compiled, null, now);
      const head: AssetSchemaRecord = {
        ...head0, name: input.name ?? head0.name, description: input.description !== undefined ? input.description : head0.description,
        versions: Math.max(head0.versions, number), draft_version: number, updated_at: now,
      };
      await this.o.store.batch(this.putOps(scope, actor, 'draft', before, head, version));
      return { head, version };
    });
  }

  /** Freezes the open draft. `expect_sha256`, when given, must be the draft's: the caller publishes what it read. */
  async publish(scope: Scope, actor: Actor, id: string, input: { version?: number | undefined; expect_sha256?: string | undefined }): Promise<{ head: AssetSchemaRecord; version: SchemaVersionRecord }> {
    await this.get(scope, id);
    return this.lock(scope, id, async () => {
      const before = await this.get(scope, id);
      if (before.draft_version === null) throw new CustodyError('conflict', `asset schema ${id} has no draft to publish`);
      if (input.version !== undefined && input.version !== before.draft_version) throw new CustodyError('conflict', `the draft of asset schema ${id} is version ${before.draft_version}, not ${input.version}`);
      const draft = (await SCHEMA_VERSIONS.in(this.o.store).get(versionKey(scope.workspace, id, before.draft_version)))!;
      if (input.expect_sha256 !== undefined && input.expect_sha256 !== draft.sha256) throw new CustodyError('conflict', `the draft changed: its sha256 is ${draft.sha256}`);
      compileAssetSchema(draft.json_schema);
      const now = this.iso();
      const version: SchemaVersionRecord = { ...draft, status: 'published', published_at: now, updated_at: now };
      const head: AssetSchemaRecord = { ...before, draft_version: null, latest_published: draft.version, updated_at: now };
      await this.o.store.batch(this.putOps(scope, actor, 'publish', before, head, version));
      return { head, version };
    });
  }

  /** A new draft from a published version: the next version of this schema, or version 1 of a new schema `into`. */
  async fork(scope: Scope, actor: Actor, id: string, input: { version?: number | undefined; into?: string | undefined }): Promise<{ head: AssetSchemaRecord; version: SchemaVersionRecord }> {
    const src = await this.get(scope, id);
    const n = input.version ?? src.latest_published;
    if (n === null) throw new CustodyError('conflict', `asset schema ${id} has no published version to fork`);
    const from = await this.version(scope, id, n);
    if (from.status !== 'published') throw new CustodyError('conflict', `version ${n} of asset schema ${id} is a draft: a fork starts from a published version`);
    const compiled = compileAssetSchema(from.json_schema);
    const target = input.into ?? id;
    this.checkId(target);
    return this.lock(scope, target, async () => {
      const before = await this.head(scope, target);
      const now = this.iso();
      if (input.into !== undefined && before) throw new CustodyError('conflict', `asset schema ${target} exists; fork into a new id, or draft it`);
      if (before && before.draft_version !== null) throw new CustodyError('conflict', `asset schema ${target} has an open draft (version ${before.draft_version}); publish or replace it`);
      const head0 = before ?? this.newHead(scope, target, src.name, src.description, { schema_id: id, version: n }, now);
      const number = head0.versions + 1;
      if (number > MAX_VERSIONS) throw new CustodyError('conflict', `asset schema ${target} has ${MAX_VERSIONS} versions`);
      const version = this.newVersion(scope, target, number, 'draft', structuredClone(from.json_schema), compiled, { schema_id: id, version: n }, now);
      const head: AssetSchemaRecord = { ...head0, versions: number, draft_version: number, updated_at: now };
      await this.o.store.batch(this.putOps(scope, actor, 'fork', before, head, version));
      return { head, version };
    });
  }

  /** Publishes a document as the schema's next version at once (creating the schema); refused while a draft is open. */
  async uploadPublish(scope: Scope, actor: Actor, id: string, input: UploadInput): Promise<{ head: AssetSchemaRecord; version: SchemaVersionRecord }> {
    this.checkId(id);
    const compiled = compileAssetSchema(input.json_schema);
    return this.lock(scope, id, async () => {
      const before = await this.head(scope, id);
      if (before && before.draft_version !== null) throw new CustodyError('conflict', `asset schema ${id} has an open draft (version ${before.draft_version}); publish it or draft over it`);
      const now = this.iso();
      const head0 = before ?? this.newHead(scope, id, input.name ?? id, input.description ?? null, null, now);
      const number = head0.versions + 1;
      if (number > MAX_VERSIONS) throw new CustodyError('conflict', `asset schema ${id} has ${MAX_VERSIONS} versions`);
      const version = this.newVersion(scope, id, number, 'published', input.json_schema, compiled, null, now);
      const head: AssetSchemaRecord = {
        ...head0, name: input.name ?? head0.name, description: input.description !== undefined ? input.description : head0.description,
        versions: number, latest_published: number, updated_at: now,
      };
      await this.o.store.batch(this.putOps(scope, actor, 'upload_publish', before, head, version));
      return { head, version };
    });
  }

  /**
   * What a version compiles to: its fields by where their values go (public on chain, committed on chain by
   * hash only, off chain) and the token metadata they produce; with `values`, those values checked and placed.
   */
  async compilePreview(scope: Scope, id: string, input: { version?: number | undefined; values?: Record<string, unknown> | undefined }) {
    const head = await this.get(scope, id);
    const n = input.version ?? head.draft_version ?? head.latest_published!;
    const v = await this.version(scope, id, n);
    const compiled = compileAssetSchema(v.json_schema);
    const values = input.values;
    const problems = values ? documentProblems(compiled, values) : [];
    const byVis = (vis: string) => compiled.fields.filter((f) => f.visibility === vis).map((f) => f.path);
    const attributes = compiled.fields.filter((f) => f.visibility === 'public').map((f) => {
      const given = values ? getPath(values, f.path) : undefined;
      return { trait_type: f.path, value: given !== undefined ? given : `<${Array.isArray(f.type) ? f.type.join('|') : f.type ?? 'value'}>` };
    });
    const commitments = Object.fromEntries(compiled.fields.filter((f) => f.visibility === 'committed').map((f) => [f.path, fieldCommitmentForm(f.path)]));
    return {
      schema_id: id, version: v.version, status: v.status, sha256: v.sha256, fields: compiled.fields,
      on_chain: { public: byVis('public'), committed: byVis('committed') }, off_chain: byVis('private'),
      token_metadata: { attributes, properties: { asset_schema: { id, version: v.version, sha256: v.sha256 }, commitments } },
      values_valid: values ? problems.length === 0 : null, problems,
    };
  }
}
