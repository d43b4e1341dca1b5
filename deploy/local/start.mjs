#!/usr/bin/env node
// `npm start`: builds when the sources are newer than the build, then runs a local EVM chain (anvil), a
// local Bitcoin regtest chain (the Esplora-compatible double of deploy/regtest/, docs/bitcoin-regtest.md),
// the coordinator, three service nodes and the API on this machine with embedded LevelDB under ./data/.
// Every port is checked first: one that is taken is named with the process holding it and the setting
// that moves it.
// A second start reuses the same identities, operator key and data; the service-node roster the
// coordinator carries is signed with the operator key, and signed again (a higher version) when the
// node set changes. Ctrl-C stops every child.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { buildIsFresh, dist, markBuild, root, unmarkBuild } from './build-state.mjs';
import { portClashes } from './port-check.mjs';
import { sandboxFunding } from './sandbox-funding.mjs';
import { sandboxTokenization } from './sandbox-tokenization.mjs';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(`usage: npm start [-- --oidc] [--tee-dev]
Runs the whole system on this machine (docs/quickstart.md): a local EVM chain (anvil), a Bitcoin regtest
chain, the coordinator, the service nodes and the API, with their data under ./data/. Ctrl-C stops everything.
--oidc also runs the development OpenID provider members sign in at (docs/quickstart-platform.md): any
user, any password; never for real members.
--tee-dev creates (once) a DEV-ONLY attestation authority in <DATA_DIR>/tee-dev-authority/ and pins its root
on the nodes, the coordinator and the API, so a local \`tee\` node it attests can enrol (docs/tee.md
"Running locally with the dev authority"); never in production.

Settings (environment variables):
  DATA_DIR                where the data is kept (default: ./data)
  API_PORT                the API's port (default: 8080)
  COORDINATOR_PORT        the coordinator's port (default: 7400)
  LOCAL_NODES             how many service nodes (default: 3)
  ANVIL_PORT              the EVM chain's port (default: 8545); ANVIL=off runs none
  ANVIL_BLOCK_TIME        seconds between EVM blocks (default: 1)
  REGTEST_PORT            the Bitcoin regtest chain's port (default: 3002); REGTEST=off runs none
  REGTEST_BLOCK_TIME      seconds between regtest blocks (default: 2)
  SANDBOX_FUNDING=off     no sandbox funding set-up
  OIDC_PORT               with --oidc: the development OpenID provider's port (default: 9400)
  SANDBOX_TOKENIZATION=off  no tokenization set-up (Safe contracts, deployer and relayer keys)
  API_WEBHOOK_ALLOWED_DESTINATIONS, API_CHAIN_BACKENDS: passed to the API (docs/operations.md)
`);
  process.exit(0);
}

const data = resolve(process.env.DATA_DIR ?? join(root, 'data'));
const apiPort = process.env.API_PORT ?? '8080';
const coordinatorPort = process.env.COORDINATOR_PORT ?? '7400';
const nodes = Number(process.env.LOCAL_NODES ?? '3');
const anvilPort = process.env.ANVIL_PORT ?? '8545';
const regtestPort = process.env.REGTEST_PORT ?? '3002';
const oidcPort = process.env.OIDC_PORT ?? '9400';

// The local chains, each skipped when its package is absent (a production install without dev
// dependencies) or when switched off (ANVIL=off, REGTEST=off).
const require = createRequire(import.meta.url);
const resolvable = (name) => {
  try {
    return require.resolve(name);
  } catch {
    return undefined;
  }
};
const anvilPackage = process.env.ANVIL === 'off' ? undefined : resolvable('@foundry-rs/anvil-linux-amd64/package.json');
const anvilBin = anvilPackage ? join(anvilPackage, '..', 'bin', 'anvil') : undefined;
const withAnvil = anvilBin !== undefined && existsSync(anvilBin);
const withRegtest = process.env.REGTEST !== 'off' && resolvable('bitcore-lib') !== undefined;
// The development OpenID provider (deploy/oidc/), on demand only: it signs in anyone.
const withOidc = process.argv.includes('--oidc');
// A DEV-ONLY attestation root for a local `tee` node (docs/tee.md "Running locally with the dev authority").
const withTeeDev = process.argv.includes('--tee-dev');
if (withOidc && resolvable('oidc-provider') === undefined) {
  console.error('[start] --oidc needs the development dependencies (npm install without --omit=dev)');
  process.exit(1);
}

