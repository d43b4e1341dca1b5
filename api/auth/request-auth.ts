// Authenticates vault-API requests by their RFC 9421 Ed25519 signature (docs/request-signing.md):
// the body's Content-Digest, the signature under an active API key, freshness and a one-time nonce.
// Routes opt out with `config: { public: true }`. A route that also takes a workspace bearer key
// (`config: { bearer: true }`, docs/customers.md "Wallets: one resource, one path") authenticates a
// request naming one itself, in its own onRequest hook, before this one runs; such a request is left to it.
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { verifyContentDigest } from '../../core/http/content-digest.ts';
import { SignatureError, verifyRequest, type VerifyPolicy } from '../../core/http/http-signature.ts';
import type { ReplayGuard } from './replay-guard.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { parseJsonKeepingRawBody } from './raw-json.ts';
import { requestEntry, type RequestHeaders } from '../../core/trust/trust-entry.ts';

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

  // Before validation: an unsigned request learns nothing about its body, and gets 401, not 400.
  app.addHook('preValidation', async (req: FastifyRequest) => {
    if (req.routeOptions.config?.public) return;
    if (req.routeOptions.config?.bearer && req.principal) return;
    const unauthorized = (message: string) => new CustodyError('unauthorized', message);
    const body = req.rawBody ?? Buffer.alloc(0);
    const digest = req.headers['content-digest'];
    if (body.length > 0) {
      if (typeof digest !== 'string') throw unauthorized('a request with a body needs a Content-Digest header');
      if (!verifyContentDigest(digest, body)) throw unauthorized('Content-Digest does not match the body');
    }
    const input = req.headers['signature-input'];
    const keyIdGuess = typeof input === 'string' ? /keyid="([^"]{1,128})"/.exec(input)?.[1] : undefined;
    const key = keyIdGuess ? await opts.findKey(keyIdGuess) : undefined;
    const origin = opts.publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
    try {
      const v = verifyRequest(
        { method: req.method, url: origin + req.url, headers: req.headers as Record<string, string | string[] | undefined> },
        (id) => (id === keyIdGuess && key ? key.publicKey : undefined),
        now(),
        { ...POLICY, requiredComponents: body.length > 0 ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'] },
      );
      if (!(await guard.claim(v.keyId, v.nonce!, v.expires!, now()))) throw new SignatureError('replayed', 'replayed: this nonce was already used');
      const url = origin + req.url;
      req.caller = {
        org: key!.org, keyId: v.keyId,
        entry: () => requestEntry({ method: req.method, url, headers: trustHeaders(req.headers as Record<string, string | string[] | undefined>), body }),
      };
    } catch (err) {
      if (err instanceof SignatureError) {
        req.log.info({ reason: err.reason }, 'request signature refused');
        throw unauthorized(`request signature refused: ${err.message}`);
      }
      throw err;
    }
  });
};

export const requestAuth = fp(plugin, { name: 'request-auth' });
