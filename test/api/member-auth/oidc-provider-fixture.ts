// A real OpenID provider (panva/oidc-provider) on loopback for the BYO OIDC tests: its discovery document
// and JWKS are the ones a production provider serves, and the ID tokens of the member-auth tests come from
// its own authorization code flow (development login and consent pages driven over HTTP), not from a
// hand-written double.
import type { Test } from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload } from 'jose';

export interface RunningProvider {
  issuer: string;
  port: number;
  /** The provider's signing key, for the few tests that need a token the provider cannot be asked for. */
  signingJwk: JWK;
  /** Signs `sub` in through the provider's code flow and returns the ID token it issues. */
  signIn(opts: SignInOptions): Promise<string>;
  /**
   * An ID token with the claims the caller chooses (nonce, auth_time, acr, amr, ...), signed with the
   * provider's own key: for what the code flow cannot be asked for. Defaults: sub alice, aud bff-client,
   * iat and auth_time now, exp in an hour; a claim set to undefined is left out.
   */
  mint(claims: JWTPayload): Promise<string>;
  /** The public half of the provider's JWKS, as an organization registers it for end-user auth. */
  publicJwk: JWK;
}

export interface SignInOptions {
  sub: string;
  /** The challenge's nonce; omitted: an authentication request without one. */
  nonce?: string;
  clientId?: string;
  /** Sent as max_age, so the ID token carries auth_time. */
  maxAge?: number;
}

export const CLIENT_SECRET = 'not-a-production-secret';
const REDIRECT_URI = 'http://127.0.0.1/cb';

async function listen(t: Test, server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return (server.address() as AddressInfo).port;
}

/**
 * Starts a provider on a free loopback port. `issuerHost` is the host its issuer names: `127.0.0.1`
 * (the address it is reached at) or another, to serve a discovery document naming another issuer.
 * Clients: `bff-client` and `other-client` (confidential, client_secret_basic).
 */
export async function startProvider(t: Test, issuerHost = '127.0.0.1'): Promise<RunningProvider> {
  const server = createServer();
  const port = await listen(t, server);
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-rs256', alg: 'RS256', use: 'sig' };
  const issuer = `http://${issuerHost}:${port}`;
  const provider = new Provider(issuer, {
    clients: ['bff-client', 'other-client'].map((client_id) => ({ client_id, client_secret: CLIENT_SECRET, redirect_uris: [REDIRECT_URI] })),
    jwks: { keys: [jwk] },
  });
  server.on('request', provider.callback());
  const key = await importJWK(jwk, 'RS256');
  const mint = (claims: JWTPayload) => {
    const now = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = { iss: issuer, sub: 'alice', aud: 'bff-client', iat: now, auth_time: now, exp: now + 3600, ...claims };
    for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'JWT' }).sign(key);
  };
  const { kty, n, e, kid, alg, use } = jwk;
  return { issuer, port, signingJwk: jwk, signIn: (o) => signIn(`http://127.0.0.1:${port}`, o), mint, publicJwk: { kty, n, e, kid, alg, use } };
}

/** The authorization code flow, as a browser and a BFF would run it, with a cookie jar. */
async function signIn(base: string, o: SignInOptions): Promise<string> {
  const clientId = o.clientId ?? 'bff-client';
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
  const q = new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid', redirect_uri: REDIRECT_URI, state: 'st', ...(o.nonce !== undefined ? { nonce: o.nonce } : {}), ...(o.maxAge !== undefined ? { max_age: String(o.maxAge) } : {}) });
  let res = await send(`/auth?${q}`);
  for (let step = 0; step < 10; step++) {
    const location = res.headers.get('location');
    if (!location) throw new Error(`the provider answered ${res.status} without a redirect: ${(await res.text()).slice(0, 300)}`);
    const next = new URL(location, base);
    if (next.href.startsWith(REDIRECT_URI)) {
      const code = next.searchParams.get('code');
      if (!code) throw new Error(`no code in the callback: ${next.search}`);
      const token = await fetch(new URL('/token', base), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${CLIENT_SECRET}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
      });
      const body = await token.json() as { id_token?: string };
      if (!body.id_token) throw new Error(`no id_token from the token endpoint: ${JSON.stringify(body)}`);
      return body.id_token;
    }
    if (next.pathname.startsWith('/interaction/')) {
      const page = await (await send(next.pathname)).text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1] ?? 'login';
      res = await send(next.pathname, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(prompt === 'login' ? { prompt, login: o.sub, password: 'x' } : { prompt }).toString() });
    } else {
      res = await send(next.pathname + next.search);
    }
  }
  throw new Error('the sign-in did not finish');
}

/** A loopback port with nothing listening: a server is started, its port read, and it is closed. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
