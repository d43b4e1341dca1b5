// The guard around an ECDSA presigning run: what an abort retires. An abort that names a peer retires
// that pair; one that names nobody, or only this node (a false echo can do that), retires every peer
// of the run, since this node cannot tell which peer's tampering hid behind it. Retirement names a
// pair's material (peer and pair setup id): a new setup of one pair clears that pair alone.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { otGuarded, pairIdsOf } from '../../node/runtime/protocols/ot-guarded.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import type { EcdsaOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { placeholderSetup } from './ot-setup-fixture.ts';

const OLD = 'ab'.repeat(32);
const NEW = 'cd'.repeat(32);

async function vaultWithSetup(t: Test): Promise<{ vault: VaultShareStore; setup: EcdsaOtSetup; store: SealedStore }> {
  const dir = mkdtempSync(join(tmpdir(), 'ot-guard-'));
  const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const setup = placeholderSetup(1, { 2: OLD, 3: OLD, 4: OLD });
  const vault = new VaultShareStore(store);
  await vault.putOt('k', setup);
  return { vault, setup, store };
}

const aborting = (culprits: number[]): PartyProtocol => ({
  start: (): Step => ({ kind: 'abort', code: 'equivocation', message: 'test abort', culprits }),
  deliver: (): Step => ({ kind: 'continue', out: [] }),
  dispose() {},
});

for (const [name, culprits, retired] of [
  ['an abort naming a peer retires that pair', [3], [3]],
  ['an abort naming only this node retires every peer of the run', [1], [2, 3]],
  ['an abort naming nobody retires every peer of the run', [], [2, 3]],
  ['a culprit outside the run is not a reason to spare the run\'s peers', [4], [2, 3]],
] as const) {
  t.test(name, async (t) => {
    const { vault, setup } = await vaultWithSetup(t);
    const step = await otGuarded(aborting([...culprits]), { vault, keyId: 'k', me: 1, peers: [2, 3], pairIds: pairIdsOf(setup, [2, 3]) }).start();
    t.equal(step.kind, 'abort');
    t.same((await vault.otRetirement('k'))?.retired, retired.map((peer) => ({ peer, setupId: OLD })), 'retired on disk, by peer and pair setup id, before the abort is returned');
    t.same((await vault.ot('k'))?.retired, retired);
  });
}

t.test('a new setup of one pair clears that pair\'s retirement only; an abort of a run on replaced material retires nothing', async (t) => {
  const { vault, setup } = await vaultWithSetup(t);
  await vault.retireOtPairs('k', [{ peer: 2, setupId: OLD }, { peer: 3, setupId: OLD }]);
  t.same((await vault.ot('k'))?.retired, [2, 3]);
  await vault.putOt('k', placeholderSetup(1, { 2: NEW }));
  const merged = (await vault.ot('k'))!;
  t.same(merged.retired, [3], 'pair {1,2} has fresh keys and Δ; pair {1,3} stays retired');
  t.same(Object.fromEntries(Object.entries(merged.peers).map(([j, p]) => [j, p.setupId])), { 2: NEW, 3: OLD, 4: OLD }, 'only peer 2\'s material was replaced');
  await otGuarded(aborting([2]), { vault, keyId: 'k', me: 1, peers: [2, 3], pairIds: pairIdsOf(setup, [2, 3]) }).start();
  t.same((await vault.ot('k'))?.retired, [3], 'the old run\'s abort does not touch the new pair material');
});

t.test('retiring pair {1,2} leaves pair {1,3} usable', async (t) => {
  const { vault } = await vaultWithSetup(t);
  await vault.retireOtPairs('k', [{ peer: 2, setupId: OLD }]);
  t.same((await vault.ot('k'))?.retired, [2]);
  t.same((await vault.otRetirement('k'))?.current, { 2: OLD, 3: OLD, 4: OLD });
});

t.test('a run whose pair material was replaced during it stops before its next message leaves', async (t) => {
  const { vault, setup } = await vaultWithSetup(t);
  let disposed = false;
  const sending: PartyProtocol = {
    start: (): Step => ({ kind: 'continue', out: [{ to: 2, round: 1, payload: new Uint8Array([1]) }] }) as Step,
    deliver: (): Step => ({ kind: 'continue', out: [] }),
    dispose() {
      disposed = true;
    },
  };
  await vault.putOt('k', placeholderSetup(1, { 3: NEW }));
  const step = await otGuarded(sending, { vault, keyId: 'k', me: 1, peers: [2, 3], pairIds: pairIdsOf(setup, [2, 3]) }).start();
  t.match(step, { kind: 'abort', code: 'ot_retired' });
  t.ok(disposed, 'the run is dropped, its message never sent');
  const untouched = await otGuarded({ ...sending, dispose() {} }, { vault, keyId: 'k', me: 1, peers: [2, 4], pairIds: pairIdsOf(setup, [2, 4]) }).start();
  t.equal(untouched.kind, 'continue', 'a run over pairs that were not replaced goes on');
});

t.test('a version-1 retirement record (one setup id for the committee) still retires its pairs', async (t) => {
  const { vault, store } = await vaultWithSetup(t);
  await store.putSecret('key/k/current/ot-retired', encodeBlob('ot-retirement', { setupId: OLD, retired: [3] }));
  t.same((await vault.ot('k'))?.retired, [3]);
  await vault.retireOtPairs('k', [{ peer: 2, setupId: OLD }]);
  t.same((await vault.otRetirement('k'))?.retired, [{ peer: 2, setupId: OLD }, { peer: 3, setupId: OLD }], 'rewritten as version 2, nothing lost');
});
