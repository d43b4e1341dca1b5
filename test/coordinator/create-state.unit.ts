// A key generation that cannot run leaves no vault behind that a retry would take for an existing one.
// The coordinator used to store the vault as `creating` before resolving its committee's parties: a
// member that had detached made the call throw with the record left `creating`, and every retry was
// answered `vault_exists`, with every node back.
import t, { type Test } from 'tap';
import type { SessionOutcome, SessionSpec } from '../../coordinator/sessions/session-hub.ts';
import { Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';
import { COMMITTEE, vaultServiceFixture } from './vault-service-fixture.ts';

const setup = (t: Test, registered: (nodeId: string) => boolean, run: (spec: SessionSpec) => Promise<SessionOutcome>) => vaultServiceFixture(t, { hub: { run }, registered, roster: true });

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
