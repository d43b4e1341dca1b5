// The coordinator's rebuild from fabricated node answers (coordinator/vaults/vault-rebuild.ts, docs/operations.md
// "Rebuilding a coordinator's records"), in process: a real node registry and LevelDB vault store, nodes
// that answer each inventory request on their "link" with pages encoded as a node encodes them. A record
// is created, brought forward, never moved back or onto another group key; a lying node does not make
// the coordinator adopt its package; a node from before the exchange is reported as such; a vault
// released to another shard stays refused until it is taken over again; the lazy path answers a request
// for a vault the store lost.
import t, { type Test } from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { create } from '@bufbuild/protobuf';
import { NodeRegistry } from '../../coordinator/nodes/node-registry.ts';
import { InventoryClient } from '../../coordinator/nodes/inventory-client.ts';
import type { VaultRecord } from '../../coordinator/vaults/vault-store.ts';
import { tempVaultStore } from './vault-service-fixture.ts';
import { VaultService } from '../../coordinator/vaults/vault-service.ts';
import { VaultRebuild } from '../../coordinator/vaults/vault-rebuild.ts';
import type { SessionHub } from '../../coordinator/sessions/session-hub.ts';
import { createLogger } from '../../common/logger.ts';
import { inventoryEntry, INVENTORY_VERSION, type InventoryKey } from '../../core/link/inventory.ts';
import { InventoryPageSchema, InventoryRequestSchema, type AttachResponse } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import { dealerKeys } from '../protocols/frost/keys.ts';

const NODES = ['n1', 'n2', 'n3'];
const secret = (n: string) => new Uint8Array(32).fill(NODES.indexOf(n) + 1);
const signingKey = (n: string) => ed25519.getPublicKey(secret(n));
const committee = NODES.map((nodeId, i) => ({ index: i + 1, nodeId, signingKey: bytesToHex(signingKey(nodeId)), encryptionKey: '00'.repeat(32) }));
const base = dealerKeys(['11'.repeat(32), '22'.repeat(32)], 3, 'cc'.repeat(32)).get(1)!.pkg;
const pkgAt = (epoch: number, over: Partial<KeyPackage> = {}): KeyPackage => ({ ...base, keyId: 'vault-1', epoch, ...over });
const held = (pkg: KeyPackage): InventoryKey => ({ keyId: pkg.keyId, owner: 'org_acme', tier: 'hosted', current: { pkg, committee, receipts: [] } });

/** What each node holds; `answer` may replace a node's page (a malformed one, say). */
type Holdings = Record<string, InventoryKey[]>;

async function setup(t: Test, holdings: Holdings, o: { records?: VaultRecord[]; oldNodes?: string[] } = {}) {
  const { db, store } = await tempVaultStore(t, 'vault-rebuild-', o.records);
  const registry = new NodeRegistry(db);
  const inventory = new InventoryClient(registry, 500);
  const asked: string[] = [];
  for (const nodeId of NODES) {
    const send = (m: { body: AttachResponse['body'] }) => {
      if (m.body.case !== 'inventoryRequest') return;
      // As the node reads it off the wire: absent fields are defaults.
      const req = create(InventoryRequestSchema, m.body.value);
      asked.push(nodeId);
      const all = (holdings[nodeId] ?? []).toSorted((a, b) => (`${a.keyId}/` < `${b.keyId}/` ? -1 : 1));
      // Named keys, or a page after `after_key_id`, as node/storage/vault-shares.ts answers.
      const listed = all.filter((k) => `${k.keyId}/` > `${req.afterKeyId}/`);
      const keys = req.keyIds.length ? all.filter((k) => req.keyIds.includes(k.keyId)) : listed.slice(0, req.limit);
      const more = !req.keyIds.length && listed.length > req.limit;
      const page = create(InventoryPageSchema, { version: INVENTORY_VERSION, requestId: req.requestId, entries: keys.map(inventoryEntry), more });
      queueMicrotask(() => inventory.fromNode(nodeId, page));
    };
    const inventoryVersion = o.oldNodes?.includes(nodeId) ? 0 : INVENTORY_VERSION;
    registry.attach({ nodeId, kind: 'service', owner: '', signingKey: signingKey(nodeId), encryptionKey: new Uint8Array(32), firstSeenMs: 0, attachedAtMs: 0, connectionId: nodeId, inventoryVersion }, () => undefined, send);
  }
  const log = createLogger('test', 'silent');
  const service = new VaultService(store, registry, { run: () => Promise.reject(new Error('no sessions here')) } as unknown as SessionHub, log);
  const rebuild = new VaultRebuild(store, service, registry, inventory, log, 0);
  service.lazyRebuild = (id) => rebuild.lazy(id);
  return { store, service, rebuild, asked };
}

