// The guard around an ECDSA presigning run: what an abort retires. An abort that names a peer retires
// that pair; one that names nobody, or only this node (a false echo can do that), retires every peer
// of the run, since this node cannot tell which peer's tampering hid behind it.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { otGuarded } from '../../node/runtime/protocols/ot-guarded.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { encodeOtSetup, type EcdsaOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';

async function vaultWithSetup(t: Test): Promise<{ vault: VaultShareStore; setup: EcdsaOtSetup }> {
  const dir = mkdtempSync(join(tmpdir(), 'ot-guard-'));
  const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const setup: EcdsaOtSetup = { keyId: 'k', epoch: 0, parties: [1, 2, 3, 4], me: 1, setupId: 'ab'.repeat(32), peers: {}, retired: [] };
  const vault = new VaultShareStore(store);
  await vault.putOt('k', setup, encodeOtSetup(setup));
  return { vault, setup };
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
    const step = await otGuarded(aborting([...culprits]), { vault, keyId: 'k', setupId: setup.setupId, me: 1, peers: [2, 3] }).start();
    t.equal(step.kind, 'abort');
    t.same((await vault.otRetirement('k'))?.retired, retired, 'retired on disk before the abort is returned');
  });
}

t.test('a new OT setup starts a clean record; an abort of a run on the replaced setup retires nothing in it', async (t) => {
  const { vault, setup } = await vaultWithSetup(t);
  await vault.retireOtPairs('k', setup.setupId, [2]);
  const fresh = { ...setup, setupId: 'cd'.repeat(32) };
  await vault.putOt('k', fresh, encodeOtSetup(fresh));
  t.same((await vault.ot('k'))?.retired, [], 'fresh keys and Δ: nothing retired');
  await otGuarded(aborting([3]), { vault, keyId: 'k', setupId: setup.setupId, me: 1, peers: [2, 3] }).start();
  t.same((await vault.ot('k'))?.retired, [], 'the old run\'s abort does not touch the new setup');
});
