// `npm run oidc`: the local development OpenID provider (panva/oidc-provider, the one the member-auth
// tests sign in at), for trying member sign-in on this machine (docs/quickstart-platform.md). `npm start
// -- --oidc` runs `serve` beside the stack. Development only: its login page accepts any user with any
// password, and its client secret is printed. Never a provider for real members.
//
//   serve                      the provider on 127.0.0.1:OIDC_PORT (default 9400), its signing key kept in
//                              OIDC_DATA_DIR (default ./data/oidc) with the public JWKS beside it (jwks.json)
//   sign-in --user <sub> [--nonce <nonce>] [--max-age <s>] [--client <id>]
//                              signs <sub> in through the code flow at OIDC_URL (default
//                              http://127.0.0.1:9400) and prints {"sub", "id_token"}
import { createServer } from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { codeFlowSignIn, DEV_CLIENTS, DEV_CLIENT_SECRET, DEV_REDIRECT_URI } from './code-flow.ts';

const USAGE = `usage: npm run oidc -- <command>
  serve                      the development OpenID provider on 127.0.0.1:$OIDC_PORT (default 9400); its key and
                             public JWKS (jwks.json) under $OIDC_DATA_DIR (default ./data/oidc). npm start -- --oidc runs it.
  sign-in --user <sub> [--nonce <nonce>] [--max-age <s>] [--client <id>]
                             signs <sub> in at $OIDC_URL (default http://127.0.0.1:9400) through the code flow
                             and prints {"sub", "id_token"}; any user name, no password needed
Development only: any user signs in. Clients: ${DEV_CLIENTS.join(', ')} (secret ${DEV_CLIENT_SECRET}).`;

/** The signing key, made once and kept, so a restart keeps the JWKS an organization registered. */
async function signingKey(dir: string): Promise<JWK> {
  const file = join(dir, 'signing-key.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as JWK;
  mkdirSync(dir, { recursive: true });
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'dev-rs256', alg: 'RS256', use: 'sig' };
  writeFileSync(file, JSON.stringify(jwk) + '\n', { mode: 0o600 });
  return jwk;
}

async function serve(): Promise<void> {
  const port = Number(process.env.OIDC_PORT ?? '9400');
  const dir = resolve(process.env.OIDC_DATA_DIR ?? join('data', 'oidc'));
  const jwk = await signingKey(dir);
  const { kty, n, e, kid, alg, use } = jwk;
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ kty, n, e, kid, alg, use }] }) + '\n');
  const issuer = `http://127.0.0.1:${port}`;
  // Loaded here only: the package warns on standard error when imported, which --help and sign-in need not show.
  const { default: Provider } = await import('oidc-provider');
  const provider = new Provider(issuer, {
    clients: DEV_CLIENTS.map((client_id) => ({ client_id, client_secret: DEV_CLIENT_SECRET, redirect_uris: [DEV_REDIRECT_URI] })),
    jwks: { keys: [jwk] },
  });
  const server = createServer(provider.callback());
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(port, '127.0.0.1', ok));
  const hint = port === 9400 ? '' : `OIDC_URL=${issuer} `;
  console.log(`development OpenID provider (any user, any password) at ${issuer}; client bff-client, secret ${DEV_CLIENT_SECRET}; public JWKS in ${jwksFile}; test user: alice, signed in by ${hint}npm run oidc -- sign-in --user alice --nonce=<challenge nonce>`);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return argv.length === 0 ? 64 : 0;
  }
  const [command, ...rest] = argv;
  if (command === 'serve' && rest.length === 0) {
    await serve();
    return -1;
  }
  if (command === 'sign-in') {
    const { values } = parseArgs({ args: rest, options: { user: { type: 'string' }, nonce: { type: 'string' }, 'max-age': { type: 'string' }, client: { type: 'string' } }, strict: true });
    if (!values.user) throw new UsageError('sign-in needs --user <sub>');
    const maxAge = values['max-age'] === undefined ? undefined : Number(values['max-age']);
    if (maxAge !== undefined && !(Number.isInteger(maxAge) && maxAge >= 0)) throw new UsageError('--max-age is whole seconds');
    const base = (process.env.OIDC_URL ?? 'http://127.0.0.1:9400').replace(/\/$/, '');
    const idToken = await codeFlowSignIn(base, { sub: values.user, nonce: values.nonce, maxAge, clientId: values.client }).catch((err: unknown) => {
      if ((err as Error)?.message === 'fetch failed') throw new Error(`no provider answers at ${base}: start it with npm start -- --oidc (or npm run oidc -- serve)`);
      throw err;
    });
    process.stdout.write(JSON.stringify({ sub: values.user, id_token: idToken }) + '\n');
    return 0;
  }
  throw new UsageError(`unknown command: ${argv.join(' ')}`);
}

class UsageError extends Error {}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exitCode = code;
}, (err: unknown) => {
  const usage = err instanceof UsageError || (err as { code?: string })?.code?.startsWith('ERR_PARSE_ARGS');
  process.stderr.write(`oidc: ${(err as Error)?.message ?? String(err)}${usage ? ' (npm run oidc -- --help)' : ''}\n`);
  process.exitCode = usage ? 64 : 1;
});
