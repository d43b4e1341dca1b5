// Guards the public branding bundle, which anyone holding a claim token may fetch without a key.
/** A fixed-window counter per client IP for the public endpoint. */
export class IpRateLimiter {
  private readonly hits = new Map<string, { window: number; n: number }>();
  constructor(private readonly perMinute: number, private readonly clock: () => number = Date.now) {}

  allow(ip: string): boolean {
    const window = Math.floor(this.clock() / 60_000);
    if (this.hits.size > 50_000) for (const [k, v] of this.hits) if (v.window !== window) this.hits.delete(k);
    const h = this.hits.get(ip);
    if (!h || h.window !== window) {
      this.hits.set(ip, { window, n: 1 });
      return true;
    }
    h.n++;
    return h.n <= this.perMinute;
  }
}
