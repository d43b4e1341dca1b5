// The BFF's browser cookies (platform-api.md "BFF helper and browser rules"; docs/platform/bff.md
// "Cookies"). The durable application cookie is host-only (`__Host-` prefix, so Secure, Path=/ and no
// Domain, RFC 6265bis 4.1.3.2), HttpOnly and SameSite=Strict; the flow cookie that carries a sign-in
// transaction across the provider's callback is short-lived and SameSite=Lax (a top-level redirect back
// from the provider must carry it), also `__Host-`, HttpOnly and Secure.
//
// Each holds one opaque random reference and nothing else: the member session id, the refresh credential,
// the ID token and the bearer key stay in the BFF store on the server. Anything else is refused here,
// rather than trusted to every caller.
import { BffError } from './bff-error.ts';

export const SESSION_COOKIE = '__Host-bff-session';
export const FLOW_COOKIE = '__Host-bff-flow';

/** 256 random bits after a prefix that names what the value refers to, never what it grants. */
export const SESSION_REFERENCE = /^bfr_[A-Za-z0-9_-]{43}$/;
export const TRANSACTION_ID = /^bft_[A-Za-z0-9_-]{43}$/;

/** The durable cookie's default life: a sign-in (a session family) lasts at most 30 days at the API. */
export const SESSION_COOKIE_MAX_AGE = 30 * 24 * 3600;
/** The flow cookie's default and longest life: the callback comes back within minutes. */
export const FLOW_COOKIE_MAX_AGE = 600;
export const FLOW_COOKIE_MAX_AGE_LIMIT = 900;

// RFC 6265 cookie-name token characters.
const NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

// Shapes of the secrets a cookie must never carry, named so the refusal says what went wrong.
const SECRET_SHAPES: [RegExp, string][] = [
  [/^mss_/, 'a member session id'],
  [/^mrc_/, 'a refresh credential'],
  [/^mas_/, 'a member-action signing session id'],
  [/^svc_(test|live)_/, 'a workspace bearer key'],
  [/^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\./, 'a JWT (ID or access token)'],
  [/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/, 'a compact JWS/JWT'],
];

function refuse(why: string): never {
  throw new BffError('cookie_refused', why);
}

function checkValue(value: string, shape: RegExp, what: string): void {
  for (const [re, name] of SECRET_SHAPES) if (re.test(value)) refuse(`a cookie never carries ${name}: only an opaque ${what} (kept server-side: the BFF store)`);
  if (!shape.test(value)) refuse(`the cookie value is not an opaque ${what} (${shape.source})`);
}

function checkName(name: string): void {
  if (!NAME.test(name)) refuse(`cookie name ${JSON.stringify(name)} is not an RFC 6265 token`);
  // The prefix is what makes the browser enforce Secure, Path=/ and no Domain: without it a sibling
  // subdomain could plant or shadow the cookie.
  if (!name.startsWith('__Host-')) refuse(`cookie ${name} must carry the __Host- prefix (host-only, Secure, Path=/)`);
}

function checkMaxAge(maxAge: number, limit: number): void {
  if (!Number.isInteger(maxAge) || maxAge < 1 || maxAge > limit) refuse(`Max-Age must be a whole number of seconds from 1 to ${limit}`);
}

export interface CookieOptions {
  /** Defaults: SESSION_COOKIE or FLOW_COOKIE; any other name must start with __Host-. */
  name?: string;
  /** Seconds. */
  maxAge?: number;
}

/** Set-Cookie of the durable application cookie holding a BFF session reference. */
export function serializeSessionCookie(reference: string, o: CookieOptions = {}): string {
  const name = o.name ?? SESSION_COOKIE;
  checkName(name);
  checkValue(reference, SESSION_REFERENCE, 'BFF session reference');
  const maxAge = o.maxAge ?? SESSION_COOKIE_MAX_AGE;
  checkMaxAge(maxAge, SESSION_COOKIE_MAX_AGE);
  return `${name}=${reference}; Path=/; Max-Age=${maxAge}; Secure; HttpOnly; SameSite=Strict`;
}

/** Set-Cookie of the short-lived flow cookie holding a sign-in transaction id. */
export function serializeFlowCookie(transactionId: string, o: CookieOptions = {}): string {
  const name = o.name ?? FLOW_COOKIE;
  checkName(name);
  checkValue(transactionId, TRANSACTION_ID, 'sign-in transaction id');
  const maxAge = o.maxAge ?? FLOW_COOKIE_MAX_AGE;
  checkMaxAge(maxAge, FLOW_COOKIE_MAX_AGE_LIMIT);
  return `${name}=${transactionId}; Path=/; Max-Age=${maxAge}; Secure; HttpOnly; SameSite=Lax`;
}

/** Set-Cookie that removes the durable cookie (the attributes must match for the browser to replace it). */
export function clearSessionCookie(name = SESSION_COOKIE): string {
  checkName(name);
  return `${name}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Strict`;
}

export function clearFlowCookie(name = FLOW_COOKIE): string {
  checkName(name);
  return `${name}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax`;
}

/** Every value of each cookie of a Cookie request header, in order. */
export function parseCookieHeader(header: string | undefined): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const name = part.slice(0, at).trim();
    let value = part.slice(at + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!name) continue;
    out.set(name, [...(out.get(name) ?? []), value]);
  }
  return out;
}

// A name sent twice is ambiguous (which one did the server set?): no reference rather than a guess.
function single(header: string | undefined, name: string, shape: RegExp): string | undefined {
  const values = parseCookieHeader(header).get(name);
  if (!values || values.length !== 1) return undefined;
  return shape.test(values[0]!) ? values[0] : undefined;
}

/** The BFF session reference of a Cookie header, or undefined when absent, malformed or sent twice. */
export function readSessionReference(cookieHeader: string | undefined, name = SESSION_COOKIE): string | undefined {
  return single(cookieHeader, name, SESSION_REFERENCE);
}

/** The sign-in transaction id of a Cookie header, or undefined when absent, malformed or sent twice. */
export function readTransactionId(cookieHeader: string | undefined, name = FLOW_COOKIE): string | undefined {
  return single(cookieHeader, name, TRANSACTION_ID);
}
