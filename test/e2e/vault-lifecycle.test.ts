// Real processes: coordinator, three nodes and the API. The operator creates an organization, the
// customer signs requests with its own key, creates a hosted vault (key generation runs through the
// cluster), polls it to active, and derives wallets whose Taproot key the cluster can sign for.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, waitUntil } from '../cluster/cluster-harness.ts';
import { signedHeaders, type ApiCredentials } from '../../api/sdk/request-signer.ts';

const root = resolve(import.meta.dirname, '../..');

t.test('organization -> signed requests -> hosted vault active -> wallets', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  await cluster.startCoordinator();
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n)));

  // Operator command, before the API holds its store.
  const secret = ed25519.utils.randomSecretKey();
  const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'api/admin/main.ts'), 'org', 'create', '--name', 'Acme', '--public-key', bytesToHex(ed25519.getPublicKey(secret))], {
    cwd: root, env: { PATH: process.env.PATH ?? '', API_DATA_DIR: join(cluster.dir, 'api') }, encoding: 'utf8',
  });
  const { organization, api_key_id } = JSON.parse(out) as { organization: string; api_key_id: string };
  t.match(organization, /^org_/);
  const creds: ApiCredentials = { keyId: api_key_id, secretKey: secret };

  await cluster.startApi();
  const base = `http://127.0.0.1:${cluster.apiPort}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const res = await fetch(base + path, { method, body: payload, headers: signedHeaders(creds, method, base + path, payload) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  t.equal((await fetch(base + '/v1/api-keys')).status, 401, 'unsigned requests are refused');
  const keys = await call('GET', '/v1/api-keys');
  t.equal(keys.status, 200);

  const created = await call('POST', '/v1/vaults', { tier: 'hosted', name: 'ops' });
  t.equal(created.status, 202);
  t.equal(created.body.state, 'creating');
  const id = created.body.id as string;
  let vault: Record<string, unknown> = created.body;
  await waitUntil(async () => {
    vault = (await call('GET', `/v1/vaults/${id}`)).body;
    return vault.state === 'active';
  }, 60_000, 'vault to become active');
  t.match(vault.public_key, /^0[23][0-9a-f]{64}$/, 'compressed public key');
  t.equal(vault.rotation, 0);

  const evm = await call('POST', `/v1/vaults/${id}/wallets`, { chain: 'evm-local' });
  t.equal(evm.status, 201);
  t.match(evm.body.address, /^0x[0-9a-fA-F]{40}$/);
  const tr = await call('POST', `/v1/vaults/${id}/wallets`, { chain: 'bitcoin-regtest', address_type: 'p2tr' });
  t.match(tr.body.address, /^bcrt1p/);
});
