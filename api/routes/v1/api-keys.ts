// POST /v1/api-keys, GET /v1/api-keys, POST /v1/api-keys/{keyId}/revoke (docs/vault-api.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import { ApiKey, RegisterApiKeyBody } from '../../../core/api-schemas/api-keys.ts';

const view = (k: { id: string; public_key: string; label: string | null; created_at: string; revoked: boolean; revoked_at?: string }) => ({
  id: k.id, public_key: k.public_key, label: k.label, created_at: k.created_at, revoked: k.revoked, ...(k.revoked_at ? { revoked_at: k.revoked_at } : {}),
});

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ vaults: VaultService }> = async (app, { vaults }) => {
  app.post('/api-keys', {
    schema: {
      summary: 'Register another Ed25519 public key that signs the organization\'s requests',
      tags: ['api keys'], security: [{ httpSignature: [] }],
      body: RegisterApiKeyBody,
      response: { 201: ApiKey, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (req, reply) => {
    const k = await vaults.registerKey(req.caller!.org, req.body.public_key, req.body.label ?? null, req.caller!.entry());
    return reply.code(201).send(view(k));
  });

  app.get('/api-keys', { schema: { summary: 'The organization\'s API keys, active and revoked, oldest first', tags: ['api keys'], security: [{ httpSignature: [] }], response: { 200: Type.Object({ api_keys: Type.Array(ApiKey) }), 401: ErrorBody } } }, async (req) => ({
    api_keys: (await vaults.listKeys(req.caller!.org)).map(view),
  }));

  app.post('/api-keys/:keyId/revoke', {
    schema: {
      summary: 'Revoke an API key',
      description: 'It stops authenticating at once on the API, and on every node at its next session (the revocation travels in the trust log). The last active key cannot be revoked (409).',
      tags: ['api keys'], security: [{ httpSignature: [] }],
      params: Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: ApiKey, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody } },
  }, async (req) => view(await vaults.revokeKey(req.caller!.org, req.params.keyId, req.caller!.entry())));
};
