// Authenticates platform-API requests by workspace bearer key (docs/platform/tenancy.md): resolves the
// principal, checks the route's permission (403 role_denied), requires an RFC 9421 request signature
// under the key's Ed25519 public key for production mutations, and a recent MFA verification where the
// route asks for one. Routes declare `config: { permission, mfa, public }`; `mfa` names the action, and
// the proof must be one issued for `<action>:<the route's :id>`, which this hook consumes (one use).
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { verifyContentDigest } from '../../core/http/content-digest.ts';
import { SignatureError, verifyRequest } from '../../core/http/http-signature.ts';
import type { ReplayGuard } from './replay-guard.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { parseJsonKeepingRawBody } from './raw-json.ts';
import type { Principal, TenancyService } from '../tenancy/tenancy-service.ts';
import { roleAllows, type Permission } from '../tenancy/permissions.ts';
import type { MfaAction, MfaTokens } from '../tenancy/mfa-tokens.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    permission?: Permission;
    /** The action an MFA proof must name (with the route's `:id`); the proof is used up by the request. */
    mfa?: MfaAction;
    /** A change a key of a suspended workspace may still make (reactivating it); every other change is refused. */
    whileSuspended?: boolean;
  }
}

export interface BearerAuthOptions {
  tenancy: TenancyService;
  mfa: MfaTokens;
  publicOrigin?: string | undefined;
  /** Claims each signature's (key id, nonce) durably, once (api/auth/replay-guard.ts). */
  replayGuard: ReplayGuard;
  /** Seconds since the epoch. */
  now: () => number;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new CustodyError('unauthorized', 'authentication required');
  return req.principal;
}

/** The tenant and workspace the authenticated key acts in. */
export function scopeOf(req: FastifyRequest): Scope {
  const p = principalOf(req);
  return { tenant: p.tenant, workspace: p.workspace };
}

/** The audit log's actor for a bearer-authenticated request: the workspace key. */
export function actorOf(req: FastifyRequest): Actor {
  return { type: 'api_key', id: principalOf(req).keyId };
}

const BEARER = /^bearer +(\S+) *$/i;

/** Whether the request names a bearer key: how a route taking either credential picks the bearer branch. */
export function hasBearer(req: FastifyRequest): boolean {
  const auth = req.headers.authorization;
  return typeof auth === 'string' && /^bearer /i.test(auth);
}

/**
 * Resolves the request's workspace key into `req.principal` and checks the route's permission: 401
 * without a valid key, 403 role_denied without the permission. The bearer-auth hook runs it on every
 * platform route; a vault-API route that also takes a bearer key runs it itself (GET /v1/wallets/{id}). A key
 * of a suspended workspace gets 403 workspace_suspended for anything but a read or its reactivation.
 * The scheme name is case-insensitive (RFC 9110 11.1).
 */
export async function authenticateBearer(req: FastifyRequest, tenancy: TenancyService): Promise<Principal> {
  const cfg = req.routeOptions.config;
  const auth = req.headers.authorization;
  const token = typeof auth === 'string' ? BEARER.exec(auth)?.[1] : undefined;
  const principal = token ? await tenancy.authenticate(token) : undefined;
  if (!principal) throw new CustodyError('unauthorized', 'a valid workspace bearer key is required (Authorization: Bearer svc_...)');
  if (cfg?.permission && !roleAllows(principal.role, cfg.permission)) {
    throw new CustodyError('role_denied', `this key's role (${principal.role}) lacks the ${cfg.permission} permission`);
  }
  // A suspended workspace reads and may be reactivated; any other change is refused before its body is read.
  if (principal.workspaceStatus === 'suspended' && !READS.has(req.method) && !cfg?.whileSuspended) {
    throw new CustodyError('workspace_suspended', 'this workspace is suspended: its keys may read; an owner or admin reactivates it with PATCH /v1/workspaces/{id} {"status": "active"}');
  }
  req.principal = principal;
  return principal;
}

const plugin: FastifyPluginAsync<BearerAuthOptions> = async (app, opts) => {
  const guard = opts.replayGuard;

  parseJsonKeepingRawBody(app, 'forbidden_key');

  // Who is asking, and may they, is settled before the body is read: onRequest runs before parsing and
  // validation, so a request without a valid key, or without the permission, gets 401 or 403 whatever its
  // body (docs/security.md "Strict input").
  app.addHook('onRequest', async (req) => {
    if (req.routeOptions.config?.public) return;
    await authenticateBearer(req, opts.tenancy);
  });

  // The request signature covers the body's bytes, so it is checked once they are read, still before the
  // body is validated.
  app.addHook('preValidation', async (req) => {
    const principal = req.principal;
    if (req.routeOptions.config?.public || !principal) return;
    if (principal.environment === 'production' && MUTATING.has(req.method)) await verifySignature(req, principal);
  });

  // A one-use MFA proof is consumed only by a request that is otherwise acceptable.
  app.addHook('preHandler', async (req) => {
    const cfg = req.routeOptions.config;
    const principal = req.principal;
    if (cfg?.public || !principal) return;
    if (cfg?.mfa) {
      const t = req.headers['svc-mfa-token'];
      const id = (req.params as Record<string, unknown> | undefined)?.id;
      const action = typeof id === 'string' ? `${cfg.mfa}:${id}` : cfg.mfa;
      if (!(await opts.mfa.consume(typeof t === 'string' ? t : undefined, principal.keyId, action, opts.now()))) {
        throw new CustodyError('mfa_required', `this operation needs a fresh MFA verification for ${action}: POST /v1/mfa/verifications {code, action: "${action}"} and send the token, once, as SVC-MFA-Token`);
      }
    }
  });

  async function verifySignature(req: FastifyRequest, p: Principal): Promise<void> {
    const refused = (m: string) => new CustodyError('signature_required', `production changes need an RFC 9421 request signature: ${m}`);
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
        // `skewSeconds` allows a `created` up to 30 s ahead of this clock; `expires` is hard (docs/request-signing.md).
        { requiredParams: ['created', 'expires', 'nonce', 'keyid'], maxValiditySeconds: 300, skewSeconds: 30, requiredComponents: body.length > 0 ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'] },
      );
      if (!(await guard.claim(v.keyId, v.nonce!, v.expires!, opts.now()))) throw new SignatureError('replayed', 'replayed: this nonce was already used');
    } catch (err) {
      if (err instanceof SignatureError) throw refused(err.message);
      throw err;
    }
  }
};

export const bearerAuth = fp(plugin, { name: 'bearer-auth' });
