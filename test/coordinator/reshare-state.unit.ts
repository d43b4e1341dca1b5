// A reshare that cannot start leaves the vault as it was. The coordinator marks a vault `resharing`
// before it opens the session; a node that detached after the dealers were chosen (its party cannot be
// resolved), or a session that could not be opened, must not leave that mark behind: a vault stuck in
// `resharing` refuses every later reshare with `conflict`, and nothing would ever clear it.
import t, { type Test } from 'tap';
import type { SessionOutcome, SessionSpec } from '../../coordinator/sessions/session-hub.ts';
import { dealerKeys } from '../protocols/frost/keys.ts';
import { Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';
import { activeVault, vaultServiceFixture } from './vault-service-fixture.ts';

function setup(t: Test, registered: (nodeId: string) => boolean, run: (spec: SessionSpec) => Promise<SessionOutcome>) {
  const pkg = { ...dealerKeys(['11'.repeat(32), '22'.repeat(32)], 3).get(1)!.pkg, keyId: 'vault-1', epoch: 4 };
  return vaultServiceFixture(t, { hub: { run }, registered, roster: true, vaults: [activeVault(4, { publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg })] });
}

t.test('a receiver that detached before the session opens: node_not_attached, the vault stays active, a later reshare runs', async (t) => {
  let n3 = false;
  const opened: SessionSpec[] = [];
  const { keys, store } = await setup(t, (id) => id !== 'n3' || n3, async (spec) => {
    opened.push(spec);
    return { ok: false, code: 'timeout', message: 'the session timed out', culprits: [], reports: [] };
  });
  // Dealers are n1 and n2; n3 is a receiver of the refresh and can no longer be resolved.
  await t.rejects(keys.reshare({ vaultId: 'vault-1' }), { code: 'node_not_attached' });
  t.equal(opened.length, 0, 'no session was opened');
  t.equal((await store.get('vault-1'))?.state, 'active', 'the vault is not left resharing');

  n3 = true;
  await t.rejects(keys.reshare({ vaultId: 'vault-1' }), { code: 'failed' }, 'the next reshare is not refused as a conflict: it runs, and times out here');
  t.equal(opened.filter((s) => s.protocol === Protocol.RESHARE).length, 1, 'its session was opened');
  const after = await store.get('vault-1');
  t.equal(after?.state, 'reshare_pending', 'a session that ran and failed leaves the vault reshare_pending, the old epoch in force');
  t.equal(after?.epoch, 4);
});

t.test('a session that cannot be opened: the error is the caller\'s, the vault is back as it was', async (t) => {
  const { keys, store } = await setup(t, () => true, async () => {
    throw new Error('the hub refused to open the session');
  });
  await t.rejects(keys.reshare({ vaultId: 'vault-1' }), /refused to open/);
  const after = await store.get('vault-1');
  t.equal(after?.state, 'active');
  t.equal(after?.epoch, 4);
  t.notOk(after?.problem, 'no problem recorded: nothing ran');
});
