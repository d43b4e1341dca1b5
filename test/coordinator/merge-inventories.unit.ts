// Which key record a coordinator rebuilds from its nodes' inventories (coordinator/vaults/merge-inventories.ts,
// docs/operations.md "Rebuilding a coordinator's records"): the members' agreed package, the highest
// epoch among those a threshold confirms, and nothing when a member contradicts it or too few confirm.
// The answers are fabricated here, a lying node among them.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { mergeInventories, type NodeReport } from '../../coordinator/vaults/merge-inventories.ts';
import type { InventoryKey, InventoryMember } from '../../core/link/inventory.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import { epochReceiptStatement } from '../../core/session/epoch-receipt.ts';
import { dealerKeys } from '../protocols/frost/keys.ts';

const secrets = new Map(['n1', 'n2', 'n3', 'n4', 'evil'].map((n, i) => [n, new Uint8Array(32).fill(i + 1)]));
const signingKey = (n: string) => bytesToHex(ed25519.getPublicKey(secrets.get(n)!));
const member = (nodeId: string, index: number): InventoryMember => ({ index, nodeId, signingKey: signingKey(nodeId), encryptionKey: '00'.repeat(32) });

const base = dealerKeys(['11'.repeat(32), '22'.repeat(32)], 3, 'cc'.repeat(32)).get(1)!.pkg;
const pkgAt = (epoch: number, over: Partial<KeyPackage> = {}): KeyPackage => ({ ...base, keyId: 'vault-1', epoch, ...over });
const COMMITTEE = [member('n1', 1), member('n2', 2), member('n3', 3)];

function held(pkg: KeyPackage, committee = COMMITTEE, extra: Partial<InventoryKey> = {}): InventoryKey {
  return { keyId: 'vault-1', owner: 'org_acme', tier: 'hosted', current: { pkg, committee, receipts: [] }, ...extra };
}

function report(nodeId: string, ...keys: InventoryKey[]): NodeReport {
  return { nodeId, signingKey: signingKey(nodeId), keys: new Map(keys.map((k) => [k.keyId, k])) };
}

t.test('the package every member reports is rebuilt, with its committee and epoch', async (t) => {
  const [out] = mergeInventories(['vault-1'], ['n1', 'n2', 'n3'].map((n) => report(n, held(pkgAt(0)))));
  t.ok(out && 'rebuilt' in out, 'rebuilt');
  if (!out || !('rebuilt' in out)) return;
  t.match(out.rebuilt, { vaultId: 'vault-1', owner: 'org_acme', tier: 'hosted', threshold: 2, epoch: 0, publicKey: base.groupKey, chainCode: 'cc'.repeat(32) });
  t.same(out.rebuilt.committee, [{ nodeId: 'n1', index: 1 }, { nodeId: 'n2', index: 2 }, { nodeId: 'n3', index: 3 }]);
  t.same(out.rebuilt.confirmedBy, ['n1', 'n2', 'n3']);
});

t.test('a threshold of members suffices when the rest did not answer or hold nothing; fewer do not', async (t) => {
  const [two] = mergeInventories(['vault-1'], ['n1', 'n3'].map((n) => report(n, held(pkgAt(0)))));
  t.ok(two && 'rebuilt' in two, 'two of three members answered alike: rebuilt');
  const [lost] = mergeInventories(['vault-1'], [report('n1', held(pkgAt(0))), report('n2', held(pkgAt(0))), report('n3')]);
  t.ok(lost && 'rebuilt' in lost, 'a member that holds nothing of the key does not confirm, and claims nothing against');
  const [one] = mergeInventories(['vault-1'], [report('n1', held(pkgAt(0))), report('n3')]);
  t.match(one, { reason: /only 1 of the 2 committee members needed confirm epoch 0/ });
});

t.test('a node answering a false package is not adopted when the other members disagree', async (t) => {
  const forged = pkgAt(0, { verificationShares: { ...base.verificationShares, '2': base.verificationShares['1']! } });
  // The coordinator cannot tell which side is true, and adopts neither: the key is left out, the
  // reason naming both sides, until the operator looks.
  const [out] = mergeInventories(['vault-1'], [report('n1', held(pkgAt(0))), report('n2', held(forged)), report('n3', held(pkgAt(0)))]);
  t.match(out, { vaultId: 'vault-1', reason: /nodes disagree on epoch 0/ });
  t.notOk(out && 'rebuilt' in out, 'nothing adopted');
});

