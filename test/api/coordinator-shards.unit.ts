// Coordinator shards on the API side (docs/operations.md "Coordinator shards"): the configuration, where
// a new vault is placed, where each vault's calls go, what readiness says of each shard, and the start
// check that refuses a configuration missing a shard that holds vaults.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ConfigError } from '../../common/config.ts';
import { coordinatorShards, loadApiConfig, nodeCoordinatorAddresses } from '../../api/config.ts';
import { CoordinatorShards, SHARDS_IN_USE, attachedEverywhere } from '../../api/coordinator/coordinator-shards.ts';
import type { CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { buildApp } from '../../api/app.ts';
import { createLogger } from '../../common/logger.ts';
import { openTestStore } from '../support/test-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { VaultJobs } from '../../api/vaults/vault-jobs.ts';
import type { VaultRecord } from '../../api/vaults/records.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';

const log = createLogger('test', 'silent');

/** A stand-in coordinator: the nodes it reports attached, or unavailable when `down`; it counts the calls it takes. */
function fake(name: string, nodes: string[] = [], state: { down?: boolean; unsignable?: unknown } = {}) {
  const calls: string[] = [];
  const unavailable = () => new CustodyError('unavailable', `${name} is down`);
  const client = {
    listNodes: async (req: { signing?: boolean } = {}) => {
      if (state.down) throw unavailable();
      return { nodes: nodes.map((id) => ({ nodeId: id, kind: 1, owner: '' })), ...(req.signing && state.unsignable ? { unsignable: state.unsignable } : {}) };
    },
    proposeCommittee: async () => {
      calls.push('proposeCommittee');
      if (state.down) throw unavailable();
      return { threshold: 2, rosterVersion: 1n, members: [] };
    },
    createVault: async (req: { vaultId: string }) => {
      calls.push(`createVault ${req.vaultId}`);
      if (state.down) throw unavailable();
      return { vault: { vaultId: req.vaultId, state: 'active', publicKey: new Uint8Array(33).fill(2), chainCode: new Uint8Array(32), rotation: 0, committee: [] } };
    },
    close: () => calls.push('close'),
  };
  return { client: client as unknown as CoordinatorClient, calls, state };
}

t.test('API_COORDINATORS names the shards; API_COORDINATOR is the one shard `default`', async (t) => {
  t.same(coordinatorShards(loadApiConfig({ API_COORDINATORS: 'a=127.0.0.1:7400,b-2=localhost:7401' })), [{ name: 'a', address: '127.0.0.1:7400' }, { name: 'b-2', address: 'localhost:7401' }]);
  t.same(coordinatorShards(loadApiConfig({ API_COORDINATOR: '127.0.0.1:7400' })), [{ name: 'default', address: '127.0.0.1:7400' }]);
  t.same(coordinatorShards(loadApiConfig({})), []);
  const refused = (env: Record<string, string>, why: RegExp) => t.throws(() => loadApiConfig(env), { constructor: ConfigError, message: why }, why.source);
  refused({ API_COORDINATOR: '127.0.0.1:7400', API_COORDINATORS: 'a=127.0.0.1:7401' }, /set one/);
  refused({ API_COORDINATORS: 'a=127.0.0.1:7400,a=127.0.0.1:7401' }, /shard name appears twice/);
  refused({ API_COORDINATORS: 'a=127.0.0.1:7400,b=127.0.0.1:7400' }, /same coordinator address/);
  refused({ API_COORDINATORS: 'a=127.0.0.1:7400,b=10.0.0.5:7400' }, /API_COORDINATORS.*loopback only.*10\.0\.0\.5/);
  refused({ API_COORDINATORS: 'A=127.0.0.1:7400' }, /API_COORDINATORS/);
  refused({ API_COORDINATORS: '127.0.0.1:7400' }, /API_COORDINATORS/);
  // With mutual TLS, shards off loopback are fine.
  const tls = { API_COORDINATOR_TLS_CA: 'ca.pem', API_COORDINATOR_TLS_CERT: 'c.pem', API_COORDINATOR_TLS_KEY: 'k.pem' };
  t.equal(coordinatorShards(loadApiConfig({ ...tls, API_COORDINATORS: 'a=coord-a:7400,b=coord-b:7400' })).length, 2);
  // Customer nodes are told every coordinator.
  t.same(nodeCoordinatorAddresses(loadApiConfig({ API_NODE_COORDINATOR_ADDRESS: 'a.example:7400,b.example:7400' })), ['a.example:7400', 'b.example:7400']);
  t.same(nodeCoordinatorAddresses(loadApiConfig({ API_NODE_COORDINATOR_ADDRESS: 'a.example:7400' })), ['a.example:7400']);
});

t.test('placement is stable, spreads vaults, ignores the order of shards, and a new shard takes only new vaults', async (t) => {
  const two = new CoordinatorShards([{ name: 'a', address: '', client: fake('a').client }, { name: 'b', address: '', client: fake('b').client }]);
  const reversed = new CoordinatorShards([...two.all()].reverse());
  const ids = Array.from({ length: 400 }, (_, i) => `vlt_${i.toString(16).padStart(24, '0')}`);
  const placed = ids.map((id) => two.placement(id));
  t.same(ids.map((id) => two.placement(id)), placed, 'the same answer every time');
  t.same(ids.map((id) => reversed.placement(id)), placed, 'whatever the order shards are listed in');
  const onA = placed.filter((s) => s === 'a').length;
  t.ok(onA > 150 && onA < 250, `both shards take vaults (${onA} of 400 on a)`);
  const three = new CoordinatorShards([...two.all(), { name: 'c', address: '', client: fake('c').client }]);
  const moved = ids.filter((id, i) => three.placement(id) !== placed[i]);
  t.ok(moved.every((id) => three.placement(id) === 'c'), 'a vault placed differently with a third shard would go to the new shard only');
  t.ok(moved.length > 80 && moved.length < 190, `about a third would (${moved.length})`);
});

t.test('each vault\'s calls go to its shard; unplaced records go to `default` or the first; an unknown shard is unavailable', async (t) => {
  const [a, b] = [fake('a'), fake('b')];
  const shards = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'b', address: '', client: b.client }]);
  t.equal(shards.forVault({ id: 'v1', coordinator_shard: 'b' }), b.client);
  t.equal(shards.forVault({ id: 'v1', coordinator_shard: 'a' }), a.client);
  t.equal(shards.forVault({ id: 'v2' }), a.client, 'a record from before shards: the first shard');
  const d = fake('default');
  const withDefault = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'default', address: '', client: d.client }]);
  t.equal(withDefault.forVault({ id: 'v2' }), d.client, 'or the shard API_COORDINATOR was');
  t.throws(() => shards.forVault({ id: 'v3', coordinator_shard: 'gone' }), { constructor: CustodyError, code: 'unavailable', message: /shard gone/ });
  // One client is a one-shard set.
  t.equal(CoordinatorShards.of(a.client)!.forVault({ id: 'v4', coordinator_shard: 'default' }), a.client);
  t.equal(CoordinatorShards.of(undefined), undefined);
  t.equal(CoordinatorShards.of(shards), shards);
});

