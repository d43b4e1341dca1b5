// The BFF's check that a call of its member routes comes from its own pages (docs/platform/bff.md "CSRF").
// The durable cookie is SameSite=Strict, so another site's page cannot make the browser send it; this
// check is the second lock, for what SameSite does not cover (a sibling subdomain is same-site, an old
// browser ignores the attribute):
//
// - the browser package's header (BFF_CSRF_HEADER) on every call: a page of another origin cannot add a
//   custom header without a CORS preflight, which the BFF never answers with a grant;
// - `Sec-Fetch-Site`, when the browser sends it, is `same-origin`;
// - `Origin`, when sent (browsers send it on every POST, PUT and DELETE), is exactly the BFF's origin.
import { BffError } from './bff-error.ts';
import { BFF_CSRF_HEADER, BFF_CSRF_VALUE } from './browser/bff-routes.ts';

export { BFF_CSRF_HEADER, BFF_CSRF_VALUE };

/** The request as Node's `IncomingMessage` (and Fastify's request) has its headers: lowercase names. */
export interface BffRequestHeaders {
  headers: Record<string, string | string[] | undefined>;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

/**
 * Throws BffError `csrf_refused` unless the call carries the browser package's header from the BFF's own
 * origin. `resource: true` is for a GET that an element of the page loads (an `<img>`, a download link),
 * which cannot add a header: only the fetch metadata and the Origin are checked (answer it with
 * `Cross-Origin-Resource-Policy: same-origin`).
 */
export function checkBffRequest(req: BffRequestHeaders, o: { origin: string; resource?: boolean }): void {
  const expected = new URL(o.origin).origin;
  if (!o.resource && one(req.headers[BFF_CSRF_HEADER]) !== BFF_CSRF_VALUE) throw new BffError('csrf_refused', `the call carries no ${BFF_CSRF_HEADER} header: only the BFF's own pages (the browser package) call these routes`);
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && one(site) !== 'same-origin') throw new BffError('csrf_refused', `the call comes from ${JSON.stringify(one(site) ?? 'several sites')}, not from the BFF's own origin`);
  const origin = req.headers.origin;
  if (origin !== undefined && one(origin) !== expected) throw new BffError('csrf_refused', 'the call\'s Origin is not the BFF\'s');
}
