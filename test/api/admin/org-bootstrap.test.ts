// The operator command makes no organization the signer nodes cannot learn: `org create` needs the
// operator key (whose bootstrap entry roots the organization on every node), and `org repair` roots an
// organization made without it, putting the bootstrap first in its trust log so the nodes accept the
// whole log (docs/trust.md "Roots").
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { applyTrustLog, emptyTrust, activeKey } from '../../../node/runtime/authorization/trust-state.ts';
import { decodeTrustEntry, TrustEntryError } from '../../../core/trust/trust-entry.ts';
import { requestEntry, type RequestHeaders } from '../../../core/trust/trust-entry.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../../support/program.ts';

const root = resolve(import.meta.dirname, '../../..');

function admin(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(PROGRAM_LAUNCHER, [...programArgs('api/admin/main.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

const newStore = () => mkdtempSync(join(tmpdir(), 'admin-'));
const vaultsOn = (store: RecordStore) => new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 } });

t.test('org create refuses without the operator key and makes nothing', async (t) => {
  const dir = newStore();
  const r = await admin({ API_DATA_DIR: dir }, 'org', 'create', '--name', 'Acme', '--public-key', bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())));
  t.equal(r.code, 1);
  t.match(r.stderr, /API_OPERATOR_KEY_FILE .*is required/);
  const store = await RecordStore.open(dir);
  t.teardown(() => store.close());
  const orgs = [];
  for await (const o of store.all('orgs')) orgs.push(o);
  t.same(orgs, [], 'nothing stored');
});

t.test('a database held by the running API: the command says so and how to reach the operator API; --help is usage, exit 0', async (t) => {
  const dir = newStore();
  const held = await RecordStore.open(dir);
  t.teardown(() => held.close());
  const operatorFile = join(dir, '..', `${dir.split('/').pop()}-held-operator.key`);
  writeFileSync(operatorFile, bytesToHex(ed25519.utils.randomSecretKey()), { mode: 0o600 });
  const r = await admin({ API_DATA_DIR: dir, API_OPERATOR_KEY_FILE: operatorFile }, 'org', 'create', '--name', 'Acme', '--public-key', bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())));
  t.equal(r.code, 1);
  t.match(r.stderr, /in use by a running API .*API_OPERATOR_API_URL=.*API_OPERATOR_TOKEN_FILE=/, r.stderr);
  t.notMatch(r.stderr, /Database failed to open/);
  const orgs = [];
  for await (const o of held.all('orgs')) orgs.push(o);
  t.same(orgs, [], 'nothing stored');
  const help = await admin({}, '--help');
  t.same([help.code, help.stderr], [0, '']);
  t.match(help.stdout, /^usage: npm run admin -- org create/);
});

t.test('org repair roots an organization made without the operator key; the nodes then accept its whole log', async (t) => {
  const dir = newStore();
  const operator = ed25519.utils.randomSecretKey();
  const operatorFile = join(dir, '..', `${dir.split('/').pop()}-operator.key`);
  writeFileSync(operatorFile, bytesToHex(operator), { mode: 0o600 });
  const firstSecret = ed25519.utils.randomSecretKey();
  const secondPublic = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  let org: string;
  {
    // As an older release made it: no bootstrap, then a key registered by the customer's signed request.
    const store = await RecordStore.open(dir);
    const vaults = vaultsOn(store);
    const made = await vaults.createOrg('Legacy', bytesToHex(ed25519.getPublicKey(firstSecret)));
    org = made.org.id;
    const body = JSON.stringify({ public_key: secondPublic });
    const url = 'https://api.custody.test/v1/api-keys';
    const headers = signedHeaders({ keyId: made.key.id, secretKey: firstSecret }, 'POST', url, body) as unknown as RequestHeaders;
    await vaults.registerKey(org, secondPublic, null, requestEntry({ method: 'POST', url, headers, body: new TextEncoder().encode(body) }));
    await store.close();
  }
  const ctx = { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))] };
  const logOf = async () => {
    const store = await RecordStore.open(dir);
    try {
      return await vaultsOn(store).trustLog(org);
    } finally {
      await store.close();
    }
  };
  const before = await logOf();
  t.equal(before.length, 1, 'one entry, no bootstrap');
  t.throws(() => applyTrustLog(emptyTrust(org), before, ctx), TrustEntryError, 'the nodes cannot apply it: its signer is unknown to them');

  t.equal((await admin({ API_DATA_DIR: dir }, 'org', 'repair', '--id', org)).code, 1, 'repair needs the operator key too');
  const env = { API_DATA_DIR: dir, API_OPERATOR_KEY_FILE: operatorFile };
  const repaired = await admin(env, 'org', 'repair', '--id', org);
  t.equal(repaired.code, 0, repaired.stderr);
  t.match(JSON.parse(repaired.stdout), { organization: org, repaired: true });
  const after = await logOf();
  t.equal(after.length, 2);
  t.equal(decodeTrustEntry(after[0]!).kind, 'bootstrap', 'the bootstrap comes first');
  t.same(after[1], before[0], 'the rest of the log as it was');
  const applied = applyTrustLog(emptyTrust(org), after, ctx).state;
  t.equal(applied.keys && Object.values(applied.keys).filter((k) => !k.revoked).length, 2, 'both API keys are active on a node');
  t.ok(activeKey(applied, undefined, Object.keys(applied.keys)[0]!));

  const again = await admin(env, 'org', 'repair', '--id', org);
  t.match(JSON.parse(again.stdout), { repaired: false }, 'a second repair changes nothing');
  t.equal((await logOf()).length, 2);
  const unknown = await admin(env, 'org', 'repair', '--id', 'org_nope');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /no organization org_nope/);
});
