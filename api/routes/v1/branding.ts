// Branding: resolved and raw theme, theme patch, logo removal and the public bundle
// (docs/platform/branding.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody, ApiError } from '../../errors.ts';
import { principalOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform/platform.ts';
import { IpRateLimiter } from '../../platform/branding.ts';

const Loose = Type.Record(Type.String(), Type.Unknown());
const View = Type.Object({ resolved: Loose, theme: Loose, resolution_order: Type.Array(Type.String()), public_claim_token: Type.String(), updated_at: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 422: ErrorBody };

export const brandingRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; publicPerMinute?: number }> = async (app, { platform, publicPerMinute }) => {
  const b = platform.branding;
  const limiter = new IpRateLimiter(publicPerMinute ?? 60, platform.clock);
  const scope = (req: { principal?: unknown }) => {
    const p = principalOf(req as never);
    return { tenant: p.tenant, workspace: p.workspace };
  };
  const actor = (req: { principal?: unknown }) => ({ type: 'api_key' as const, id: principalOf(req as never).keyId });

  app.get('/branding', { schema: { response: { 200: View, ...errors } } }, async (req) => b.view(scope(req).tenant));

  app.put('/branding', {
    config: { permission: 'branding.manage' },
    schema: { body: Type.Record(Type.String(), Type.Unknown()), response: { 200: View, ...errors } },
  }, async (req) => b.patch(scope(req), actor(req), req.body));

  app.delete('/branding/logo', {
    config: { permission: 'branding.manage' },
    schema: { response: { 200: View, ...errors } },
  }, async (req) => b.clearLogo(scope(req), actor(req)));

  app.get('/public/branding', {
    config: { public: true },
    schema: { querystring: Type.Object({ claim_token: Type.Optional(Type.String()) }), response: { 200: Loose, 429: ErrorBody } },
  }, async (req) => {
    if (!limiter.allow(req.ip)) throw new ApiError(429, 'rate_limited', 'too many requests from this address; try again in a minute');
    return b.publicBundle(req.query.claim_token);
  });
};
