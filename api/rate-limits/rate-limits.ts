// Request rate limits that mean the same on one API instance or many (docs/operations.md "Rate limits").
// Counting is @fastify/rate-limit's, on a store every instance shares: PostgreSQL's rate_limit_counters
// when the API runs on PostgreSQL, memory when it runs alone on LevelDB. Three kinds of budget:
//   - per client address (an IPv6 /64), every request, before authentication: a flood or a guesser of
//     credentials is refused before any signature is checked or body read;
//   - per API key (a vault API signing key, a workspace bearer key), once the request is authenticated;
//   - a route's own, stricter, per-address budget (`config: { addressLimit }`: the public branding
//     bundle, the hosted pages' form POSTs).
// Every answer of a counted request carries RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-
// headers-07); a refused one is 429 rate_limited in the one error model, with Retry-After.
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Logger } from '../../common/logger.ts';
import { clientAddressKey } from './client-address.ts';
import type { PostgresRateLimitCounters } from './postgres-rate-limit-store.ts';

/** A route's own per-address budget, on top of the general ones. */
export interface AddressLimit {
  /** Names the budget: routes naming the same policy share one count per address. */
  policy: string;
  max: number;
  windowMs: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    addressLimit?: AddressLimit;
  }
  interface FastifyInstance {
    /** Counts one request of `req` against `limit` (per client address): undefined when allowed, else the seconds to wait. */
    takeAddressLimit(req: FastifyRequest, reply: FastifyReply, limit: AddressLimit): Promise<number | undefined>;
  }
}

export interface RateLimitSettings {
  windowMs: number;
  /** Requests of one client address per window, authenticated or not. */
  perAddress: number;
  /** Requests of one API key per window. */
  perKey: number;
}

export interface RateLimitsOptions extends RateLimitSettings {
  /** The counters every instance shares (PostgreSQL); in this process's memory when absent. */
  counters?: PostgresRateLimitCounters | undefined;
  /** How often past windows are pruned from the shared counters. */
  pruneEveryMs?: number;
  log: Pick<Logger, 'warn'>;
}

/** Answers that are never counted: load balancers' and orchestrators' probes. */
const UNCOUNTED = new Set(['/healthz', '/readyz']);
/** Distinct keys the in-memory store keeps per policy (least recently used dropped first). */
const MEMORY_KEYS = 50_000;

type Check = Awaited<ReturnType<ReturnType<FastifyInstance['createRateLimit']>>>;
type Counted = Extract<Check, { isAllowed: false }>;
type Limiter = (req: FastifyRequest) => Promise<Check>;

/** The budgets counted for one request so far, for its headers. */
const counted = new WeakMap<FastifyRequest, { windowMs: number; c: Counted }[]>();

/**
 * The key a request's API key is counted under: a hash of what identifies the key, so neither key ids
 * nor tokens are kept in the counters; undefined for a request no key authenticated.
 */
export function apiKeyOf(req: FastifyRequest): string | undefined {
  const id = req.caller ? `vault:${req.caller.keyId}` : req.principal ? `workspace:${req.principal.keyId}` : undefined;
  return id === undefined ? undefined : createHash('sha256').update(id).digest('base64url').slice(0, 32);
}

/** RateLimit-Policy lists every budget counted; RateLimit reports the one nearest to refusal. */
function setHeaders(reply: FastifyReply, all: { windowMs: number; c: Counted }[]): void {
  reply.header('ratelimit-policy', all.map(({ windowMs, c }) => `${c.max};w=${Math.ceil(windowMs / 1000)}`).join(', '));
  const nearest = all.reduce((a, b) => (b.c.remaining < a.c.remaining || (b.c.remaining === a.c.remaining && b.c.ttl > a.c.ttl) ? b : a));
  reply.header('ratelimit', `limit=${nearest.c.max}, remaining=${nearest.c.remaining}, reset=${Math.max(0, nearest.c.ttlInSeconds)}`);
}

const plugin: FastifyPluginAsync<RateLimitsOptions> = async (app, opts) => {
  const counters = opts.counters;
  // `global: false`: the library adds no hook of its own; the hooks below apply its limiters.
  await app.register(rateLimit, { global: false, cache: MEMORY_KEYS, ...(counters ? { store: counters.storeClass() } : {}) });
  const limiter = (policy: string, max: number, windowMs: number, key: (req: FastifyRequest) => string): Limiter =>
    app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: (req) => `${policy}:${key(req)}` });

  /**
   * Counts `req` on `limiter`; sets the headers; the seconds to wait when over budget. A store that fails
   * lets the request through (logged): the limits shield the service, they authorize nothing.
   */
  async function take(req: FastifyRequest, reply: FastifyReply, limit: Limiter, windowMs: number): Promise<number | undefined> {
    let c: Check;
    try {
      c = await limit(req);
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'rate limit store failed; request not counted');
      return undefined;
    }
    if (c.isAllowed) return undefined;
    const all = [...(counted.get(req) ?? []), { windowMs, c }];
    counted.set(req, all);
    setHeaders(reply, all);
    if (!c.isExceeded) return undefined;
    const wait = Math.max(1, c.ttlInSeconds);
    reply.header('retry-after', String(wait));
    return wait;
  }
  const refuse = (wait: number, what: string) => new CustodyError('rate_limited', `too many requests ${what}; retry after ${wait} s (Retry-After)`);

  const byAddress = limiter('address', opts.perAddress, opts.windowMs, (req) => clientAddressKey(req.ip));
  const byKey = limiter('key', opts.perKey, opts.windowMs, (req) => apiKeyOf(req)!);
  const routeLimits = new Map<string, Limiter>();
  const routeLimiter = (l: AddressLimit): Limiter => {
    const id = `${l.policy}:${l.max}:${l.windowMs}`;
    let f = routeLimits.get(id);
    if (!f) routeLimits.set(id, (f = limiter(`route-${l.policy}`, l.max, l.windowMs, (req) => clientAddressKey(req.ip))));
    return f;
  };

  app.decorate('takeAddressLimit', (req: FastifyRequest, reply: FastifyReply, l: AddressLimit) => take(req, reply, routeLimiter(l), l.windowMs));

  // Before authentication (the first hook of every route): the address's budget, then the route's own.
  app.addHook('onRequest', async (req, reply) => {
    if (UNCOUNTED.has(req.routeOptions.url ?? '')) return;
    const general = await take(req, reply, byAddress, opts.windowMs);
    if (general !== undefined) throw refuse(general, 'from this address');
    const own = req.routeOptions.config?.addressLimit;
    const wait = own ? await take(req, reply, routeLimiter(own), own.windowMs) : undefined;
    if (wait !== undefined) throw refuse(wait, 'from this address to this operation');
  });

  // Once a key authenticated the request (the auth hooks run at onRequest and preValidation): the key's budget.
  app.addHook('preHandler', async (req, reply) => {
    if (apiKeyOf(req) === undefined) return;
    const wait = await take(req, reply, byKey, opts.windowMs);
    if (wait !== undefined) throw refuse(wait, 'with this API key');
  });

  if (counters) {
    const prune = () => void counters.prune().catch((err: unknown) => opts.log.warn({ err: (err as Error).message }, 'rate limit counter pruning failed'));
    const timer = setInterval(prune, opts.pruneEveryMs ?? 60_000);
    timer.unref();
    app.addHook('onClose', async () => clearInterval(timer));
  }
};

export const rateLimits = fp(plugin, { name: 'rate-limits' });
