// The operator's tasks against a real running API process, through `npm run admin` with
// API_OPERATOR_API_URL: customers (idempotent), the organization list, a first key for an organization
// the nodes know no key of, tenants, workspace keys and their revocation, freezing a vault, linking an
// organization made before customers; each audit-logged, while the API keeps serving; and the operator
// secret is required.
import t from 'tap';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, freePort, waitUntil } from '../cluster/cluster-harness.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TenancyService } from '../../api/tenancy/tenancy-service.ts';
import { decodeTrustEntry } from '../../core/trust/trust-entry.ts';
import type { VaultRecord } from '../../api/vaults/records.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

// About 35 s alone; a loaded machine has taken more than 120.
t.setTimeout(240_000);
const root = resolve(import.meta.dirname, '../..');
const pub = () => bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));

t.test('operator tasks through the running API', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  const dataDir = join(cluster.dir, 'api');
  const operator = ed25519.utils.randomSecretKey();
  const operatorKeyFile = join(cluster.dir, 'operator.key');
  writeFileSync(operatorKeyFile, bytesToHex(operator), { mode: 0o600 });
  const tokenFile = join(cluster.dir, 'operator-api.token');
  const token = randomBytes(32).toString('base64url');
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });

  // Made before the API starts, as by an earlier version: an organization rooted without the operator
  // key (no trust log), one with an active vault, and a tenant, none linked.
  const pre = await RecordStore.open(dataDir);
  const vaults = new VaultService({ store: pre, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 } });
  const unrooted = (await vaults.createOrg('Unrooted', pub())).org;
  const old = (await vaults.createOrg('Old Co', pub(), 'bootstrap', operator)).org;
  const vault = await vaults.createVault(old.id, { tier: 'hosted' });
  await pre.put('vaults', vault.id, { ...vault, state: 'active' } satisfies VaultRecord, [`org/${old.id}/${vault.created_at}/${vault.id}`]);
  const oldTenant = (await new TenancyService(pre).createTenant('Old Co')).tenant;
  await pre.close();

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const api = cluster.spawn('api', 'api/server.ts', {
    API_HOST: '127.0.0.1', API_PORT: String(port), API_DATA_DIR: dataDir, API_OPERATOR_TOKEN_FILE: tokenFile, API_NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)),
  });
  await waitUntil(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true, 30_000, 'api healthz');

  const env = { API_OPERATOR_API_URL: base, API_OPERATOR_TOKEN_FILE: tokenFile, API_OPERATOR_KEY_FILE: operatorKeyFile, API_DATA_DIR: dataDir };
  const admin = (...args: string[]) => new Promise<{ code: number; out: Record<string, unknown>; stderr: string }>((done) => {
    execFile(PROGRAM_LAUNCHER, [...programArgs('api/admin/main.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: stdout ? JSON.parse(stdout) as Record<string, unknown> : {}, stderr });
    });
  });

  // Customers: made while the API runs (its store is not opened by the command), idempotent by external id.
  const firstKey = pub();
  const made = await admin('org', 'create', '--name', 'Acme', '--external-id', 'crm-1', '--public-key', firstKey);
  t.equal(made.code, 0, made.stderr);
  t.match(made.out, { organization: /^org_/, api_key_id: /./, customer: /^cus_/, tenant: /^ten_/, sandbox_workspace: /^wks_/, production_workspace: /^wks_/, created: true });
  const again = await admin('org', 'create', '--name', 'Acme', '--external-id', 'crm-1', '--public-key', firstKey);
  t.same(again.out, { ...made.out, created: false }, 'the same customer, created false');
  const other = await admin('org', 'create', '--name', 'Acme', '--external-id', 'crm-1', '--public-key', pub());
  t.equal(other.code, 1);
  t.match(other.stderr, /409: customer crm-1 exists with another first API key/);

  // The organization list shows every organization and its link.
  const list = await admin('org', 'list');
  const rows = list.out.data as { id: string; customer: string | null; active_api_keys: number }[];
  t.same(new Set(rows.map((r) => r.id)), new Set([made.out.organization, unrooted.id, old.id]));
  t.equal(rows.find((r) => r.id === made.out.organization)?.customer, made.out.customer);
  t.equal(rows.find((r) => r.id === old.id)?.customer, null, 'an organization made before customers is unlinked');

  // Linking it, through the API.
  const linked = await admin('customer', 'link', '--org', old.id, '--tenant', oldTenant.id);
  t.equal(linked.code, 0, linked.stderr);
  t.match(linked.out, { organization: old.id, tenant: oldTenant.id, events_workspace: /^wks_/ });

  // A first key for the organization the nodes know no key of; none for one they know.
  const added = await admin('org', 'add-key', '--org', unrooted.id, '--public-key', pub());
  t.equal(added.code, 0, added.stderr);
  const refused = await admin('org', 'add-key', '--org', old.id, '--public-key', pub());
  t.equal(refused.code, 1);
  t.match(refused.stderr, /409: the signer nodes already know keys of this organization/);

  // Workspace keys: made, used, revoked.
  const key = await admin('key', 'create', '--workspace', String(made.out.sandbox_workspace), '--role', 'developer');
  t.equal(key.code, 0, key.stderr);
  const bearer = String(key.out.bearer_token);
  const endpoints = () => fetch(`${base}/v1/webhook-endpoints`, { headers: { authorization: `Bearer ${bearer}` } });
  t.equal((await endpoints()).status, 200, 'the new key authenticates on the platform API');
  const revoked = await admin('key', 'revoke', '--id', String(key.out.key_id));
  t.same(revoked.out, { key_id: key.out.key_id, revoked: true });
  t.equal((await endpoints()).status, 401, 'a revoked key authenticates nothing');
  const tenant = await admin('tenant', 'create', '--name', 'Platform Only');
  t.match(tenant.out, { tenant: /^ten_/, sandbox_workspace: /^wks_/ });

  // Freezing a vault, and back.
  t.same((await admin('vault', 'freeze', '--id', vault.id)).out, { vault: vault.id, state: 'frozen' });
  const twice = await admin('vault', 'freeze', '--id', vault.id);
  t.match(twice.stderr, /409: the vault is already frozen/);
  t.same((await admin('vault', 'unfreeze', '--id', vault.id)).out, { vault: vault.id, state: 'active' });
  // A move and a shard's rebuild need the coordinators (API_COORDINATORS): this API has none, says so,
  // and the vault's record stays as it was.
  const move = await admin('vault', 'move', '--id', vault.id, '--shard', 'b');
  t.equal(move.code, 1);
  t.match(move.stderr, /503: this API has no coordinator configured/);
  t.match((await admin('vault', 'move', '--id', vault.id)).stderr, /vault move needs --id and --shard/);
  t.match((await admin('coordinator', 'rebuild', '--shard', 'B!')).stderr, /400/, 'a malformed shard name is refused');
  t.match((await admin('coordinator', 'rebuild', '--shard', 'b')).stderr, /503: this API has no coordinator configured/);

  // Reconciliation: this API has no stablecoin configured, so there is nothing to reconcile (the journey
  // test test/e2e/payment-journey.test.ts reconciles a funded workspace); an unknown workspace is 404.
  const noCoin = await admin('ledger', 'reconcile', '--workspace', String(made.out.sandbox_workspace));
  t.equal(noCoin.code, 1);
  t.match(noCoin.stderr, /409: no stablecoin is configured on this server/);
  t.match((await admin('ledger', 'reconcile', '--workspace', 'wks_nope')).stderr, /404: no workspace wks_nope/);
  t.match((await admin('ledger', 'reconcile')).stderr, /ledger reconcile needs --workspace/);

  // The operator secret is required; a customer credential is not one.
  t.equal((await fetch(`${base}/operator/v1/organizations`)).status, 401);
  t.equal((await fetch(`${base}/operator/v1/organizations`, { headers: { authorization: `Bearer ${token}x` } })).status, 401);
  t.equal((await fetch(`${base}/operator/v1/organizations`, { headers: { authorization: `Bearer ${bearer}` } })).status, 401);
  t.notOk(JSON.stringify(await (await fetch(`${base}/openapi.json`)).json()).includes('/operator/'), 'the operator API is not in the public OpenAPI document');

  // Bad input: 400 with a code, and nothing changes (the organization list and the audit log read back the same).
  const op = (method: string, path: string, body?: unknown) => fetch(`${base}/operator/v1${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const orgsBefore = await (await op('GET', '/organizations')).json();
  const auditBefore = await (await op('GET', '/audit')).json();
  for (const [path, body] of [['/customers', { name: 'X', public_key: 'not-hex' }], ['/customers', { public_key: 'ab'.repeat(32) }], ['/tenants', { name: '' }], ['/customers/link', { org: 'org_x' }]] as const) {
    const res = await op('POST', path, body);
    t.equal(res.status, 400, `POST ${path} ${JSON.stringify(body)}: 400`);
    t.type(((await res.json()) as { code?: unknown }).code, 'string', 'with a code');
  }
  t.same(await (await op('GET', '/organizations')).json(), orgsBefore, 'no organization was made');
  t.same(await (await op('GET', '/audit')).json(), auditBefore, 'nothing was audit-logged');

  // Every change audit-logged: in the operator's log, and in the customer's workspace for its records.
  const audit = async (workspace?: string) => ((await (await fetch(`${base}/operator/v1/audit${workspace ? `?workspace=${workspace}` : ''}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: { action: string; actor: { type: string } }[] }).data;
  const ops = await audit();
  t.same(ops.map((e) => e.action), ['customer.create', 'customer.link', 'api_key.create', 'platform_key.create', 'platform_key.revoke', 'tenant.create', 'vault.freeze', 'vault.unfreeze']);
  t.ok(ops.every((e) => e.actor.type === 'operator'));
  t.same((await audit(String(made.out.sandbox_workspace))).map((e) => e.action), ['customer.create', 'platform_key.create', 'platform_key.revoke']);
  t.same((await audit(String(linked.out.events_workspace))).map((e) => e.action), ['customer.link', 'vault.freeze', 'vault.unfreeze']);

  // All of it without a restart: the same process serves, and stops cleanly.
  t.ok(api.running, 'the API process ran throughout');
  await api.kill('SIGTERM');
  const store = await RecordStore.open(dataDir);
  t.teardown(() => store.close());
  const log = await new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 } }).trustLog(unrooted.id);
  t.equal(log.length, 1);
  t.match(decodeTrustEntry(log[0]!), { kind: 'bootstrap', org: unrooted.id }, 'the added key is rooted by the operator\'s bootstrap');
});

t.test('without API_OPERATOR_API_URL the remote-only commands say what they need', async (t) => {
  const r = await new Promise<{ code: number; stderr: string }>((done) => {
    execFile(PROGRAM_LAUNCHER, [...programArgs('api/admin/main.ts'), 'org', 'list'], { cwd: root, env: { PATH: process.env.PATH ?? '' } }, (err, _o, stderr) => done({ code: err ? 1 : 0, stderr }));
  });
  t.equal(r.code, 1);
  t.match(r.stderr, /org list runs through the operator API: set API_OPERATOR_API_URL/);
});
