// The whole system as real processes for end-to-end tests: an organization made by the operator
// command, the coordinator, three service nodes (and optionally the organization's self node), the API
// with chain backends (a real anvil, the Esplora regtest double), and an SDK client.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, freePort, TEST_RATE_LIMITS, waitUntil, type Proc } from '../cluster/cluster-harness.ts';
import { startAnvil, type Anvil } from '../chains/anvil.ts';
import { EsploraDouble } from '../chains/esplora-double.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

const root = resolve(import.meta.dirname, '../..');

export interface Stack {
  cluster: Cluster;
  /** The settings every node of the stack was started with (operator keys and `nodeEnv`). */
  nodeEnv: Record<string, string>;
  client: CustodyClient;
  organization: string;
  apiKeyId: string;
  secretKey: Uint8Array;
  anvil?: Anvil;
  esplora?: EsploraDouble;
  base: string;
  /** With `bearerKey`: a bearer key of the organization's linked sandbox workspace (platform API), of role `bearerRole` (default developer), and its id. */
  bearer?: string;
  bearerKeyId?: string;
  /** With `moreKeys`: one more bearer key of the sandbox workspace per role asked, in that order. */
  keys: { role: string; bearer: string; keyId: string }[];
  /** The API's settings beyond the harness's own (chain backends and `apiEnv`): what restarts it as it was. */
  apiEnv: Record<string, string>;
  /** The organization's linked sandbox workspace. */
  sandbox: string;
  stop(): Promise<void>;
}

/** Runs the operator command against the API's data directory (the API must not be running). */
export function admin(cluster: Cluster, args: string[], env: Record<string, string> = {}): Record<string, string> {
  const out = execFileSync(PROGRAM_LAUNCHER, [...programArgs('api/admin/main.ts'), ...args], {
    cwd: root, env: { PATH: process.env.PATH ?? '', API_DATA_DIR: join(cluster.dir, 'api'), ...env }, encoding: 'utf8',
  });
  return JSON.parse(out) as Record<string, string>;
}

/**
 * `apiEnv`: the API's extra settings, or a function of the anvil started for the stack that returns them
 * (to deploy contracts the API is configured with before it starts).
 */