t.test('a lying node claiming a higher epoch with a committee of its own is not adopted', async (t) => {
  // A committee of the liar alone (threshold 1) is not one nodes join: refused by shape.
  const solo = held(pkgAt(9, { threshold: 1, parties: [1], verificationShares: { '1': base.verificationShares['1']! } }), [member('evil', 1)]);
  const honest = ['n1', 'n2', 'n3'].map((n) => report(n, held(pkgAt(1))));
  const [a] = mergeInventories(['vault-1'], [...honest, report('evil', solo)]);
  t.match(a, { reason: /is not one nodes join/ }, 'a one-member committee is refused');
  // A well-shaped committee naming honest members: they answer that they hold epoch 1, not 9.
  const named = held(pkgAt(9), [member('evil', 1), member('n2', 2), member('n3', 3)]);
  const [b] = mergeInventories(['vault-1'], [...honest, report('evil', named)]);
  t.match(b, { reason: /members disagree with epoch 9 as evil report it: n2 holds epoch 1; n3 holds epoch 1/ });
  // The same claim with the honest members away: only the liar confirms it.
  const [c] = mergeInventories(['vault-1'], [report('n1', held(pkgAt(1))), report('evil', named)]);
  t.match(c, { reason: /only 1 of the 2 committee members needed confirm epoch 9/ });
});

t.test('a node posing as a member under another key contradicts the committee', async (t) => {
  const [out] = mergeInventories(['vault-1'], [report('n1', held(pkgAt(0))), { ...report('n2', held(pkgAt(0))), signingKey: signingKey('evil') }, report('n3', held(pkgAt(0)))]);
  t.match(out, { reason: /n2 attached with another key than the committee pins/ });
});

t.test('the highest confirmed epoch wins over members that missed a reshare; a member holding it pending is behind, not against', async (t) => {
  const next = [member('n2', 1), member('n3', 2), member('n4', 3)];
  const receipt = (n: string, party: number) => ({ party, signature: bytesToHex(ed25519.sign(epochReceiptStatement(pkgAt(1)), secrets.get(n)!)) });
  const e1 = () => held(pkgAt(1), next, { current: { pkg: pkgAt(1), committee: next, receipts: [receipt('n2', 1), receipt('n3', 2), { party: 3, signature: 'ab'.repeat(64) }] } });
  const [out] = mergeInventories(['vault-1'], [
    report('n1', held(pkgAt(0))), // a dealer that left and missed the commit
    report('n2', e1()), report('n3', e1()),
    report('n4', { keyId: 'vault-1', owner: 'org_acme', tier: 'hosted', pendingEpoch: 1 }), // a new member that missed the commit
  ]);
  t.ok(out && 'rebuilt' in out, 'rebuilt');
  if (!out || !('rebuilt' in out)) return;
  t.equal(out.rebuilt.epoch, 1);
  t.same(out.rebuilt.committee, [{ nodeId: 'n2', index: 1 }, { nodeId: 'n3', index: 2 }, { nodeId: 'n4', index: 3 }]);
  t.same(out.rebuilt.receipts.map((r) => r.party), [1, 2], 'only receipts that verify under the pinned keys are kept');
});

t.test('keys nobody holds, and keys under one id with two group keys, are left out with a reason', async (t) => {
  const other = dealerKeys(['33'.repeat(32), '44'.repeat(32)], 3, 'cc'.repeat(32)).get(1)!.pkg;
  const outs = mergeInventories(['vault-1', 'vault-2'], [
    report('n1', held(pkgAt(2))), report('n2', held(pkgAt(2))),
    report('n3', held({ ...other, keyId: 'vault-1', epoch: 0 })),
  ]);
  t.match(outs[0], { reason: /different keys or owners/ });
  t.same(outs[1], { vaultId: 'vault-2', reason: 'no answering node holds it' });
});
