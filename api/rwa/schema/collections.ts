// The asset schemas' and token fields' collections (docs/api-storage.md, "The interface").
import { collection } from '../../store/collection.ts';
import type { AssetSchemaRecord, AttesterRecord, FieldRecord, RebindRecord, SchemaBindingRecord, SchemaVersionRecord } from './records.ts';

/** Key `<workspace> NUL <id>`; index `<workspace> NUL all NUL <id>` (by id). */
export const ASSET_SCHEMAS = collection<AssetSchemaRecord>('rwa_asset_schemas');
/** Key `<workspace> NUL <id> NUL <version, 6 digits>`; index `<workspace> NUL <id> NUL <version, 6 digits>`. */
export const SCHEMA_VERSIONS = collection<SchemaVersionRecord>('rwa_schema_versions');
/** Key: the token id. */
export const SCHEMA_BINDINGS = collection<SchemaBindingRecord>('rwa_schema_bindings');
/** Key `<token id> NUL <path>`; index `<token id> NUL <path>`. */
export const FIELDS = collection<FieldRecord>('rwa_fields');
/** Key: the attester id; index `<token id> NUL <id>` (oldest first). */
export const ATTESTERS = collection<AttesterRecord>('rwa_attesters');
/** Key: the rebind id; index `<token id> NUL <id>`. */
export const REBINDS = collection<RebindRecord>('rwa_schema_rebinds');
