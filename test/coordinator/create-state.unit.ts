// A key generation that cannot run leaves no vault behind that a retry would take for an existing one.
// The coordinator used to store the vault as `creating` before resolving its committee's parties: a
// member that had detached made the call throw with the record left `creating`, and every retry was
// answered `vault_exists`, with every node back.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { VaultService } from '../../coordinator/vaults/vault-service.ts';
import { VaultStore } from '../../coordinator/vaults/vault-store.ts';
import type { SessionHub, SessionOutcome, SessionSpec } from '../../coordinator/sessions/session-hub.ts';
import type { NodeRegistry } from '../../coordinator/nodes/node-registry.ts';
import type { LoadedRoster } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';
import { Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';

const fill = (n: number, b: number) => new Uint8Array(n).fill(b);
const COMMITTEE = ['n1', 'n2', 'n3'];

async function setup(t: Test, registered: (nodeId: string) => boolean, run: (spec: SessionSpec) => Promise<SessionOutcome>) {
  const dir = mkdtempSync(join(tmpdir(), 'create-state-'));
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' });
  await db.open();
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const store = new VaultStore(db);
  const registry = {
    get: (nodeId: string) => (registered(nodeId) ? { nodeId, kind: 'service', signingKey: fill(32, 1), encryptionKey: fill(32, 2) } : undefined),
    isAttached: () => true,
    list: () => [],
    on: () => undefined,
    off: () => undefined,
  } as unknown as NodeRegistry;
  const hub = { run } as unknown as SessionHub;
  const roster = { bytes: fill(8, 0x0e) } as unknown as LoadedRoster;
  const keys = new VaultService(store, registry, hub, createLogger('test', 'silent'), { dkgMs: 5_000, signMs: 5_000, reshareMs: 5_000, attachWaitMs: 0 }, roster);
  return { keys, store };
}

const create = { vaultId: 'vault-1', owner: 'org_acme', tier: 'hosted' as const, nodeIds: COMMITTEE, threshold: 2 };

t.test('a member that detached before the session opens: node_not_attached, no vault stored, a retry runs', async (t) => {
  let n3 = false;
  const opened: SessionSpec[] = [];
  const { keys, store } = await setup(t, (id) => id !== 'n3' || n3, async (spec) => {
    opened.push(spec);
    return { ok: false, code: 'timeout', message: 'the session timed out', culprits: [], reports: [] };
  });
  await t.rejects(keys.createVault(create), { code: 'node_not_attached' });
  t.equal(opened.length, 0, 'no session was opened');
  t.equal(await store.get('vault-1'), undefined, 'no vault is left creating');

  n3 = true;
  await t.rejects(keys.createVault(create), { code: 'failed' }, 'the retry is not refused as vault_exists: it runs, and times out here');
  t.equal(opened.filter((s) => s.protocol === Protocol.DKG).length, 1, 'its session was opened');
  const after = await store.get('vault-1');
  t.equal(after?.state, 'failed', 'a generation that ran and failed ends failed, with its reason');
  t.match(after?.problem, /timed out/);
});

t.test('a session that cannot be opened: the vault ends failed with the reason, and a retry runs', async (t) => {
  let fail = true;
  const { keys, store } = await setup(t, () => true, async () => {
    if (fail) throw new Error('the hub refused to open the session');
    return { ok: false, code: 'timeout', message: 'the session timed out', culprits: [], reports: [] };
  });
  await t.rejects(keys.createVault(create), /refused to open/);
  const after = await store.get('vault-1');
  t.equal(after?.state, 'failed');
  t.match(after?.problem, /could not start: the hub refused to open the session/);
  fail = false;
  await t.rejects(keys.createVault(create), { code: 'failed' }, 'not vault_exists');
});
