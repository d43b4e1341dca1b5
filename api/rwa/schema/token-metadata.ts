// Where a field's value goes on chain (docs/platform/rwa.md "compile-preview"): a `public` field's value in
// clear in the token's metadata attributes; a `committed` field's salted commitment only,
//   commitment = SHA-256( "rwa-field-commitment/v1\n" || path || "\n" || salt (hex) || "\n" || canonical JSON of the value )
// with a fresh 32-byte salt per value kept off chain beside it, so a small set of possible values cannot be
// guessed from the hash; a `private` field nothing.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { canonicalJson } from './canonical-json.ts';
import type { FieldRecord } from './records.ts';

export const COMMITMENT_HEADER = 'rwa-field-commitment/v1';

export function fieldCommitment(path: string, saltHex: string, value: unknown): string {
  return bytesToHex(sha256(utf8ToBytes(`${COMMITMENT_HEADER}\n${path}\n${saltHex}\n${canonicalJson(value)}`)));
}

/** How compile-preview shows a committed field's place in the metadata. */
export function fieldCommitmentForm(path: string): string {
  return `sha256("${COMMITMENT_HEADER}\\n${path}\\n" || salt || "\\n" || canonical JSON of the value)`;
}

/** The metadata a token's current fields produce: public values as attributes, committed ones as commitments. */
export function fieldsMetadata(schema: { id: string; version: number; sha256: string }, fields: FieldRecord[]) {
  return {
    attributes: fields.filter((f) => f.visibility === 'public').map((f) => ({ trait_type: f.path, value: f.value })),
    properties: {
      asset_schema: schema,
      commitments: Object.fromEntries(fields.flatMap((f) => (f.visibility === 'committed' && f.commitment ? [[f.path, f.commitment] as const] : []))),
    },
  };
}
