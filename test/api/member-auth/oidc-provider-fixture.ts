// A real OpenID provider (panva/oidc-provider) on loopback for the BYO OIDC discovery tests: its
// discovery document and JWKS are the ones a production provider serves, not a hand-written double.
import type { Test } from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair } from 'jose';

export interface RunningProvider { issuer: string; port: number }

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
 */
export async function startProvider(t: Test, issuerHost = '127.0.0.1'): Promise<RunningProvider> {
  const server = createServer();
  const port = await listen(t, server);
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-rs256', alg: 'RS256', use: 'sig' };
  const issuer = `http://${issuerHost}:${port}`;
  const provider = new Provider(issuer, {
    clients: [{ client_id: 'bff-client', client_secret: 'not-used-by-these-tests', redirect_uris: ['http://127.0.0.1/cb'] }],
    jwks: { keys: [jwk] },
  });
  server.on('request', provider.callback());
  return { issuer, port };
}

/** A loopback port with nothing listening: a server is started, its port read, and it is closed. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
