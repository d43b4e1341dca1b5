// PUT /v1/config/end-user-auth (docs/end-user-auth.md): the JWK Set and audience that hosted-tier
// end-user tokens verify against, for the caller's organization.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { JWK } from 'jose';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import { validateJwks } from '../../../core/auth/end-user-token.ts';

export const endUserAuthRoutes: FastifyPluginAsyncTypebox<{ vaults: VaultService }> = async (app, { vaults }) => {
  app.put('/config/end-user-auth', {
    schema: {
      summary: 'Register the JWK Set and audience that hosted-tier end-user tokens verify against; replaces an earlier registration',
      description: 'Hosted vaults created after a registration need an end-user token (`end_user_token`) on every POST /v1/transactions (docs/end-user-auth.md).',
      tags: ['end-user auth'], security: [{ httpSignature: [] }],
      body: Type.Object({
        jwks: Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, maxItems: 20 }) }, { additionalProperties: false }),
        audience: Type.String({ minLength: 1, maxLength: 255 }),
      }, { additionalProperties: false }),
      response: { 200: Type.Object({ status: Type.Literal('registered'), audience: Type.String(), key_count: Type.Integer() }), 400: ErrorBody, 401: ErrorBody },
    },
  }, async (req) => {
    const problem = await validateJwks(req.body.jwks);
    if (problem) throw new CustodyError('invalid_request', problem);
    await vaults.setEndUserAuth(req.caller!.org, { jwks: { keys: req.body.jwks.keys as JWK[] }, audience: req.body.audience }, req.caller!.entry());
    return { status: 'registered' as const, audience: req.body.audience, key_count: req.body.jwks.keys.length };
  });
};
