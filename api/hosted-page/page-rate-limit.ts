// The per-client-address limit on the Hosted Auth and Account Center pages' form POSTs
// (docs/platform/hosted-auth.md "Limits"): on top of the per-authorization bounds (5 wrong codes, 3 codes),
// one address may post only so many forms a minute, whatever authorizations it spreads them over. The
// counting is the public branding bundle's limiter (api/branding/ip-rate-limiter.ts: a fixed window per
// minute, past windows dropped once it tracks many addresses); this adds the key, Retry-After and a cap
// on the addresses counted per minute, so memory stays bounded whatever the traffic.
import { isIPv6 } from 'node:net';
import { IpRateLimiter } from '../branding/ip-rate-limiter.ts';

/** Default form POSTs per client address per minute (API_HOSTED_PAGE_RATE_PER_MINUTE). */
export const DEFAULT_PAGE_RATE_PER_MINUTE = 30;

/**
 * The key an address is counted under: an IPv4 address as is (an IPv4-mapped IPv6 address as its IPv4),
 * an IPv6 address by its /64, the smallest block one subscriber is usually given, so a client cannot
 * step around the limit by changing its interface identifier.
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** Addresses counted per minute at most: what bounds the memory (with the limiter's own pruning of past minutes). */
export const MAX_TRACKED_ADDRESSES = 50_000;

export class PageRateLimit {
  private readonly limiter: IpRateLimiter;
  private window = -1;
  /** The addresses counted in the current minute, at most `maxTracked`. */
  private readonly seen = new Set<string>();

  constructor(readonly perMinute: number = DEFAULT_PAGE_RATE_PER_MINUTE, private readonly clock: () => number = Date.now, private readonly maxTracked = MAX_TRACKED_ADDRESSES) {
    this.limiter = new IpRateLimiter(perMinute, clock);
  }

  /**
   * Counts one POST from `ip`: undefined when allowed, otherwise the seconds until the window ends
   * (Retry-After). Past `maxTracked` distinct addresses in one minute, a new address is let through
   * uncounted until the next minute (addresses already counted stay limited): memory stays bounded, and
   * a flood from many addresses cannot lock everyone else out of signing in; the per-authorization
   * bounds (5 wrong codes, 3 codes) hold regardless.
   */
  take(ip: string): number | undefined {
    const key = clientKey(ip);
    const window = Math.floor(this.clock() / 60_000);
    if (window !== this.window) {
      this.window = window;
      this.seen.clear();
    }
    if (!this.seen.has(key)) {
      if (this.seen.size >= this.maxTracked) return undefined;
      this.seen.add(key);
    }
    if (this.limiter.allow(key)) return undefined;
    return Math.max(1, Math.ceil((60_000 - (this.clock() % 60_000)) / 1000));
  }
}