const clashes = await portClashes([
  { name: 'the API', port: apiPort, setting: 'API_PORT' },
  { name: 'the coordinator', port: coordinatorPort, setting: 'COORDINATOR_PORT' },
  ...(withAnvil ? [{ name: 'anvil (evm-local)', port: anvilPort, setting: 'ANVIL_PORT' }] : []),
  ...(withRegtest ? [{ name: 'the Bitcoin regtest double (bitcoin-regtest)', port: regtestPort, setting: 'REGTEST_PORT' }] : []),
  ...(withOidc ? [{ name: 'the development OpenID provider', port: oidcPort, setting: 'OIDC_PORT' }] : []),
]);
if (clashes.length > 0) {
  for (const c of clashes) console.error(`[start] ${c}`);
  process.exit(1);
}

if (!buildIsFresh()) {
  console.log('[start] building...');
  unmarkBuild();
  // tsc's emit without its type check (`npm run build` and `npm test` check): the same JavaScript, in a
  // fraction of the time.
  const r = spawnSync('npm', ['run', 'build', '--', '--noCheck'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  markBuild();
}

mkdirSync(data, { recursive: true });
const children = [];
let stopping = false;

/** Runs a built program (`dist/<script>`), or with `args` any node command line, with its output prefixed. */
function run(name, script, env, args = [join(dist, script)]) {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const print = (chunk) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line) continue;
      let text = line;
      try {
        const j = JSON.parse(line);
        const level = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }[j.level] ?? j.level;
        const { level: _l, time: _t, pid: _p, name: _n, hostname: _h, msg, ...rest } = j;
        const extra = Object.keys(rest).length ? ' ' + JSON.stringify(rest) : '';
        text = `${level} ${msg ?? ''}${extra}`;
      } catch {
        // not JSON: print as is
      }
      console.log(`[${name}] ${text}`);
    }
  };
  child.stdout.on('data', print);
  child.stderr.on('data', print);
  child.on('exit', (code, signal) => {
    console.log(`[${name}] exited (${signal ?? code})`);
    if (!stopping) stop(1);
  });
  children.push({ name, child });
  return child;
}

function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  console.log('[start] stopping...');
  const alive = children.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  if (alive.length === 0) process.exit(code);
  let left = alive.length;
  for (const { child } of alive) {
    child.once('exit', () => {
      if (--left === 0) process.exit(code);
    });
    child.kill('SIGTERM');
  }
  setTimeout(() => {
    for (const { child } of alive) child.kill('SIGKILL');
    process.exit(code || 1);
  }, 8000).unref();
}

// The operator key roots each organization on the nodes (docs/trust.md): made once, kept in the data
// directory; `npm run admin -- org create` signs the organization's bootstrap with it.
const operatorFile = join(data, 'operator.key');
const operatorPublicFile = join(data, 'operator.pub');
if (!existsSync(operatorFile) || !existsSync(operatorPublicFile)) {
  const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  writeFileSync(operatorFile, Buffer.from(jwk.d, 'base64url').toString('hex') + '\n', { mode: 0o600 });
  writeFileSync(operatorPublicFile, Buffer.from(jwk.x, 'base64url').toString('hex') + '\n');
}
const operatorPublic = readFileSync(operatorPublicFile, 'utf8').trim();
// The operator API's secret (docs/operations.md): made once; `npm run admin` sends it to the running API.
const operatorTokenFile = join(data, 'operator-api.token');
if (!existsSync(operatorTokenFile)) writeFileSync(operatorTokenFile, randomBytes(32).toString('base64url') + '\n', { mode: 0o600 });