t.test('a call about no vault goes to the first shard that answers (or has the nodes); any other answer is not retried elsewhere', async (t) => {
  const [a, b] = [fake('a', [], { down: true }), fake('b')];
  const shards = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'b', address: '', client: b.client }]);
  await shards.any((c) => c.proposeCommittee({}));
  t.same([a.calls, b.calls], [['proposeCommittee'], ['proposeCommittee']], 'a was down, b answered');
  let n = 0;
  await t.rejects(shards.any(async () => {
    n++;
    throw new CustodyError('invalid_request', 'a bad tier');
  }), { code: 'invalid_request' });
  t.equal(n, 1, 'tried once');
  b.state.down = true;
  await t.rejects(shards.any((c) => c.proposeCommittee({})), { code: 'unavailable' }, 'every shard down');
});

t.test('readiness: ready only when every shard answers, each shard reported, nodes attached to all of them', async (t) => {
  const [a, b] = [fake('a', ['n1', 'n2', 'n3']), fake('b', ['n1', 'n3'])];
  const shards = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'b', address: '', client: b.client }]);
  const app = await buildApp({ config: loadApiConfig({}), logger: log, coordinator: shards });
  t.teardown(() => app.close());
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 200);
  t.same(ready.json(), {
    status: 'ready', coordinator: 'reachable', coordinators: [{ name: 'a', state: 'reachable', node_count: 3 }, { name: 'b', state: 'reachable', node_count: 2 }],
    store: 'not_configured', nodes: [{ id: 'n1', kind: 'service', owner: null }, { id: 'n3', kind: 'service', owner: null }], node_count: 2, vaults_unable_to_sign: null,
  });
  b.state.down = true;
  const down = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(down.statusCode, 503);
  t.match(down.json(), { status: 'unavailable', coordinator: 'unreachable', coordinators: [{ name: 'a', state: 'reachable' }, { name: 'b', state: 'unreachable', node_count: 0 }], node_count: 3 });
  t.same(attachedEverywhere([]), []);
});