const everyone = (k: InventoryKey): Holdings => Object.fromEntries(NODES.map((n) => [n, [k]]));

t.test('an empty store gets the record the members agree on, OT setup marked as assumed', async (t) => {
  const { store, rebuild } = await setup(t, everyone(held(pkgAt(2))));
  const r = await rebuild.rebuild(['vault-1']);
  t.same(r.vaults, [{ vaultId: 'vault-1', outcome: 'created', epoch: 2, reason: '' }]);
  t.same(r.nodes.map((n) => n.status), ['answered', 'answered', 'answered']);
  t.match(await store.get('vault-1'), {
    vaultId: 'vault-1', owner: 'org_acme', tier: 'hosted', threshold: 2, epoch: 2, rotation: 2, state: 'active', publicKey: base.groupKey, chainCode: 'cc'.repeat(32),
    committee: [{ nodeId: 'n1', index: 1 }, { nodeId: 'n2', index: 2 }, { nodeId: 'n3', index: 3 }], pkg: pkgAt(2), otEpoch: 2, otAssumed: true,
  });
});

t.test('an older record comes forward; a newer one never goes back; another group key is never taken', async (t) => {
  const old: VaultRecord = {
    v: 2, vaultId: 'vault-1', owner: 'org_acme', tier: 'hosted', threshold: 2, committee: NODES.map((nodeId, i) => ({ nodeId, index: i + 1 })), epoch: 1, rotation: 1,
    publicKey: base.groupKey, chainCode: 'cc'.repeat(32), state: 'reshare_pending', problem: 'reshare to epoch 2 failed', pkg: pkgAt(1), otEpoch: 1, createdAtMs: 5, updatedAtMs: 5,
  };
  const fwd = await setup(t, everyone(held(pkgAt(2))), { records: [old] });
  t.match((await fwd.rebuild.rebuild()).vaults, [{ vaultId: 'vault-1', outcome: 'forwarded', epoch: 2 }], 'with no ids named: the records the coordinator holds');
  t.match(await fwd.store.get('vault-1'), { epoch: 2, rotation: 2, state: 'active', problem: undefined, createdAtMs: 5, pkg: pkgAt(2), otAssumed: true });

  const back = await setup(t, everyone(held(pkgAt(0))), { records: [old] });
  t.match((await back.rebuild.rebuild(['vault-1'])).vaults, [{ outcome: 'unchanged', epoch: 1 }]);
  t.same(await back.store.get('vault-1'), old, 'the record is as it was');

  const other = dealerKeys(['33'.repeat(32), '44'.repeat(32)], 3, 'cc'.repeat(32)).get(1)!.pkg;
  const swapped = await setup(t, everyone(held({ ...other, keyId: 'vault-1', epoch: 5 })), { records: [old] });
  t.match((await swapped.rebuild.rebuild(['vault-1'])).vaults, [{ outcome: 'skipped', reason: /another group key/ }]);
  t.same(await swapped.store.get('vault-1'), old, 'the record is as it was');
});

