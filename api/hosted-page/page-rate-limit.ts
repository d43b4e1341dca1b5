// The per-client-address limit on the Hosted Auth and Account Center pages' form POSTs
// (docs/platform/hosted-auth.md "Limits"): on top of the per-authorization bounds (5 wrong codes, 3 codes),
// one address (an IPv6 /64) may post only so many forms a minute, whatever authorizations it spreads them
// over. Counted by the API's rate limits (api/rate-limits/rate-limits.ts), on the store every instance
// shares; both pages share one budget.
import type { AddressLimit } from '../rate-limits/rate-limits.ts';

/** Default form POSTs per client address per minute (API_HOSTED_PAGE_RATE_PER_MINUTE). */
export const DEFAULT_PAGE_RATE_PER_MINUTE = 30;

/** The pages' budget: `perMinute` form POSTs per client address. */
export function pageRateLimit(perMinute: number = DEFAULT_PAGE_RATE_PER_MINUTE): AddressLimit {
  return { policy: 'hosted_page_forms', max: perMinute, windowMs: 60_000 };
}