t.test('readiness names the vaults that cannot sign, summed over the shards, without making the API unready', async (t) => {
  const detached = { vaultId: 'v-a', readiness: { ready: false, reason: 'members_detached', detached: ['n2', 'n3'], missingPairs: [], message: 'x' } };
  const missing = (id: string) => ({ vaultId: id, readiness: { ready: false, reason: 'ot_pairs_missing', detached: [], missingPairs: ['1-3', '2-3'], message: 'y' } });
  const a = fake('a', ['n1'], { unsignable: { count: 1, reasons: { members_detached: 1 }, vaults: [detached] } });
  const b = fake('b', ['n1'], { unsignable: { count: 25, reasons: { ot_pairs_missing: 25 }, vaults: Array.from({ length: 20 }, (_, i) => missing(`v-b${i}`)) } });
  const shards = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'b', address: '', client: b.client }]);
  const app = await buildApp({ config: loadApiConfig({}), logger: log, coordinator: shards });
  t.teardown(() => app.close());
  const r = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(r.statusCode, 200, 'still ready: the coordinators answer');
  const u = r.json().vaults_unable_to_sign;
  t.same([u.count, u.reasons], [26, { members_detached: 1, ot_pairs_missing: 25 }], 'every vault counted, by reason');
  t.equal(u.vaults.length, 20, 'at most 20 named');
  t.same(u.vaults[0], { vault_id: 'v-a', shard: 'a', reason: 'members_detached', detached_members: ['n2', 'n3'], missing_pairs: [] });
  t.same(u.vaults[1], { vault_id: 'v-b0', shard: 'b', reason: 'ot_pairs_missing', detached_members: [], missing_pairs: ['1-3', '2-3'] });
});

t.test('a vault is placed at creation, its key generated on its shard, and a missing shard stops the API at start', async (t) => {
  const { dir, store } = await openTestStore('api-shards-');
  t.teardown(() => store.close());
  const [a, b] = [fake('a'), fake('b')];
  const shards = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'b', address: '', client: b.client }]);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 50 }, placeVault: (id) => shards.placement(id) });
  const { org } = await vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())));
  const created: VaultRecord[] = [];
  // Until both shards hold one (about one in two per creation).
  while (new Set(created.map((v) => v.coordinator_shard)).size < 2 && created.length < 40) created.push(await vaults.createVault(org.id, { tier: 'hosted' }));
  t.ok(created.every((v) => v.coordinator_shard === shards.placement(v.id)), 'each record names the shard its id hashes to');
  const inUse: string[] = [];
  for await (const r of store.all<{ name: string }>(SHARDS_IN_USE)) inUse.push(r.name);
  t.same(inUse.sort(), ['a', 'b'], 'the shards in use are listed for the start check');

  const jobs = new VaultJobs(vaults, shards, log, 20);
  jobs.start();
  t.teardown(() => jobs.stop());
  await waitUntil(async () => (await Promise.all(created.map((v) => store.get<VaultRecord>('vaults', v.id)))).every((v) => v?.state === 'active'), 10_000, 'vaults active');
  for (const v of created) {
    const on = v.coordinator_shard === 'a' ? a : b;
    const off = v.coordinator_shard === 'a' ? b : a;
    t.ok(on.calls.includes(`createVault ${v.id}`) && !off.calls.includes(`createVault ${v.id}`), `${v.id}: key generated on shard ${v.coordinator_shard} only`);
  }

  // Renaming b (or dropping it) is refused at start; adding a shard is not.
  const renamed = new CoordinatorShards([{ name: 'a', address: '', client: a.client }, { name: 'c', address: '', client: b.client }]);
  await t.rejects(buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: log, vaults, coordinator: renamed }), { constructor: ConfigError, message: /shard b, which is not configured/ });
  const grown = new CoordinatorShards([...shards.all(), { name: 'c', address: '', client: fake('c').client }]);
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: log, vaults, coordinator: grown });
  await app.close();
});