t.test('a node answering a false package does not make the coordinator adopt it', async (t) => {
  const forged = held(pkgAt(2, { verificationShares: { ...base.verificationShares, '3': base.verificationShares['1']! } }));
  const { store, rebuild } = await setup(t, { n1: [held(pkgAt(2))], n2: [held(pkgAt(2))], n3: [forged] });
  const r = await rebuild.rebuild(['vault-1']);
  t.match(r.vaults, [{ vaultId: 'vault-1', outcome: 'skipped', reason: /nodes disagree on epoch 2: n1, n2 against n3/ }]);
  t.equal(await store.get('vault-1'), undefined, 'nothing written');
});

t.test('a node from before the exchange is reported, not asked; a malformed page fails that node only', async (t) => {
  const bad = { ...held(pkgAt(2)), current: { pkg: { ...pkgAt(2), groupKey: 'zz' }, committee, receipts: [] } };
  const { store, rebuild, asked } = await setup(t, { n1: [held(pkgAt(2))], n2: [bad as InventoryKey], n3: [held(pkgAt(2))] }, { oldNodes: ['n3'] });
  const r = await rebuild.rebuild(['vault-1']);
  t.match(r.nodes, [
    { nodeId: 'n1', status: 'answered', keys: 1 },
    { nodeId: 'n2', status: 'failed', reason: /groupKey/ },
    { nodeId: 'n3', status: 'unsupported', reason: /from before them/ },
  ]);
  t.notOk(asked.includes('n3'), 'the old node was not asked');
  t.match(r.vaults, [{ outcome: 'skipped', reason: /only 1 of the 2 committee members needed confirm epoch 2/ }]);
  t.equal(await store.get('vault-1'), undefined);
});

t.test('a released vault is refused and stays released through a rebuild, until taken over', async (t) => {
  const { service, rebuild } = await setup(t, everyone(held(pkgAt(2))));
  await rebuild.rebuild(['vault-1']);
  await service.release('vault-1', 'b');
  await t.rejects(service.get('vault-1'), { code: 'vault_moved', message: /moved to coordinator shard b/ });
  t.match((await rebuild.rebuild(['vault-1'])).vaults, [{ outcome: 'moved' }]);
  await t.rejects(service.get('vault-1'), { code: 'vault_moved' }, 'still refused');
  t.match((await rebuild.rebuild(['vault-1'], true)).vaults, [{ outcome: 'unchanged', epoch: 2 }], 'a move back takes it over');
  t.match(await service.get('vault-1'), { epoch: 2, movedTo: undefined });
});

t.test('the lazy path: a request for a vault the store lost rebuilds it; one nobody holds stays unknown', async (t) => {
  const { service, asked } = await setup(t, everyone(held(pkgAt(1))));
  t.match(await service.get('vault-1'), { vaultId: 'vault-1', epoch: 1, state: 'active' });
  await t.rejects(service.get('vault-9'), { code: 'unknown_vault' });
  t.equal(asked.length, 6, 'each node asked once per lost vault');
});

t.test('adopting every key the nodes hold lists them page by page (the only coordinator of a deployment)', async (t) => {
  const keys = Array.from({ length: 150 }, (_, i) => held(pkgAt(0, { keyId: `vlt_${String(i).padStart(3, '0')}` })));
  const { store, rebuild, asked } = await setup(t, { n1: keys, n2: keys, n3: keys.slice(0, 10) });
  const r = await rebuild.rebuildAll();
  t.equal(r.vaults.length, 150, 'every key any node holds');
  t.ok(r.vaults.every((v) => v.outcome === 'created'), 'each confirmed by two or three members');
  t.same(r.nodes.map((n) => n.keys), [150, 150, 10]);
  t.equal(asked.length, 2 + 2 + 1, 'two pages of at most 100 from n1 and n2, one from n3');
  t.match(await store.get('vlt_149'), { epoch: 0, state: 'active' });
});
