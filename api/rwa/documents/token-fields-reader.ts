// What the metadata routes read of a token's fields (docs/platform/rwa.md "Documents and metadata"). The
// fields themselves (schema-validated values, attested entries) are kept by the fields part of the
// real-world-asset layer; metadata needs only their current public values, so it reads them through this
// interface and is wired to the fields part's implementation where both are built.
import type { RwaScope } from '../seams.ts';

/** A field's value as metadata shows it: JSON. */
export type FieldValue = string | number | boolean | null | FieldValue[] | { [k: string]: FieldValue };

export interface TokenFieldsReader {
  /**
   * The token's current values of the fields its schema makes public (on chain or in metadata), keyed by
   * field path (dot-separated, e.g. `metadata.image`, `coupon.rate`). Fields committed by hash only or kept
   * off chain are left out. A token with no schema binding or no fields answers an empty record.
   */
  publicFields(scope: RwaScope, tokenId: string): Promise<Record<string, FieldValue>>;
}

/** A reader for a deployment without the fields part: every token has no public fields. */
export const NO_FIELDS: TokenFieldsReader = { publicFields: async () => ({}) };
