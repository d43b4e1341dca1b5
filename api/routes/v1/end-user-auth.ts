// PUT /v1/config/end-user-auth (docs/end-user-auth.md): the JWK Set and audience that hosted-tier
// end-user tokens verify against, for the caller's organization.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { JWK } from 'jose';
import { ErrorBody } from '../../errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import { validateJwks } from '../../../core/auth/end-user-token.ts';
import { accountCenterOptInProblem, type AccountCenterOptIn } from '../../../core/auth/member-credential.ts';

export const endUserAuthRoutes: FastifyPluginAsyncTypebox<{ vaults: VaultService }> = async (app, { vaults }) => {
  app.put('/config/end-user-auth', {
    schema: {
      summary: 'Register the JWK Set and audience that hosted-tier end-user tokens verify against; replaces an earlier registration',
      description: 'Hosted vaults created after a registration need an end-user token (`end_user_token`) on every POST /v1/transactions (docs/end-user-auth.md). `account_center` opts the organization in to passkeys enrolled on the service\'s Account Center: the object GET /v1/tenant/member-auth/account-center-key answers; the nodes then accept member credentials under that key, for passkeys on that origin only. A later registration without it ends the opt-in (docs/end-user-auth.md "Account Center passkeys").',
      tags: ['end-user auth'], security: [{ httpSignature: [] }],
      body: Type.Object({
        jwks: Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, maxItems: 20 }) }, { additionalProperties: false }),
        audience: Type.String({ minLength: 1, maxLength: 255 }),
        account_center: Type.Optional(Type.Object({ jwk: Type.Record(Type.String(), Type.Unknown()), origin: Type.String({ maxLength: 255 }) }, { additionalProperties: false })),
      }, { additionalProperties: false }),
      response: { 200: Type.Object({ status: Type.Literal('registered'), audience: Type.String(), key_count: Type.Integer(), account_center: Type.Boolean() }), 400: ErrorBody, 401: ErrorBody },
    },
  }, async (req) => {
    const problem = await validateJwks(req.body.jwks);
    if (problem) throw new CustodyError('invalid_request', problem);
    const ac = req.body.account_center;
    // The nodes run the same check on the entry; refusing here keeps a registration they would refuse out of the log.
    const acProblem = ac === undefined ? undefined : accountCenterOptInProblem(ac, req.body.jwks as { keys: { kid?: unknown }[] }) ?? (await validateJwks({ keys: [ac.jwk] }));
    if (acProblem) throw new CustodyError('invalid_request', acProblem);
    const accountCenter = ac as AccountCenterOptIn | undefined;
    await vaults.setEndUserAuth(req.caller!.org, { jwks: { keys: req.body.jwks.keys as JWK[] }, audience: req.body.audience, ...(accountCenter ? { accountCenter } : {}) }, req.caller!.entry());
    return { status: 'registered' as const, audience: req.body.audience, key_count: req.body.jwks.keys.length, account_center: accountCenter !== undefined };
  });
};