// The service-node roster (docs/trust.md "Committees"): each node's identity is created (or read) before
// it starts, and the operator signs the list. Nodes refuse a key generation or reshare whose members are
// not on it, and a roster older than one they accepted: a changed node set gets the next version.
function tool(script, env) {
  const r = spawnSync(process.execPath, [join(dist, script), ...env.args], { cwd: root, env: { ...process.env, ...env.vars }, encoding: 'utf8' });
  if (r.status !== 0) {
    console.error(`[start] ${script} failed: ${r.stderr || r.stdout}`);
    process.exit(r.status ?? 1);
  }
  return JSON.parse(r.stdout);
}
// Each node's rollback anchor sits beside its data directory, not in it (docs/storage.md "Rollback
// anchor"): on one machine it only guards against a restore of the directory alone.
const anchorFile = (i) => join(data, `node-${i}.anchor`);
const identityFiles = [];
for (let i = 1; i <= nodes; i++) {
  const id = tool('node/identity-cli.js', { args: [], vars: { NODE_DATA_DIR: join(data, `node-${i}`), NODE_ROLLBACK_ANCHOR_FILE: anchorFile(i), NODE_KIND: 'service' } });
  const file = join(data, `node-${i}.identity.json`);
  writeFileSync(file, JSON.stringify(id) + '\n');
  identityFiles.push({ file, id });
}
const rosterFile = join(data, 'roster.hex');
const rosterInfoFile = join(data, 'roster.json');
const nodeSet = identityFiles.map(({ id }) => `${id.node_id}:${id.signing_key}:${id.encryption_key}`).sort().join(',');
const previous = existsSync(rosterInfoFile) && existsSync(rosterFile) ? JSON.parse(readFileSync(rosterInfoFile, 'utf8')) : undefined;
if (!previous || previous.nodes !== nodeSet) {
  const version = (previous?.version ?? 0) + 1;
  tool('api/admin/main.js', { args: ['roster', 'sign', '--version', String(version), ...identityFiles.flatMap(({ file }) => ['--identity', file]), '--operator-key-file', operatorFile, '--out', rosterFile], vars: {} });
  writeFileSync(rosterInfoFile, JSON.stringify({ version, nodes: nodeSet }) + '\n');
  console.log(`[start] service-node roster version ${version} signed (${nodes} nodes)`);
}

// The local EVM chain (evm-local, chain id 31337): the anvil shipped on npm, its state kept in the
// data directory, mining a block every second (ANVIL_BLOCK_TIME) so transactions gain the confirmations
// `final` needs without anyone mining by hand.
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

