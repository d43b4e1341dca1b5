// Authenticates vault-API requests by their RFC 9421 Ed25519 signature (docs/request-signing.md):
// the body's Content-Digest, the signature under an active API key, freshness and a one-time nonce.
// Routes opt out with `config: { public: true }`. A route that also takes a workspace bearer key
// (`config: { bearer: true }`, docs/customers.md "Wallets: one resource, one path") authenticates a
// request naming one itself, in its own onRequest hook; such a request is left to it. The signature is
// checked before the body is read or parsed; the body against its signed digest once it is read.
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { verifyContentDigest } from '../../core/http/content-digest.ts';
import { SignatureError, verifyRequest, type VerifyPolicy } from '../../core/http/http-signature.ts';
import type { ReplayGuard } from './replay-guard.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { parseJsonKeepingRawBody } from './raw-json.ts';
import { requestEntry, type RequestHeaders } from '../../core/trust/trust-entry.ts';
import { hasBearer } from './bearer-auth.ts';

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v);

/** The received headers a node needs to verify the request again (lower-case names, lines joined). */
function trustHeaders(h: Record<string, string | string[] | undefined>): RequestHeaders {
  const digest = one(h['content-digest']);
  const type = one(h['content-type']);
  return { 'signature-input': one(h['signature-input']) ?? '', signature: one(h['signature']) ?? '', ...(digest ? { 'content-digest': digest } : {}), ...(type ? { 'content-type': type } : {}) };
}

export interface Caller {
  org: string;
  keyId: string;
  /** The signature's `created` (Unix seconds), which the nodes read from the entry too. */
  created: number;
  /** The request as verified, encoded as a trust-log entry (docs/trust.md) for changes the nodes must learn. */
  entry: () => Uint8Array;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
  interface FastifyContextConfig {
    public?: boolean;
    /** The route also takes a workspace bearer key (its own hook sets `req.principal`). */
    bearer?: boolean;
  }
}

export interface RequestAuthOptions {
  /** Finds an active API key: its organization and Ed25519 public key. */
  findKey(keyId: string): Promise<{ org: string; publicKey: Uint8Array } | undefined>;
  /** Claims each signature's (key id, nonce) durably, once (api/auth/replay-guard.ts). */
  replayGuard: ReplayGuard;
  /** Origin clients address, e.g. https://api.example.com; defaults to http://<Host>. */
  publicOrigin?: string | undefined;
  now?: () => number;
}

// `skewSeconds` allows a `created` up to 30 s ahead of this clock; `expires` is hard (docs/request-signing.md).
const POLICY: Omit<VerifyPolicy, 'requiredComponents'> = { requiredParams: ['created', 'expires', 'nonce', 'keyid'], maxValiditySeconds: 300, skewSeconds: 30 };

const plugin: FastifyPluginAsync<RequestAuthOptions> = async (app, opts) => {
  const guard = opts.replayGuard;
  const now = opts.now ?? (() => Math.floor(Date.now() / 1000));

  parseJsonKeepingRawBody(app);

  // Before the body is read: the signature covers the method, the URL and the Content-Digest header, all
  // known at once, so an unsigned or badly signed request is refused (401) before anything parses its
  // body. The body is held to its digest once it is read, below.
  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (req.routeOptions.config?.public) return;
    // A route that also takes a bearer key authenticates one itself, in its own onRequest hook.
    if (req.routeOptions.config?.bearer && hasBearer(req)) return;
    const digest = req.headers['content-digest'];
    // A body is announced by its length or its transfer encoding; one that comes needs a signed digest.
    const announced = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (announced && typeof digest !== 'string') throw unauthorized('a request with a body needs a Content-Digest header');
    const input = req.headers['signature-input'];
    const keyIdGuess = typeof input === 'string' ? /keyid="([^"]{1,128})"/.exec(input)?.[1] : undefined;
    const key = keyIdGuess ? await opts.findKey(keyIdGuess) : undefined;
    const origin = opts.publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
    try {
      const v = verifyRequest(
        { method: req.method, url: origin + req.url, headers: req.headers as Record<string, string | string[] | undefined> },
        (id) => (id === keyIdGuess && key ? key.publicKey : undefined),
        now(),
        { ...POLICY, requiredComponents: typeof digest === 'string' ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'] },
      );
      const url = origin + req.url;
      signed.set(req, {
        nonce: v.nonce!, expires: v.expires!,
        caller: {
          org: key!.org, keyId: v.keyId, created: v.created,
          entry: () => requestEntry({ method: req.method, url, headers: trustHeaders(req.headers as Record<string, string | string[] | undefined>), body: req.rawBody ?? Buffer.alloc(0) }),
        },
      });
    } catch (err) {
      if (err instanceof SignatureError) {
        req.log.info({ reason: err.reason }, 'request signature refused');
        throw unauthorized(`request signature refused: ${err.message}`);
      }
      throw err;
    }
  });

  // Once the body is read, before it is validated: it must be the one the signed digest names; then the
  // signature's nonce is claimed, so a request whose body was changed in transit spends nothing.
  app.addHook('preValidation', async (req: FastifyRequest) => {
    const s = signed.get(req);
    if (!s) return;
    const body = req.rawBody ?? Buffer.alloc(0);
    const digest = req.headers['content-digest'];
    if (body.length > 0) {
      if (typeof digest !== 'string') throw unauthorized('a request with a body needs a Content-Digest header');
      if (!verifyContentDigest(digest, body)) throw unauthorized('Content-Digest does not match the body');
    }
    if (!(await guard.claim(s.caller.keyId, s.nonce, s.expires, now()))) {
      req.log.info({ reason: 'replayed' }, 'request signature refused');
      throw unauthorized('request signature refused: replayed: this nonce was already used');
    }
    req.caller = s.caller;
  });
};

/** Requests whose signature verified before the body was read, until their digest and nonce are checked. */
const signed = new WeakMap<FastifyRequest, { nonce: string; expires: number; caller: Caller }>();

/**
 * The API key whose signature verified on `req`: from the end of the first hook on, before the body is
 * read and the nonce claimed (the per-key rate limit counts it then: api/rate-limits/rate-limits.ts);
 * undefined for a request no signature authenticated.
 */
export function signedKeyIdOf(req: FastifyRequest): string | undefined {
  return req.caller?.keyId ?? signed.get(req)?.caller.keyId;
}

const unauthorized = (message: string) => new CustodyError('unauthorized', message);

export const requestAuth = fp(plugin, { name: 'request-auth' });
