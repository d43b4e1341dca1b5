// A real OpenID provider (panva/oidc-provider) on loopback for the BYO OIDC tests: its discovery document
// and JWKS are the ones a production provider serves, and the ID tokens of the member-auth tests come from
// its own authorization code flow (development login and consent pages driven over HTTP), not from a
// hand-written double.
import type { Test } from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload } from 'jose';
import { codeFlowSignIn, followAuthorization, DEV_CLIENTS, DEV_CLIENT_SECRET, DEV_REDIRECT_URI } from '../../../deploy/oidc/code-flow.ts';

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
  /**
   * A browser signing `sub` in at an authorization URL a client built: the provider's login and consent,
   * up to the redirect to the client's callback, whose URL (code, state, iss) is returned unredeemed.
   */
  authorize(authorizationUrl: string, sub: string): Promise<URL>;
}

export interface SignInOptions {
  sub: string;
  /** The challenge's nonce; omitted: an authentication request without one. */
  nonce?: string;
  clientId?: string;
  /** Sent as max_age, so the ID token carries auth_time. */
  maxAge?: number;
}

// The code flow and the clients are the local development provider's (deploy/oidc/), which npm start runs on demand.
export const CLIENT_SECRET = DEV_CLIENT_SECRET;

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
    clients: DEV_CLIENTS.map((client_id) => ({ client_id, client_secret: CLIENT_SECRET, redirect_uris: [DEV_REDIRECT_URI] })),
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
  return { issuer, port, signingJwk: jwk, signIn: (o) => codeFlowSignIn(`http://127.0.0.1:${port}`, o), mint,
    authorize: (url, sub) => followAuthorization(`http://127.0.0.1:${port}`, url, sub), publicJwk: { kty, n, e, kid, alg, use } };
}

/** A loopback port with nothing listening: a server is started, its port read, and it is closed. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
