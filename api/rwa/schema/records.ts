// The records of asset schemas, schema bindings, fields, attesters and schema rebinds as stored
// (docs/platform/rwa.md "Asset schemas" to "Schema rebinds"). Types only: collections and services import these.
import type { FieldSpec, Visibility } from './asset-schema-compiler.ts';
import type { AttesterKey, FieldStatement, RebindStatement } from './attestation.ts';

/** An asset schema of a workspace: its versions are `SchemaVersionRecord`s. Key `<workspace> NUL <id>`. */
export interface AssetSchemaRecord {
  v: 1;
  /** The caller's slug, unique in the workspace. */
  id: string;
  tenant: string;
  workspace: string;
  name: string;
  description: string | null;
  /** How many versions exist (1..versions). */
  versions: number;
  /** The one open draft, if any: always the highest version. */
  draft_version: number | null;
  latest_published: number | null;
  /** Where version 1 came from: a template, or a published version of another schema (a fork). */
  origin: { template: string } | { schema_id: string; version: number } | null;
  created_at: string;
  updated_at: string;
}

/** One version: a draft changes, a published version never does. Key `<workspace> NUL <id> NUL <version, 6 digits>`. */
export interface SchemaVersionRecord {
  v: 1;
  schema_id: string;
  tenant: string;
  workspace: string;
  version: number;
  status: 'draft' | 'published';
  json_schema: Record<string, unknown>;
  /** SHA-256 of the schema's canonical JSON. */
  sha256: string;
  fields: FieldSpec[];
  /** For a fork's first draft: the published version it started from. */
  forked_from: { schema_id: string; version: number } | null;
  created_at: string;
  updated_at: string;
  published_at: string | null;
}

/** What a schema rebind needs: attestations by this many distinct registered attesters of the token (0: none). */
export interface RebindPolicy { attestations: number }

/** A token's binding to one published schema version. Key: the token id. */
export interface SchemaBindingRecord {
  v: 1;
  token_id: string;
  tenant: string;
  workspace: string;
  schema_id: string;
  version: number;
  sha256: string;
  rebind_policy: RebindPolicy;
  /** The rebind that moved it here, null for the first binding. */
  rebind_id: string | null;
  bound_at: string;
  log_index: number;
}

/** One attestation kept on a field value (its log entry holds the same). */
export interface KeptAttestation {
  attester_id: string;
  statement: FieldStatement;
  key: AttesterKey;
  signature: string;
  at: string;
  log_index: number;
}

/** A field's current value. Key `<token id> NUL <path>`. */
export interface FieldRecord {
  v: 1;
  token_id: string;
  path: string;
  value: unknown;
  value_sha256: string;
  visibility: Visibility;
  /** For a `committed` field: the random salt and SHA-256 commitment that may go on chain; null otherwise. */
  salt: string | null;
  commitment: string | null;
  schema_id: string;
  schema_version: number;
  /** How many times the field was written. */
  sequence: number;
  /** Who wrote the current value: the issuer (an API key), or an attester through an attested entry. */
  source: { type: 'issuer'; actor: string } | { type: 'attester'; attester_id: string };
  /** Attestations over the current value (a new value starts with none). */
  attestations: KeptAttestation[];
  set_at: string;
  log_index: number;
}

/** An attester registered on a token with the field paths it may attest. Key: its id. */
export interface AttesterRecord {
  v: 1;
  id: string;
  token_id: string;
  tenant: string;
  workspace: string;
  name: string;
  key: AttesterKey;
  /** Field paths, each covering itself and the paths below it; `*` covers every field. */
  fields: string[];
  status: 'active' | 'removed';
  /** The highest nonce of an accepted field attestation: a signature at or under it is a replay. 0 before any. */
  last_nonce: number;
  created_at: string;
  removed_at: string | null;
}

/** One field as a rebind's dry run found it under the new version. */
export interface DryRunField {
  path: string;
  /** `ok`; `invalid` (fails the new version); `undefined_field` (the new version has no such field). */
  status: 'ok' | 'invalid' | 'undefined_field';
  problems: string[];
  from_visibility: Visibility;
  to_visibility: Visibility | null;
}

export interface DryRun {
  ran_at: string;
  /** SHA-256 of the current values' document the run checked. */
  values_sha256: string;
  passed: boolean;
  fields: DryRunField[];
  /** Failures under the new version that belong to no field (a rule over the whole document). */
  other_problems: string[];
  /** Fields the new version defines that are new. */
  added_fields: string[];
  /** Required fields of the new version without a value (reported, not blocking: fields are set one at a time). */
  missing_required: string[];
  /** SHA-256 of the canonical JSON of {subject: {token_id, schema_id, from, to}, values_sha256, passed, fields, other_problems, added_fields, missing_required}: what attesters sign. */
  sha256: string;
}

export interface RebindAttestation {
  attester_id: string;
  statement: RebindStatement;
  key: AttesterKey;
  signature: string;
  at: string;
  log_index: number;
}

/** A move of a token's binding to a newer published version of its schema. Key: its id. */
export interface RebindRecord {
  v: 1;
  id: string;
  token_id: string;
  tenant: string;
  workspace: string;
  schema_id: string;
  from_version: number;
  from_sha256: string;
  to_version: number;
  to_sha256: string;
  state: RebindState;
  required_attestations: number;
  dry_run: DryRun | null;
  attestations: RebindAttestation[];
  created_at: string;
  updated_at: string;
  committed_at: string | null;
  log_index: number | null;
}

export const REBIND_STATES = ['created', 'dry_run_failed', 'attesting', 'ready', 'committed', 'superseded'] as const;
export type RebindState = (typeof REBIND_STATES)[number];
