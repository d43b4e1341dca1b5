// The exact origins and URLs member authentication is pinned to (docs/platform/member-auth.md,
// platform-api.md "Confidential exchange rules" 11-12): an allowed origin is `scheme://host[:port]` and
// nothing else, a redirect URL an absolute URL without fragment; neither takes a wildcard. Production
// workspaces take https only; a sandbox workspace also takes plain http to loopback (local development).
// What is stored is the normalized form: lower-case host, default port dropped (WHATWG URL).
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Environment } from '../tenancy/tenancy-service.ts';

export const MAX_URL = 2048;

/** Names and literals that always mean this machine (RFC 6761, RFC 1122, RFC 4291). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::1';
}

const refuse = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

/** The scheme rule: https, or http to loopback in a sandbox workspace; production takes no loopback. */
function checkScheme(u: URL, environment: Environment, field: string): void {
  const loopback = isLoopbackHost(u.hostname);
  if (environment === 'production') {
    if (u.protocol !== 'https:') throw refuse(field, 'must use https in a production workspace');
    if (loopback) throw refuse(field, 'must not be a loopback address in a production workspace');
    return;
  }
  if (u.protocol === 'https:') return;
  if (u.protocol === 'http:' && loopback) return;
  throw refuse(field, 'must use https (plain http is allowed only to loopback, in a sandbox workspace)');
}

function parse(text: string, field: string): URL {
  if (text.length === 0 || text.length > MAX_URL) throw refuse(field, `must be 1 to ${MAX_URL} characters`);
  // Wildcards and whitespace are refused before parsing, which would otherwise percent-encode them.
  if (/[*\s\\]/.test(text)) throw refuse(field, 'must be exact: no wildcard, whitespace or backslash');
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw refuse(field, 'must be an absolute URL');
  }
  if (u.username || u.password || /@/.test(text.split(/[/?#]/, 3).slice(0, 3).join('/'))) throw refuse(field, 'must not carry credentials');
  return u;
}

/**
 * An exact origin, normalized: `https://App.Example.com:443` becomes `https://app.example.com`. A path
 * (even `/`), query, fragment, credentials or wildcard is refused.
 */
export function normalizeOrigin(text: string, environment: Environment, field = 'origin'): string {
  if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#@]+$/.test(text)) throw refuse(field, 'must be scheme://host[:port] with no path, query, fragment or credentials');
  const u = parse(text, field);
  checkScheme(u, environment, field);
  if (u.origin === 'null') throw refuse(field, 'must be an http(s) origin');
  return u.origin;
}

/**
 * An exact redirect URL, normalized as `normalizeOrigin` normalizes its origin (the path and query are
 * kept as given, after WHATWG percent-encoding). A fragment or wildcard is refused.
 */
export function normalizeRedirectUrl(text: string, environment: Environment, field = 'url'): { url: string; origin: string } {
  if (text.includes('#')) throw refuse(field, 'must not have a fragment');
  const u = parse(text, field);
  checkScheme(u, environment, field);
  return { url: u.href, origin: u.origin };
}

/**
 * An OIDC issuer: kept exactly as given (it is compared with the discovery document's `issuer` as a
 * string, OpenID Connect Discovery 1.0 section 4.3), so it must already be in normal form; no query,
 * fragment or credentials (section 2). The scheme rule is the origins' one.
 */
export function checkIssuer(text: string, environment: Environment): string {
  const u = parse(text, 'issuer');
  checkScheme(u, environment, 'issuer');
  if (u.search || text.includes('?')) throw refuse('issuer', 'must not have a query');
  if (u.hash || text.includes('#')) throw refuse('issuer', 'must not have a fragment');
  // `https://id.example.com` parses to href `https://id.example.com/`: either spelling is exact; a
  // different case, port spelling or encoding is not, as the provider would never answer with it.
  if (u.href !== text && u.href !== `${text}/`) throw refuse('issuer', `must be written in normal form (${u.pathname === '/' ? u.origin : u.href})`);
  return text;
}

/** Where the discovery document of `issuer` is: its path without a trailing `/`, then the well-known name (Discovery 1.0 section 4). */
export function discoveryUrlOf(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
}