if (withAnvil) {
  const anvil = spawn(anvilBin, ['--host', '127.0.0.1', '--port', anvilPort, '--chain-id', '31337', '--block-time', process.env.ANVIL_BLOCK_TIME ?? '1', '--silent', '--state', join(data, 'anvil-state.json')], { stdio: 'ignore' });
  anvil.on('exit', (code, signal) => {
    console.log(`[anvil] exited (${signal ?? code})`);
    if (!stopping) stop(1);
  });
  children.push({ name: 'anvil', child: anvil });
  console.log(`[start] evm-local (anvil) on http://127.0.0.1:${anvilPort}; fund a wallet: ${anvilPort === '8545' ? '' : `ANVIL_URL=http://127.0.0.1:${anvilPort} `}npm run cli -- anvil fund <0x address> <wei>`);
}

// The local Bitcoin chain (bitcoin-regtest): the regtest double, its blocks and mempool kept in the
// data directory, mining every REGTEST_BLOCK_TIME seconds (default 2) when the mempool holds anything;
// `npm run cli -- regtest fund <address> <sats>` is its faucet (docs/bitcoin-regtest.md).
if (withRegtest) {
  run('regtest', undefined, {
    REGTEST_HOST: '127.0.0.1',
    REGTEST_PORT: regtestPort,
    REGTEST_DATA_DIR: join(data, 'regtest'),
    REGTEST_BLOCK_TIME: process.env.REGTEST_BLOCK_TIME ?? '2',
  }, ['--import', 'tsx', join(root, 'deploy', 'regtest', 'main.ts')]);
}

// The development OpenID provider (npm start -- --oidc): its key and public JWKS under data/oidc/; it
// prints its issuer, client and test user (docs/quickstart-platform.md).
if (withOidc) {
  run('oidc', undefined, { OIDC_PORT: oidcPort, OIDC_DATA_DIR: join(data, 'oidc') }, ['--import', 'tsx', join(root, 'deploy', 'oidc', 'main.ts'), 'serve']);
}

// --tee-dev: the development attestation authority, created at the first start and reused after (so a
// document `npm run tee-attest -- --provider dev` signed keeps verifying), pinned on every program that
// checks a TEE enrolment. Each of them warns at start that it accepts a DEV-ONLY root.
let teeEnv = {};
if (withTeeDev) {
  const { openDevAuthorityDir } = await import(join(dist, 'tee', 'attestation', 'dev-authority-dir.js'));
  const { rootFile, created } = openDevAuthorityDir(join(data, 'tee-dev-authority'));
  teeEnv = Object.fromEntries(['NODE', 'COORDINATOR', 'API'].flatMap((p) => [[`${p}_TEE_ALLOW_DEV_ROOT`, 'true'], [`${p}_TEE_ROOTS_FILE`, rootFile]]));
  console.log(`[start] --tee-dev: DEV-ONLY attestation authority ${created ? 'created' : 'reused'} in ${join(data, 'tee-dev-authority')}, its root pinned on the nodes, the coordinator and the API; never in production`);
}

run('coordinator', 'coordinator/main.js', {
  ...teeEnv,
  COORDINATOR_LISTEN: `127.0.0.1:${coordinatorPort}`,
  COORDINATOR_DATA_DIR: join(data, 'coordinator'),
  COORDINATOR_ROSTER_FILE: rosterFile,
});
for (let i = 1; i <= nodes; i++) {
  run(`node-${i}`, 'node/main.js', {
    ...teeEnv,
    NODE_COORDINATOR: `127.0.0.1:${coordinatorPort}`,
    NODE_DATA_DIR: join(data, `node-${i}`),
    NODE_ROLLBACK_ANCHOR_FILE: anchorFile(i),
    NODE_KIND: 'service',
    NODE_OPERATOR_KEYS: operatorPublic,
  });
}
// Funding and off-ramp requests on the sandbox rail, with a local stablecoin (docs/platform/funding.md
// "Sandbox"); SANDBOX_FUNDING=off leaves them unconfigured (503 funding_unavailable).
// Tokenization on evm-local (docs/platform/tokenization.md "Who pays"): the shared Safe infrastructure and
// the deployer's key; SANDBOX_TOKENIZATION=off leaves it unconfigured (what needs a chain answers 422).
// Each from its own anvil account, so the two run side by side.
const [fundingEnv, tokenizationEnv] = await Promise.all([
  withAnvil && process.env.SANDBOX_FUNDING !== 'off'
    ? sandboxFunding({ dist, data, rpcUrl: `http://127.0.0.1:${anvilPort}` }).catch((err) => {
      console.error(`[start] sandbox funding not set up (funding requests answer 503): ${err.message}`);
      return {};
    })
    : {},
  withAnvil && process.env.SANDBOX_TOKENIZATION !== 'off'
    ? sandboxTokenization({ data, rpcUrl: `http://127.0.0.1:${anvilPort}`, load: (path) => import(join(dist, `${path}.js`)), log: (line) => console.log(`[start] ${line}`) })
      .then((r) => r.env, (err) => {
        console.error(`[start] tokenization not set up (deployments answer 422): ${err.message}`);
        return {};
      })
    : {},
]);
run('api', 'api/server.js', {
  ...teeEnv,
  ...fundingEnv,
  ...tokenizationEnv,
  API_HOST: '127.0.0.1',
  API_PORT: apiPort,
  API_DATA_DIR: join(data, 'api'),
  API_COORDINATOR: `127.0.0.1:${coordinatorPort}`,
  API_OPERATOR_KEY_FILE: operatorFile,
  API_OPERATOR_TOKEN_FILE: operatorTokenFile,
  // What GET /v1/node-config tells a customer's node (docs/self-node.md).
  API_NODE_COORDINATOR_ADDRESS: `127.0.0.1:${coordinatorPort}`,
  API_NODE_OPERATOR_KEYS: operatorPublic,
  // Local webhook receivers (plain http on this machine) are allowed here only; production leaves it empty.
  API_WEBHOOK_ALLOWED_DESTINATIONS: process.env.API_WEBHOOK_ALLOWED_DESTINATIONS ?? '127.0.0.1,::1,localhost',
  ...(withAnvil || withRegtest ? {
    API_CHAIN_BACKENDS: process.env.API_CHAIN_BACKENDS ?? [
      withAnvil ? `evm-local=http://127.0.0.1:${anvilPort}` : '',
      withRegtest ? `bitcoin-regtest=http://127.0.0.1:${regtestPort}` : '',
    ].filter(Boolean).join(','),
  } : {}),
});
// The CLI's own defaults are these ports: a moved one is named in the hint.
const regtestUrlHint = regtestPort === '3002' ? '' : `REGTEST_URL=http://127.0.0.1:${regtestPort} `;
if (withRegtest) console.log(`[start] bitcoin-regtest (Esplora API) on http://127.0.0.1:${regtestPort}; fund a wallet: ${regtestUrlHint}npm run cli -- regtest fund <address> <sats>`);
console.log(`[start] API on http://127.0.0.1:${apiPort} (readiness: /readyz; API reference: http://127.0.0.1:${apiPort}/docs); CLI: CUSTODY_URL=http://127.0.0.1:${apiPort}; data in ${data}; Ctrl-C stops everything`);
console.log(`[start] operator tasks on the running API: API_OPERATOR_API_URL=http://127.0.0.1:${apiPort} API_OPERATOR_TOKEN_FILE=${operatorTokenFile} API_OPERATOR_KEY_FILE=${operatorFile} npm run admin -- org create --name <name> --public-key <hex> (docs/quickstart.md)`);
