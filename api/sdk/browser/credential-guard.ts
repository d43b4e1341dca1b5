// What the browser package never takes (platform-api.md "BFF helper and browser rules", last item): an
// API key, a provider proof, a session id, an access or refresh token, or a caller-supplied
// authorization header. Options, headers and arguments are walked before anything is sent, by name and by
// the shape of their values, and the first credential found is refused with `credential_refused`.
import { BffBrowserError } from './bff-browser-error.ts';

// Names compared lowercased with `-` and `_` dropped: `api_key`, `apiKey` and `Api-Key` are one name.
const CREDENTIAL_NAMES = new Set([
  'apikey', 'apitoken', 'bearer', 'bearertoken', 'secretkey', 'clientsecret', 'token', 'accesstoken', 'refreshtoken',
  'refreshcredential', 'idtoken', 'oidctoken', 'proof', 'providerproof', 'providertoken', 'sessionid', 'membersessionid',
  'session', 'authorization', 'proxyauthorization', 'cookie', 'xmembersessionid', 'xoidcidtoken', 'xsvcpublishablekey',
  'xenduserid', 'xaccountholderid', 'xapikey', 'signingkey', 'signature',
]);

// Values that are a credential whatever they are called, named so the refusal says what it looked like.
const CREDENTIAL_VALUES: [RegExp, string][] = [
  [/^\s*(bearer|basic|dpop)\s+\S/i, 'an authorization header value'],
  [/^svc_(test|live)_/, 'a workspace API key'],
  [/^mss_/, 'a member session id'],
  [/^mrc_/, 'a refresh credential'],
  [/^mas_/, 'a member-action signing session id'],
  [/^bfr_/, 'a BFF session reference (it lives in an HttpOnly cookie)'],
  [/^(hrc|acr)_/, 'a one-time sign-in or Account Center result'],
  [/^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/, 'a JWT (an ID, access or refresh token)'],
  [/^[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*$/, 'a compact JWS (a token)'],
];

const normal = (name: string) => name.toLowerCase().replace(/[-_\s]/g, '');

function refuse(where: string, what: string): never {
  throw new BffBrowserError('credential_refused', `${where} carries ${what}: the browser never holds a credential; the same-origin BFF adds what the API needs from the server-held session`);
}

/** Refuses `name` when it names a credential. */
export function checkName(name: string, where: string): void {
  if (CREDENTIAL_NAMES.has(normal(name))) refuse(`${where} ${JSON.stringify(name)}`, 'a credential by its name');
}

/** Refuses a string value shaped like a credential. */
export function checkValue(value: string, where: string): void {
  for (const [re, what] of CREDENTIAL_VALUES) if (re.test(value)) refuse(where, what);
}

/** Walks a value (an options object, an argument, a body): every key by name, every string by shape. */
export function checkNoCredential(value: unknown, where: string, depth = 0): void {
  if (depth > 8) throw new BffBrowserError('invalid_argument', `${where} is nested too deeply`);
  if (typeof value === 'string') return checkValue(value, where);
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkNoCredential(v, `${where}[${i}]`, depth + 1));
    return;
  }
  // Bytes (an avatar image) are not walked: they are sent as they are, never as a header.
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || (typeof Blob !== 'undefined' && value instanceof Blob)) return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    checkName(k, where === '' ? 'option' : `${where}:`);
    checkNoCredential(v, `${where}.${k}`, depth + 1);
  }
}

/** Extra headers of the caller: none may be an authorization or session header, or carry a credential. */
export function checkHeaders(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') throw new BffBrowserError('invalid_argument', `header ${JSON.stringify(name)} must be a string`);
    checkName(name, 'header');
    // A header named for a token or a key, under any spelling: `X-Access-Token`, `X-Custom-Auth`.
    if (/token|auth|session|secret|api-?key|credential/i.test(name)) refuse(`header ${JSON.stringify(name)}`, 'a credential by its name');
    checkValue(value, `header ${JSON.stringify(name)}`);
  }
}
