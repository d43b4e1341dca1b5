// A node's answer to an inventory request (node/runtime/inventory-answer.ts, docs/transport.md
// "Inventory"): public data of the keys it holds, paged, a pending epoch named, the receipts it kept
// when it promoted, and never its share: the encoded page holds no byte of it.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar } from '../../node/protocols/math/curve.ts';
import { answerInventory } from '../../node/runtime/inventory-answer.ts';
import { InventoryPageSchema, InventoryRequestSchema } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { INVENTORY_VERSION, readInventoryEntry } from '../../core/link/inventory.ts';
import { dealerKeys } from '../protocols/frost/keys.ts';

const committee: PinnedMember[] = [1, 2, 3].map((index) => ({ index, nodeId: `n${index}`, signingKey: String(index).repeat(64), encryptionKey: 'e'.repeat(64) }));
const k = dealerKeys(['11'.repeat(32), '22'.repeat(32)], 3, 'cc'.repeat(32)).get(2)!;
const shareHex = bytesToHex(k.share.expose());

async function nodeWith(ids: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'inventory-'));
  const store = await SealedStore.open(dir, new Uint8Array(32).fill(9));
  const vault = new VaultShareStore(store);
  for (const keyId of ids) {
    await vault.putNew(keyId, { key: { share: new SecretShare(2, exposeScalar(k.share, 'share')), pkg: { ...k.pkg, keyId } }, owner: 'org_acme', committee, tier: 'hosted' });
  }
  return { vault, store, close: async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); } };
}

const ask = (over: Partial<{ afterKeyId: string; limit: number; keyIds: string[]; version: number }>) =>
  create(InventoryRequestSchema, { version: INVENTORY_VERSION, requestId: new Uint8Array(16).fill(4), ...over });

t.test('pages of public key data, in order, until the last', async (t) => {
  const ids = Array.from({ length: 7 }, (_, i) => `vlt_${i}`);
  const node = await nodeWith(ids);
  t.teardown(node.close);
  const seen: string[] = [];
  let after = '';
  for (let pages = 0; pages < 10; pages++) {
    const page = create(InventoryPageSchema, await answerInventory(node.vault, ask({ afterKeyId: after, limit: 3 })));
    t.ok(page.entries.length <= 3, 'a page holds at most the limit');
    t.notOk(bytesToHex(toBinary(InventoryPageSchema, page)).includes(shareHex), 'no byte of the share leaves');
    for (const e of page.entries) {
      const key = readInventoryEntry(e);
      t.match(key, { owner: 'org_acme', tier: 'hosted', current: { pkg: { keyId: e.keyId, epoch: 0, groupKey: k.pkg.groupKey } } });
      seen.push(e.keyId);
    }
    if (!page.more) break;
    after = page.entries.at(-1)!.keyId;
  }
  t.same(seen, ids, 'every key once, in order');
  const named = create(InventoryPageSchema, await answerInventory(node.vault, ask({ keyIds: ['vlt_5', 'vlt_none', 'vlt_1'] })));
  t.same(named.entries.map((e) => e.keyId), ['vlt_5', 'vlt_1'], 'named keys: the ones held');
  t.same(new Uint8Array(named.requestId), new Uint8Array(16).fill(4), 'the request id comes back');
});

t.test('a pending epoch is named; a promotion keeps its receipts; an unknown version is refused, not guessed', async (t) => {
  const node = await nodeWith(['vlt_a']);
  t.teardown(node.close);
  await node.vault.putPending('vlt_a', { key: { share: new SecretShare(2, exposeScalar(k.share, 'share')), pkg: { ...k.pkg, keyId: 'vlt_a', epoch: 1 } }, owner: 'org_acme', committee, tier: 'hosted' });
  let [e] = create(InventoryPageSchema, await answerInventory(node.vault, ask({}))).entries;
  t.match(readInventoryEntry(e!), { current: { pkg: { epoch: 0 } }, pendingEpoch: 1 });
  await node.vault.promote('vlt_a', 1, [{ party: 1, signature: new Uint8Array(64).fill(5) }]);
  [e] = create(InventoryPageSchema, await answerInventory(node.vault, ask({}))).entries;
  t.match(readInventoryEntry(e!), { current: { pkg: { epoch: 1 }, receipts: [{ party: 1, signature: '05'.repeat(64) }] } });
  t.notOk(readInventoryEntry(e!).pendingEpoch, 'nothing pending after the promotion');
  const refused = await answerInventory(node.vault, ask({ version: 99 }));
  t.match(refused, { errorCode: 'invalid_request', errorMessage: /version 99/ });
});