export async function startStack(opts: {
  selfNode?: boolean; anvil?: boolean; esplora?: boolean; bearerKey?: boolean; bearerRole?: string;
  /** Roles of further bearer keys of the sandbox workspace, made offline like the first. */
  moreKeys?: string[];
  /** Serve the API as http://localhost:<port> (its API_PUBLIC_URL, and the clients' base): a browser's secure context and a WebAuthn RP ID. */
  localhost?: boolean;
  apiEnv?: Record<string, string> | ((anvil: Anvil | undefined, cluster: Cluster) => Promise<Record<string, string>>);
  nodeEnv?: Record<string, string>; coordinatorEnv?: Record<string, string>;
} = {}): Promise<Stack> {
  const cluster = new Cluster();
  const secretKey = ed25519.utils.randomSecretKey();
  const publicKey = bytesToHex(ed25519.getPublicKey(secretKey));
  // The operator key roots every organization on the nodes: the operator command signs the
  // organization's bootstrap, and the nodes learn everything else from the trust log the API carries.
  const operator = ed25519.utils.randomSecretKey();
  const operatorFile = join(cluster.dir, 'operator.key');
  writeFileSync(operatorFile, bytesToHex(operator), { mode: 0o600 });
  const { organization, api_key_id: apiKeyId, sandbox_workspace: sandbox } = admin(cluster, ['org', 'create', '--name', 'Acme', '--public-key', publicKey], { API_OPERATOR_KEY_FILE: operatorFile }) as { organization: string; api_key_id: string; sandbox_workspace: string };
  // Made offline too: the operator command and the API do not hold the store at once.
  const bearerKey = opts.bearerKey ? admin(cluster, ['key', 'create', '--workspace', sandbox, '--role', opts.bearerRole ?? 'developer']) : undefined;
  const keys = (opts.moreKeys ?? []).map((role) => {
    const k = admin(cluster, ['key', 'create', '--workspace', sandbox, '--role', role]);
    return { role, bearer: k.bearer_token!, keyId: k.key_id! };
  });
  const nodeEnv = { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)), ...opts.nodeEnv };
  // Protocol steps run on a node's event loop (an OT setup holds it for seconds on a loaded machine):
  // the default heartbeat keeps such a node attached.
  await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000', ...opts.coordinatorEnv });
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, nodeEnv)));
  // Read before the node holds its store: what `npm run node-identity` prints.
  const selfIdentity = opts.selfNode ? await cluster.identity('self-1') : undefined;
  if (opts.selfNode) await cluster.startNode('self-1', { ...nodeEnv, NODE_KIND: 'self', NODE_OWNER: organization });
  const anvil = opts.anvil ? await startAnvil() : undefined;
  const esplora = opts.esplora ? new EsploraDouble() : undefined;
  if (esplora) await esplora.start();
  const backends = [anvil ? `evm-local=${anvil.url}` : '', esplora ? `bitcoin-regtest=${esplora.url}` : ''].filter(Boolean).join(',');
  if (opts.localhost) cluster.apiPort ||= await freePort();
  const apiEnv = {
    ...(backends ? { API_CHAIN_BACKENDS: backends } : {}), ...(opts.localhost ? { API_PUBLIC_URL: `http://localhost:${cluster.apiPort}` } : {}),
    ...(typeof opts.apiEnv === 'function' ? await opts.apiEnv(anvil, cluster) : opts.apiEnv),
  };
  await cluster.startApi(apiEnv);
  const base = `http://${opts.localhost ? 'localhost' : '127.0.0.1'}:${cluster.apiPort}`;
  const client = new CustodyClient({ baseUrl: base, organization, keyId: apiKeyId, secretKey });
  // The organization enrols its self node, as docs/self-node.md has a customer do.
  if (selfIdentity) await client.enrolNode({ kind: 'self', ...selfIdentity });
  return {
    cluster, nodeEnv, apiEnv, client, organization, apiKeyId, secretKey, base, sandbox, keys, ...(bearerKey ? { bearer: bearerKey.bearer_token!, bearerKeyId: bearerKey.key_id! } : {}),
    ...(anvil ? { anvil } : {}), ...(esplora ? { esplora } : {}),
    async stop() {
      // E2E_LOG_DIR keeps every process's log lines for a look after a failure.
      if (process.env.E2E_LOG_DIR) for (const p of cluster.procs) writeFileSync(join(process.env.E2E_LOG_DIR, `${p.name}.log`), p.raw.join('\n'));
      await cluster.stop();
      await anvil?.stop();
      await esplora?.stop();
    },
  };
}

/**
 * Starts one more API process of `cluster` on a port of its own, with its own data directory (uploads,
 * and the store unless `env` names a database), and waits for its /healthz: several such processes on
 * one API_DATABASE_URL are the instances of one deployment.
 */
export async function startApiInstance(cluster: Cluster, name: string, env: Record<string, string>): Promise<{ proc: Proc; base: string }> {
  const port = await freePort();
  const dataDir = join(cluster.dir, name);
  mkdirSync(dataDir, { recursive: true });
  const proc = cluster.spawn(name, 'api/server.ts', {
    ...TEST_RATE_LIMITS, API_HOST: '127.0.0.1', API_PORT: String(port), API_DATA_DIR: dataDir, API_COORDINATOR: `127.0.0.1:${cluster.coordinatorPort}`, ...env,
  });
  const base = `http://127.0.0.1:${port}`;
  await waitUntil(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true, 30_000, `${name} healthz`);
  return { proc, base };
}

/** Keeps producing blocks while `until` is pending, so confirmations and finality advance. */
export async function mining<T>(mine: () => Promise<unknown> | void, until: Promise<T>, everyMs = 300): Promise<T> {
  let done = false;
  const loop = (async () => {
    while (!done) {
      await mine();
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    return await until;
  } finally {
    done = true;
    await loop;
  }
}
