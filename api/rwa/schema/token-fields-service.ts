// A token's schema binding, fields and attesters (docs/platform/rwa.md "Schema binding", "Fields",
// "Attesters", "Attested entries"). A token is bound to one published schema version; every field value is
// checked against it before anything is stored; an attester, registered on the token with the field paths
// it may attest, signs an attested entry with its own key, which is verified and kept with its signature.
// Every change appends to the token's log (api/rwa/seams.ts) first, under the token's lock, and is then
// stored in one batch with the log index it landed at; a refusal appends and stores nothing.
import type { FieldValue } from '../documents/token-fields-reader.ts';
import { randomBytes } from 'node:crypto';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../../store/record-repository.ts';
import { newId } from '../../store/ids.ts';
import type { Actor, AuditLog } from '../../tenancy/audit-log.ts';
import type { Scope } from '../../tenancy/scope.ts';
import type { TokenService } from '../../tokenization/token-service.ts';
import type { TokenRecord } from '../../tokenization/records.ts';
import type { TokenLog } from '../seams.ts';
import { canonicalJson, valueSha256 } from './canonical-json.ts';
import { documentOf, documentProblems, FIELD_PATH, missingRequired, withPath, type CompiledSchema } from './asset-schema-compiler.ts';
import type { AssetSchemaService } from './asset-schema-service.ts';
import { ATTESTERS, FIELDS, SCHEMA_BINDINGS } from './collections.ts';
import type { AttesterRecord, FieldRecord, KeptAttestation, RebindPolicy, SchemaBindingRecord } from './records.ts';
import { keyProblem, verifyStatement, type AttesterKey, type FieldStatement } from './attestation.ts';
import { fieldCommitment, fieldsMetadata } from './token-metadata.ts';

/** Canonical JSON bytes one field value may take. */
export const MAX_VALUE_BYTES = 16 * 1024;
/** Active attesters one token may have. */
export const MAX_ATTESTERS = 20;
export const ATTESTER_ID = /^att_[0-9a-f]{26}$/;

export interface TokenFieldsServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  clock: () => number;
  tokens: TokenService;
  schemas: AssetSchemaService;
  log: TokenLog;
}

export interface AttesterInput { name: string; key: AttesterKey; fields: string[] }
export interface AttestedEntryInput { attester_id: string; value: unknown; nonce: number; signature: string }

const fieldKey = (tokenId: string, path: string) => `${tokenId}\x00${path}`;
const fieldIndex = (r: FieldRecord) => [`${r.token_id}\x00${r.path}`];
const attesterIndex = (r: AttesterRecord) => [`${r.token_id}\x00${r.id}`];

/** Whether an attester's scope covers a field path: an entry covers itself and every path below it; `*` all. */
export function scopeCovers(scopes: string[], path: string): boolean {
  return scopes.some((s) => s === '*' || s === path || path.startsWith(`${s}.`));
}

export function bindingView(b: SchemaBindingRecord) {
  return { token_id: b.token_id, schema_id: b.schema_id, version: b.version, sha256: b.sha256, rebind_policy: b.rebind_policy, rebind_id: b.rebind_id, bound_at: b.bound_at, log_index: b.log_index };
}

export function fieldView(f: FieldRecord) {
  return {
    path: f.path, value: f.value, value_sha256: f.value_sha256, visibility: f.visibility, commitment: f.commitment, salt: f.salt, schema_id: f.schema_id, schema_version: f.schema_version,
    sequence: f.sequence, source: f.source, attestations: f.attestations.map((a) => ({ attester_id: a.attester_id, statement: a.statement, key: a.key, signature: a.signature, at: a.at, log_index: a.log_index })),
    set_at: f.set_at, log_index: f.log_index,
  };
}

export function attesterView(a: AttesterRecord) {
  return { id: a.id, token_id: a.token_id, name: a.name, key: a.key, fields: a.fields, status: a.status, last_nonce: a.last_nonce, created_at: a.created_at, removed_at: a.removed_at };
}

