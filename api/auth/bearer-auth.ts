// Authenticates platform-API requests by workspace bearer key (docs/platform/tenancy.md): resolves the
// principal, checks the route's permission (403 role_denied), requires an RFC 9421 request signature
// under the key's Ed25519 public key for production mutations, and a recent MFA verification where the
// route asks for one. Routes declare `config: { permission, mfa, public }`.
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { verifyContentDigest } from '../../core/http/content-digest.ts';
import { SignatureError, verifyRequest } from '../../core/http/http-signature.ts';
import { ReplayGuard } from './replay-guard.ts';
import { ApiError } from '../errors.ts';
import { parseJsonKeepingRawBody } from './raw-json.ts';
import type { Principal, TenancyService } from '../tenancy/tenancy-service.ts';
import { roleAllows, type Permission } from '../tenancy/permissions.ts';
import type { MfaTokens } from '../tenancy/mfa-tokens.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    permission?: Permission;
    mfa?: boolean;
  }
}

export interface BearerAuthOptions {
  tenancy: TenancyService;
  mfa: MfaTokens;
  publicOrigin?: string | undefined;
  /** Seconds since the epoch. */
  now: () => number;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new ApiError(401, 'unauthorized', 'authentication required');
  return req.principal;
}

const plugin: FastifyPluginAsync<BearerAuthOptions> = async (app, opts) => {
  const guard = new ReplayGuard();

  parseJsonKeepingRawBody(app);

  app.addHook('preHandler', async (req) => {
    const cfg = req.routeOptions.config;
    if (cfg?.public) return;
    const auth = req.headers.authorization;
    const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
    const principal = token ? await opts.tenancy.authenticate(token) : undefined;
    if (!principal) throw new ApiError(401, 'unauthorized', 'a valid workspace bearer key is required (Authorization: Bearer svc_...)');
    if (principal.environment === 'production' && MUTATING.has(req.method)) verifySignature(req, principal);
    if (cfg?.permission && !roleAllows(principal.role, cfg.permission)) {
      throw new ApiError(403, 'role_denied', `this key's role (${principal.role}) lacks the ${cfg.permission} permission`);
    }
    if (cfg?.mfa) {
      const t = req.headers['svc-mfa-token'];
      if (!opts.mfa.check(typeof t === 'string' ? t : undefined, principal.keyId, opts.now())) {
        throw new ApiError(403, 'mfa_required', 'this operation needs a recent MFA verification: POST /v1/mfa/verifications and send the token as SVC-MFA-Token');
      }
    }
    req.principal = principal;
  });

  function verifySignature(req: FastifyRequest, p: Principal): void {
    const refused = (m: string) => new ApiError(401, 'signature_required', `production changes need an RFC 9421 request signature: ${m}`);
    if (!p.signingPublicKey) throw refused('this key has no signing key');
    const body = req.rawBody ?? Buffer.alloc(0);
    const digest = req.headers['content-digest'];
    if (body.length > 0) {
      if (typeof digest !== 'string') throw refused('a request with a body needs a Content-Digest header');
      if (!verifyContentDigest(digest, body)) throw refused('Content-Digest does not match the body');
    }
    const origin = opts.publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
    try {
      const v = verifyRequest(
        { method: req.method, url: origin + req.url, headers: req.headers as Record<string, string | string[] | undefined> },
        (id) => (id === p.keyId ? p.signingPublicKey! : undefined),
        opts.now(),
        { requiredParams: ['created', 'expires', 'nonce', 'keyid'], maxValiditySeconds: 300, skewSeconds: 30, requiredComponents: body.length > 0 ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'] },
      );
      if (!guard.claim(v.keyId, v.nonce!, v.expires!, opts.now())) throw new SignatureError('replayed', 'this nonce was already used');
    } catch (err) {
      if (err instanceof SignatureError) throw refused(err.message);
      throw err;
    }
  }
};

export const bearerAuth = fp(plugin, { name: 'bearer-auth' });
