// Request rate limits that mean the same on one API instance or many (docs/operations.md "Rate limits").
// Counting is @fastify/rate-limit's, on a store every instance shares: PostgreSQL's rate_limit_counters
// when the API runs on PostgreSQL, memory when it runs alone on LevelDB. Three kinds of budget:
//   - per client address (an IPv6 /64), every request, before authentication: a flood or a guesser of
//     credentials is refused before any signature is checked or body read;
//   - per API key (a vault API signing key, a workspace bearer key), once the key is known and before the
//     body is read: a key's budget is the same from any number of addresses;
//   - a route's own, stricter, per-address budget (`config: { addressLimit }`: the public branding
//     bundle; the hosted pages' form POSTs count theirs through `takeAddressLimit`).
// Every answer of a counted request carries RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-
// headers, the named-policy form of drafts 08 to 11); a refused one is 429 rate_limited in the one error
// model, with Retry-After.
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Logger } from '../../common/logger.ts';
import { signedKeyIdOf } from '../auth/request-auth.ts';
import { clientAddressKey } from './client-address.ts';
import type { PostgresRateLimitCounters } from './postgres-rate-limit-store.ts';

/** A route's own per-address budget, on top of the general ones. */
export interface AddressLimit {
  /** Names the budget (RateLimit-Policy): routes naming the same policy share one count per address. */
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

/** The policy names the headers carry for the two general budgets. */
export const ADDRESS_POLICY = 'address';
export const KEY_POLICY = 'key';

/** Answers that are never counted: load balancers' and orchestrators' probes. */
const UNCOUNTED = new Set(['/healthz', '/readyz']);
/** Distinct keys the in-memory store keeps per budget (least recently used dropped first). */
const MEMORY_KEYS = 50_000;

type Check = Awaited<ReturnType<ReturnType<FastifyInstance['createRateLimit']>>>;
type Limiter = (req: FastifyRequest) => Promise<Check>;
interface Budget { policy: string; max: number; windowMs: number; limiter: Limiter }
interface Standing { policy: string; max: number; windowS: number; remaining: number; resetS: number }

/** The budgets counted for one request so far, for its headers. */
const counted = new WeakMap<FastifyRequest, Standing[]>();

/**
 * The key a request's API key is counted under: a hash of the key's id, so the counters hold no key ids;
 * undefined while no key authenticated the request. A vault API key is known once its signature verified
 * (before the body is read), a workspace key once its bearer token resolved.
 */
export function apiKeyOf(req: FastifyRequest): string | undefined {
  const vaultKey = signedKeyIdOf(req);
  const id = vaultKey ? `vault:${vaultKey}` : req.principal ? `workspace:${req.principal.keyId}` : undefined;
  return id === undefined ? undefined : createHash('sha256').update(id).digest('base64url').slice(0, 32);
}

/** RateLimit-Policy and RateLimit name every budget the request was counted on (Structured Field lists). */
function setHeaders(reply: FastifyReply, all: Standing[]): void {
  reply.header('ratelimit-policy', all.map((s) => `"${s.policy}";q=${s.max};w=${s.windowS}`).join(', '));
  reply.header('ratelimit', all.map((s) => `"${s.policy}";r=${s.remaining};t=${s.resetS}`).join(', '));
}

const plugin: FastifyPluginAsync<RateLimitsOptions> = async (app, opts) => {
  const counters = opts.counters;
  // `global: false`: the library adds no hook of its own; the hooks below apply its limiters.
  await app.register(rateLimit, { global: false, ...(counters ? { store: counters.storeClass() } : { cache: MEMORY_KEYS }) });
  // The memory store gives each limiter a child store sized by the limiter's own options, which the
  // library's types do not list: `cache` is passed through a spread.
  const memory = counters ? {} : { cache: MEMORY_KEYS };
  const budget = (policy: string, max: number, windowMs: number, key: (req: FastifyRequest) => string): Budget => ({
    policy, max, windowMs,
    limiter: app.createRateLimit({ ...memory, max, timeWindow: windowMs, keyGenerator: (req) => `${policy}:${key(req)}` }),
  });

  /**
   * Counts `req` on `b`; sets the headers; the seconds to wait when over budget. A store that fails lets
   * the request through (logged): the limits shield the service, they authorize nothing.
   */
  async function take(req: FastifyRequest, reply: FastifyReply, b: Budget): Promise<number | undefined> {
    let c: Check;
    try {
      c = await b.limiter(req);
    } catch (err) {
      opts.log.warn({ err: (err as Error).message, policy: b.policy }, 'rate limit store failed; request not counted');
      return undefined;
    }
    if (c.isAllowed) return undefined;
    const resetS = Math.max(0, c.ttlInSeconds);
    const all = [...(counted.get(req) ?? []), { policy: b.policy, max: b.max, windowS: Math.ceil(b.windowMs / 1000), remaining: c.remaining, resetS }];
    counted.set(req, all);
    setHeaders(reply, all);
    if (!c.isExceeded) return undefined;
    // Not before the window ends (the draft: Retry-After no earlier than the RateLimit's `t`).
    const wait = Math.max(1, resetS);
    reply.header('retry-after', String(wait));
    return wait;
  }
  const refuse = (wait: number, what: string) => new CustodyError('rate_limited', `too many requests ${what}; retry after ${wait} s (Retry-After)`);

  const byAddress = budget(ADDRESS_POLICY, opts.perAddress, opts.windowMs, (req) => clientAddressKey(req.ip));
  const byKey = budget(KEY_POLICY, opts.perKey, opts.windowMs, (req) => apiKeyOf(req)!);
  const routeBudgets = new Map<string, Budget>();
  const routeBudget = (l: AddressLimit): Budget => {
    const id = `${l.policy}:${l.max}:${l.windowMs}`;
    let b = routeBudgets.get(id);
    if (!b) routeBudgets.set(id, (b = budget(l.policy, l.max, l.windowMs, (req) => clientAddressKey(req.ip))));
    return b;
  };

  app.decorate('takeAddressLimit', (req: FastifyRequest, reply: FastifyReply, l: AddressLimit) => take(req, reply, routeBudget(l)));

  // Before authentication (the first hook of every route): the address's budget, then the route's own.
  app.addHook('onRequest', async (req, reply) => {
    if (UNCOUNTED.has(req.routeOptions.url ?? '')) return;
    const general = await take(req, reply, byAddress);
    if (general !== undefined) throw refuse(general, 'from this address');
    const own = req.routeOptions.config?.addressLimit;
    const wait = own ? await take(req, reply, routeBudget(own)) : undefined;
    if (wait !== undefined) throw refuse(wait, 'from this address to this operation');
  });

  // Once every onRequest hook ran, the authentication ones included, and before the body is read: the
  // key's budget. A refused request spends no nonce and no MFA proof (those are claimed later).
  app.addHook('preParsing', async (req, reply) => {
    if (apiKeyOf(req) === undefined) return;
    const wait = await take(req, reply, byKey);
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
