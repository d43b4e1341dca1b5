// The OpenID Connect authorization code flow against the local development provider (deploy/oidc/main.ts,
// panva/oidc-provider with its development login and consent pages), driven over HTTP as a browser and a
// BFF would: the authentication request with the caller's nonce, the login page (any password), the
// consent page, the callback's code, and the code exchanged at the token endpoint for the ID token.

/** The confidential clients the development provider registers; their secret is not a secret. */
export const DEV_CLIENTS = ['bff-client', 'other-client'] as const;
export const DEV_CLIENT_SECRET = 'not-a-production-secret';
export const DEV_REDIRECT_URI = 'http://127.0.0.1/cb';

export interface CodeFlowOptions {
  sub: string;
  /** The member-auth challenge's nonce; omitted: an authentication request without one. */
  nonce?: string | undefined;
  clientId?: string | undefined;
  /** Sent as max_age, so the ID token carries auth_time. */
  maxAge?: number | undefined;
}

/**
 * Follows an authorization request at the provider at `base` (its origin) as the browser of `sub`: the
 * login page (any password), the consent page, up to the redirect to the client's callback, whose URL
 * (with the code and state) is returned without redeeming the code.
 */
export async function followAuthorization(base: string, authorizationUrl: string, sub: string): Promise<URL> {
  const jar = new Map<string, string>();
  const send = async (url: string, init: RequestInit = {}) => {
    const res = await fetch(new URL(url, base), { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return res;
  };
  const start = new URL(authorizationUrl, base);
  const callback = start.searchParams.get('redirect_uri') ?? DEV_REDIRECT_URI;
  let res = await send(start.pathname + start.search);
  for (let step = 0; step < 10; step++) {
    const location = res.headers.get('location');
    if (!location) throw new Error(`the provider answered ${res.status} without a redirect: ${(await res.text()).slice(0, 300)}`);
    const next = new URL(location, base);
    if (next.href.startsWith(callback)) return next;
    if (next.pathname.startsWith('/interaction/')) {
      const page = await (await send(next.pathname)).text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1] ?? 'login';
      res = await send(next.pathname, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(prompt === 'login' ? { prompt, login: sub, password: 'x' } : { prompt }).toString() });
    } else {
      res = await send(next.pathname + next.search);
    }
  }
  throw new Error('the sign-in did not finish');
}

/** Signs `sub` in at the provider at `base` (its origin) and returns the ID token it issues. */
export async function codeFlowSignIn(base: string, o: CodeFlowOptions): Promise<string> {
  const clientId = o.clientId ?? 'bff-client';
  const q = new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid', redirect_uri: DEV_REDIRECT_URI, state: 'st', ...(o.nonce !== undefined ? { nonce: o.nonce } : {}), ...(o.maxAge !== undefined ? { max_age: String(o.maxAge) } : {}) });
  const callback = await followAuthorization(base, `/auth?${q}`, o.sub);
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code in the callback: ${callback.search}`);
  const token = await fetch(new URL('/token', base), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${DEV_CLIENT_SECRET}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: DEV_REDIRECT_URI }),
  });
  const body = await token.json() as { id_token?: string };
  if (!body.id_token) throw new Error(`no id_token from the token endpoint: ${JSON.stringify(body)}`);
  return body.id_token;
}
