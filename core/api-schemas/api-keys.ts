// API keys on the vault API (docs/vault-api.md): the body of POST /v1/api-keys and the key the API
// answers with. The routes (api/routes/v1/api-keys.ts) validate and document with them.
import { Type } from '@sinclair/typebox';

/** POST /v1/api-keys. */
export const RegisterApiKeyBody = Type.Object({
  public_key: Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'hex of a 32-byte Ed25519 public key' }),
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
}, { additionalProperties: false });

export const ApiKey = Type.Object({
  id: Type.String(),
  public_key: Type.String({ description: 'hex of the 32-byte Ed25519 public key' }),
  label: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  revoked: Type.Boolean(),
  revoked_at: Type.Optional(Type.String({ format: 'date-time' })),
});