function normalKey(k: AttesterKey): AttesterKey {
  return k.scheme === 'ed25519' ? { scheme: 'ed25519', public_key: k.public_key.toLowerCase() } : { scheme: 'eip712', address: k.address.toLowerCase() };
}

export class TokenFieldsService {
  constructor(private readonly o: TokenFieldsServiceOptions) {}

  iso(): string {
    return new Date(this.o.clock()).toISOString();
  }

  /** The token's lock: every change to its binding, fields, attesters and rebinds runs under it, so log order is state order. */
  lock<T>(tokenId: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`rwa:token-fields:${tokenId}`, fn);
  }

  token(scope: Scope, id: string): Promise<TokenRecord> {
    return this.o.tokens.get(scope, id);
  }

  async bindingOf(tokenId: string): Promise<SchemaBindingRecord | undefined> {
    return SCHEMA_BINDINGS.in(this.o.store).get(tokenId);
  }

  async binding(scope: Scope, tokenId: string): Promise<SchemaBindingRecord> {
    await this.token(scope, tokenId);
    const b = await this.bindingOf(tokenId);
    if (!b) throw new CustodyError('not_found', `token ${tokenId} is bound to no asset schema`);
    return b;
  }

  /** The bound version, compiled; 409 when the token is bound to none. */
  async bound(scope: Scope, tokenId: string): Promise<{ binding: SchemaBindingRecord; compiled: CompiledSchema }> {
    const b = await this.bindingOf(tokenId);
    if (!b) throw new CustodyError('conflict', `token ${tokenId} is bound to no asset schema: bind one first (POST /rwa/tokens/{id}/schema-binding)`);
    const { compiled } = await this.o.schemas.published(scope, b.schema_id, b.version);
    return { binding: b, compiled };
  }

  async fieldRecords(tokenId: string): Promise<FieldRecord[]> {
    return FIELDS.in(this.o.store).byIndex(`${tokenId}\x00`, 10_000);
  }

  async attesterRecords(tokenId: string): Promise<AttesterRecord[]> {
    return ATTESTERS.in(this.o.store).byIndex(`${tokenId}\x00`, 10_000);
  }

  /** The token's first binding; a bound token moves only through a schema rebind. */
  async bind(scope: Scope, actor: Actor, tokenId: string, input: { schema_id: string; version: number; rebind_policy?: RebindPolicy | undefined }): Promise<SchemaBindingRecord> {
    await this.token(scope, tokenId);
    const { record } = await this.o.schemas.published(scope, input.schema_id, input.version);
    const policy = input.rebind_policy ?? { attestations: 1 };
    if (!Number.isSafeInteger(policy.attestations) || policy.attestations < 0 || policy.attestations > MAX_ATTESTERS) throw new CustodyError('validation_failed', `rebind_policy.attestations: 0 to ${MAX_ATTESTERS}`);
    return this.lock(tokenId, async () => {
      const prior = await this.bindingOf(tokenId);
      if (prior) throw new CustodyError('conflict', `token ${tokenId} is bound to ${prior.schema_id} version ${prior.version}; move it with a schema rebind (POST /rwa/schema-rebinds)`);
      const now = this.iso();
      const body = { action: 'bind', token_id: tokenId, schema_id: record.schema_id, version: record.version, sha256: record.sha256, rebind_policy: policy, actor: actor.id };
      const at = await this.o.log.append(scope, tokenId, { kind: 'schema_binding', body });
      const b: SchemaBindingRecord = {
        v: 1, token_id: tokenId, tenant: scope.tenant, workspace: scope.workspace, schema_id: record.schema_id, version: record.version, sha256: record.sha256,
        rebind_policy: policy, rebind_id: null, bound_at: now, log_index: at.index,
      };
      await this.o.store.batch([SCHEMA_BINDINGS.putOp(tokenId, b), this.o.audit.op(scope, actor, 'rwa.schema_binding.bind', tokenId, null, bindingView(b))]);
      return b;
    });
  }

  /** The token's fields, what its schema still requires, and the metadata they produce. */
  async fields(scope: Scope, tokenId: string) {
    await this.token(scope, tokenId);
    const b = await this.bindingOf(tokenId);
    const fields = await this.fieldRecords(tokenId);
    if (!b) return { token_id: tokenId, schema: null, fields: fields.map(fieldView), missing_required: [], token_metadata: null };
    const { compiled } = await this.o.schemas.published(scope, b.schema_id, b.version);
    const schema = { id: b.schema_id, version: b.version, sha256: b.sha256 };
    return { token_id: tokenId, schema, fields: fields.map(fieldView), missing_required: missingRequired(compiled, documentOf(fields)), token_metadata: fieldsMetadata(schema, fields) };
  }

  /**
   * The token's current public field values by path (the metadata's `TokenFieldsReader`): committed and
   * private fields are left out; a token of another workspace is `404`.
   */
  async publicFields(scope: Scope, tokenId: string): Promise<Record<string, FieldValue>> {
    await this.token(scope, tokenId);
    const out: Record<string, FieldValue> = {};
    for (const f of await this.fieldRecords(tokenId)) if (f.visibility === 'public') out[f.path] = f.value as FieldValue;
    return out;
  }

  /**
   * Checks a value for a field of the bound version: a field the schema defines, within the size limit, and
   * the token's document with it in place failing nothing (a required field still missing is not a failure).
   */
  private checkValue(compiled: CompiledSchema, fields: FieldRecord[], path: string, value: unknown) {
    if (!FIELD_PATH.test(path)) throw new CustodyError('validation_failed', `fieldPath: ${JSON.stringify(path)} is not a field path (property names joined by dots)`);
    const spec = compiled.fields.find((f) => f.path === path);
    if (!spec) throw new CustodyError('field_value_invalid', `${path}: the bound schema defines no such field (fields: ${compiled.fields.map((f) => f.path).join(', ')})`);
    let text: string;
    try {
      text = canonicalJson(value);
    } catch (err) {
      throw new CustodyError('field_value_invalid', `${path}: ${(err as Error).message}`);
    }
    if (Buffer.byteLength(text) > MAX_VALUE_BYTES) throw new CustodyError('field_value_invalid', `${path}: larger than ${MAX_VALUE_BYTES} bytes`);
    const doc = withPath(documentOf(fields.filter((f) => f.path !== path)), path, value);
    const problems = documentProblems(compiled, doc);
    if (problems.length) throw new CustodyError('field_value_invalid', problems.map((p) => `${p.path || '(root)'}: ${p.message}`).join('; '));
    return spec;
  }

  private newField(prior: FieldRecord | undefined, tokenId: string, binding: SchemaBindingRecord, path: string, value: unknown, visibility: FieldRecord['visibility'], source: FieldRecord['source'], now: string): FieldRecord {
    const salt = visibility === 'committed' ? randomBytes(32).toString('hex') : null;
    return {
      v: 1, token_id: tokenId, path, value, value_sha256: valueSha256(value), visibility, salt, commitment: salt ? fieldCommitment(path, salt, value) : null,
      schema_id: binding.schema_id, schema_version: binding.version, sequence: (prior?.sequence ?? 0) + 1, source, attestations: [], set_at: now, log_index: -1,
    };
  }

  /** The log body of a field value: its hash always, the value itself only when it is public, its commitment when committed. */
  private valueBody(f: FieldRecord) {
    return { value_sha256: f.value_sha256, ...(f.visibility === 'public' ? { value: f.value } : {}), ...(f.commitment ? { commitment: f.commitment } : {}), visibility: f.visibility };
  }

  /** The issuer sets a field. */
  async setField(scope: Scope, actor: Actor, tokenId: string, path: string, value: unknown): Promise<FieldRecord> {
    await this.token(scope, tokenId);
    return this.lock(tokenId, async () => {
      const { binding, compiled } = await this.bound(scope, tokenId);
      const fields = await this.fieldRecords(tokenId);
      const spec = this.checkValue(compiled, fields, path, value);
      const prior = fields.find((f) => f.path === path);
      const now = this.iso();
      const f = this.newField(prior, tokenId, binding, path, value, spec.visibility, { type: 'issuer', actor: actor.id }, now);
      const at = await this.o.log.append(scope, tokenId, {
        kind: 'field',
        body: { token_id: tokenId, field: path, ...this.valueBody(f), schema_id: binding.schema_id, schema_version: binding.version, schema_sha256: binding.sha256, sequence: f.sequence, source: f.source },
      });
      const stored = { ...f, log_index: at.index };
      await this.o.store.batch([FIELDS.putOp(fieldKey(tokenId, path), stored, { index: fieldIndex(stored) })]);
      return stored;
    });
  }

  /** An attester's signed entry for a field: verified, then kept with its signature; a new value replaces the field's. */
  async attestedEntry(scope: Scope, actor: Actor, tokenId: string, path: string, input: AttestedEntryInput): Promise<FieldRecord> {
    const token = await this.token(scope, tokenId);
    return this.lock(tokenId, async () => {
      const { binding, compiled } = await this.bound(scope, tokenId);
      const attester = ATTESTER_ID.test(input.attester_id) ? await ATTESTERS.in(this.o.store).get(input.attester_id) : undefined;
      if (!attester || attester.token_id !== tokenId) throw new CustodyError('not_found', `token ${tokenId} has no attester ${input.attester_id}`);
      if (attester.status !== 'active') throw new CustodyError('attester_out_of_scope', `attester ${attester.id} was removed from token ${tokenId}`);
      if (!scopeCovers(attester.fields, path)) throw new CustodyError('attester_out_of_scope', `attester ${attester.id} may attest ${attester.fields.join(', ')}, not ${path}`);
      const fields = await this.fieldRecords(tokenId);
      const spec = this.checkValue(compiled, fields, path, input.value);
      if (!Number.isSafeInteger(input.nonce) || input.nonce < 1) throw new CustodyError('validation_failed', 'nonce: a positive integer');
      if (input.nonce <= attester.last_nonce) throw new CustodyError('attestation_replayed', `nonce ${input.nonce} is not above attester ${attester.id}'s last accepted nonce ${attester.last_nonce}`);
      const statement: FieldStatement = {
        token_id: tokenId, chain_id: token.chain_id, contract: token.address, field: path, value_sha256: valueSha256(input.value), schema_id: binding.schema_id,
        schema_version: binding.version, schema_sha256: binding.sha256, attester_id: attester.id, nonce: input.nonce,
      };
      if (!(await verifyStatement({ kind: 'field', statement }, attester.key, input.signature))) {
        throw new CustodyError('attestation_signature_invalid', `the ${attester.key.scheme} signature does not verify for attester ${attester.id} over the statement of ${path} at nonce ${input.nonce}`);
      }
      const prior = fields.find((f) => f.path === path);
      const now = this.iso();
      const same = prior !== undefined && prior.value_sha256 === statement.value_sha256;
      const base = same ? prior : this.newField(prior, tokenId, binding, path, input.value, spec.visibility, { type: 'attester', attester_id: attester.id }, now);
      const at = await this.o.log.append(scope, tokenId, {
        kind: 'attestation',
        body: { subject: 'field', statement, key: attester.key, signature: input.signature, ...this.valueBody(base), sequence: base.sequence, value_changed: !same, actor: actor.id },
      });
      const kept: KeptAttestation = { attester_id: attester.id, statement, key: attester.key, signature: input.signature, at: now, log_index: at.index };
      const f: FieldRecord = { ...base, attestations: [...base.attestations, kept], log_index: same ? base.log_index : at.index };
      const a: AttesterRecord = { ...attester, last_nonce: input.nonce };
      await this.o.store.batch([FIELDS.putOp(fieldKey(tokenId, path), f, { index: fieldIndex(f) }), ATTESTERS.putOp(a.id, a, { index: attesterIndex(a) })]);
      return f;
    });
  }

  async attesters(scope: Scope, tokenId: string): Promise<AttesterRecord[]> {
    await this.token(scope, tokenId);
    return this.attesterRecords(tokenId);
  }

  async addAttester(scope: Scope, actor: Actor, tokenId: string, input: AttesterInput): Promise<AttesterRecord> {
    await this.token(scope, tokenId);
    const bad = keyProblem(input.key);
    if (bad) throw new CustodyError('validation_failed', `key.${bad}`);
    const key = normalKey(input.key);
    const scopes = [...new Set(input.fields)];
    for (const s of scopes) if (s !== '*' && !FIELD_PATH.test(s)) throw new CustodyError('validation_failed', `fields: ${JSON.stringify(s)} is neither a field path nor *`);
    return this.lock(tokenId, async () => {
      const b = await this.bindingOf(tokenId);
      if (b) {
        // Bound: each scope entry must name fields of the bound version, so a typo is not a silent no-op.
        const { compiled } = await this.o.schemas.published(scope, b.schema_id, b.version);
        for (const s of scopes) if (!compiled.fields.some((f) => scopeCovers([s], f.path))) throw new CustodyError('validation_failed', `fields: ${s} covers no field of ${b.schema_id} version ${b.version}`);
      }
      const active = (await this.attesterRecords(tokenId)).filter((a) => a.status === 'active');
      if (active.length >= MAX_ATTESTERS) throw new CustodyError('conflict', `token ${tokenId} has ${MAX_ATTESTERS} attesters`);
      if (active.some((a) => canonicalJson(a.key) === canonicalJson(key))) throw new CustodyError('conflict', 'an active attester of this token has this key');
      const now = this.iso();
      const id = newId('att', this.o.clock());
      const at = await this.o.log.append(scope, tokenId, { kind: 'attester', body: { action: 'add', token_id: tokenId, attester_id: id, name: input.name, key, fields: scopes, actor: actor.id } });
      const a: AttesterRecord = { v: 1, id, token_id: tokenId, tenant: scope.tenant, workspace: scope.workspace, name: input.name, key, fields: scopes, status: 'active', last_nonce: 0, created_at: now, removed_at: null };
      await this.o.store.batch([ATTESTERS.putOp(id, a, { index: attesterIndex(a) }), this.o.audit.op(scope, actor, 'rwa.attester.add', id, null, { ...attesterView(a), log_index: at.index })]);
      return a;
    });
  }

  /** Removes an attester: it attests nothing more; its past attestations stay, verifiable. Removing it again changes nothing. */
  async removeAttester(scope: Scope, actor: Actor, tokenId: string, attesterId: string): Promise<AttesterRecord> {
    await this.token(scope, tokenId);
    return this.lock(tokenId, async () => {
      const a0 = ATTESTER_ID.test(attesterId) ? await ATTESTERS.in(this.o.store).get(attesterId) : undefined;
      if (!a0 || a0.token_id !== tokenId) throw new CustodyError('not_found', `token ${tokenId} has no attester ${attesterId}`);
      if (a0.status === 'removed') return a0;
      const now = this.iso();
      const at = await this.o.log.append(scope, tokenId, { kind: 'attester', body: { action: 'remove', token_id: tokenId, attester_id: a0.id, actor: actor.id } });
      const a: AttesterRecord = { ...a0, status: 'removed', removed_at: now };
      await this.o.store.batch([ATTESTERS.putOp(a.id, a, { index: attesterIndex(a) }), this.o.audit.op(scope, actor, 'rwa.attester.remove', a.id, attesterView(a0), { ...attesterView(a), log_index: at.index })]);
      return a;
    });
  }

  /** Store ops that move the binding and re-place each field under the new version's visibility (a rebind's commit). */
  rebindOps(next: SchemaBindingRecord, compiled: CompiledSchema, fields: FieldRecord[]): Op[] {
    const ops: Op[] = [SCHEMA_BINDINGS.putOp(next.token_id, next)];
    for (const f of fields) {
      const vis = compiled.fields.find((s) => s.path === f.path)?.visibility ?? f.visibility;
      if (vis === f.visibility) continue;
      const salt = vis === 'committed' ? randomBytes(32).toString('hex') : null;
      const moved: FieldRecord = { ...f, visibility: vis, salt, commitment: salt ? fieldCommitment(f.path, salt, f.value) : null };
      ops.push(FIELDS.putOp(fieldKey(f.token_id, f.path), moved, { index: fieldIndex(moved) }));
    }
    return ops;
  }
}
