// The coordinator's word on vaults that cannot sign (docs/operations.md "Vaults that cannot sign"), over
// its real gRPC service and metrics port: GetVault carries an active vault's ECDSA readiness, ListNodes
// with `signing` and GET /readyz count the vaults that cannot sign by reason, and /readyz stays 200.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { startCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { VaultStore } from '../../coordinator/vaults/vault-store.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { createLogger } from '../../common/logger.ts';
import { activeVault } from './vault-service-fixture.ts';

t.test('an active vault none of whose members is attached: GetVault says why, and both probes count it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'coord-readiness-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Stored before the coordinator opens its store: one vault with its pairs set up, one creating.
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' });
  await db.open();
  const pkg = { keyId: 'vault-1', epoch: 0, threshold: 2, parties: [1, 2, 3], groupKey: '02'.padEnd(66, '1'), chainCode: '', verificationShares: {} };
  await new VaultStore(db).put(activeVault(0, { otEpoch: 0, otPairs: ['1-2'], pkg: pkg as never }));
  await new VaultStore(db).put(activeVault(0, { vaultId: 'vault-2', state: 'creating' }));
  await db.close();
  const coord = await startCoordinator(loadCoordinatorConfig({ COORDINATOR_LISTEN: '127.0.0.1:0', COORDINATOR_DATA_DIR: dir, COORDINATOR_METRICS_LISTEN: '127.0.0.1:0' }), createLogger('coordinator', 'silent'));
  const client = connectCoordinator({ address: `127.0.0.1:${coord.port}` });
  t.teardown(async () => {
    client.close();
    await coord.stop();
  });
  const info = (await client.getVault({ vaultId: 'vault-1' })).vault!;
  t.match(info.ecdsa, { ready: false, reason: 'members_detached', detached: ['n1', 'n2', 'n3'], missingPairs: [], message: /too few committee members attached/ });
  t.equal((await client.getVault({ vaultId: 'vault-2' })).vault!.ecdsa, undefined, 'a vault that is not active carries none');
  const listed = await client.listNodes({ signing: true });
  t.equal(listed.unsignable?.count, 1);
  t.same(listed.unsignable?.reasons, { members_detached: 1 });
  t.same(listed.unsignable?.vaults.map((v) => [v.vaultId, v.readiness?.reason]), [['vault-1', 'members_detached']]);
  t.equal((await client.listNodes({})).unsignable, undefined, 'not asked, not read');
  const r = await fetch(`http://127.0.0.1:${coord.metricsPort}/readyz`);
  t.equal(r.status, 200, 'a vault that cannot sign does not make the coordinator unready');
  t.same(await r.json(), { status: 'ready', unsignable: { count: 1, reasons: { members_detached: 1 }, vaults: [{ vault_id: 'vault-1', reason: 'members_detached', detached_members: ['n1', 'n2', 'n3'], missing_pairs: [] }] } });
});
