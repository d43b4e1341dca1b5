// The vault policy shape (docs/policies.md): a per-transaction cap, amounts per rolling time window,
// recipient allow and deny lists, and an asset allow list. The API validates and checks it
// (api/policy/policy.ts); the SDK sends it.
import { Type, type Static } from '@sinclair/typebox';

/** `<chain>:native` or `<chain>:<token contract 0x address, lower case>`. */
const ASSET = '^[a-z0-9-]{1,40}:(native|0x[0-9a-f]{40})$';
const AMOUNT = '^(0|[1-9][0-9]{0,77})$';
// Keys that are not assets are refused: such a cap would be stored and never apply.
const Caps = Type.Record(Type.String({ pattern: ASSET }), Type.String({ pattern: AMOUNT }), { maxProperties: 100, additionalProperties: false });

export const PolicySchema = Type.Object({
  per_transaction_cap: Type.Optional(Caps),
  rolling_window: Type.Optional(Type.Object({
    seconds: Type.Integer({ minimum: 60, maximum: 31_536_000 }),
    caps: Caps,
  }, { additionalProperties: false })),
  recipient_allowlist: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 90 }), { maxItems: 1000, uniqueItems: true })),
  recipient_denylist: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 90 }), { maxItems: 1000, uniqueItems: true })),
  asset_allowlist: Type.Optional(Type.Array(Type.String({ pattern: ASSET }), { maxItems: 100, uniqueItems: true })),
}, { additionalProperties: false, description: 'docs/policies.md' });

export type Policy = Static<typeof PolicySchema>;
