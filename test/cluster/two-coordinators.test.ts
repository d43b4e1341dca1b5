// Two coordinator shards (docs/operations.md "Coordinator shards"), as real processes: three signer nodes
// attached to both, vaults placed on each shard by the API's placement and driven through the API's
// shard routing, Taproot signatures checked with @noble/curves. Each coordinator is restarted in turn on
// its data directory, once stopped cleanly and once killed: the other shard's vault keeps signing
// meanwhile, and the restarted shard's vault signs again from the key record it kept.
import { PATH, taprootSpend as sharedSpend } from './taproot-spend.ts';
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, freePort, waitUntil } from './cluster-harness.ts';
import { CoordinatorShards } from '../../api/coordinator/coordinator-shards.ts';
import { Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';

// Real processes on a 2-core machine shared with the rest of the suite.
t.setTimeout(180_000);

const ORG = 'org_acme';
const apiSecret = new Uint8Array(randomBytes(32));

interface Vault {
  id: string;
  shard: string;
  groupKey: string;
  chainCode: string;
}

function taprootSpend(v: Vault) {
  return sharedSpend(ORG, apiSecret, v.groupKey, v.chainCode);
}

t.test('vaults on two coordinator shards sign; each coordinator restarted in turn, the other shard signing meanwhile', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  await cluster.roster(['node-1', 'node-2', 'node-3']);
  // Signing waits for committee members that are redialing the restarted coordinator.
  const coordinatorEnv = { COORDINATOR_ATTACH_WAIT_MS: '15000', COORDINATOR_SIGN_TIMEOUT_MS: '30000' };
  await Promise.all([cluster.startShard('a', coordinatorEnv), cluster.startShard('b', coordinatorEnv)]);
  const keysFile = join(cluster.dir, 'api-keys.json');
  writeFileSync(keysFile, JSON.stringify({ [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } }));
  const metricsPort = await freePort();
  const nodes = await Promise.all(['node-1', 'node-2', 'node-3'].map((n, i) => cluster.startNode(n, { NODE_API_KEYS_FILE: keysFile, ...(i === 0 ? { NODE_METRICS_LISTEN: `127.0.0.1:${metricsPort}` } : {}) })));
  t.equal(nodes.length, 3, 'every node attached to both coordinators');

  const [addrA, addrB] = cluster.coordinatorAddresses();
  const shards = CoordinatorShards.connect([{ name: 'a', address: addrA! }, { name: 'b', address: addrB! }], {});
  t.teardown(() => shards.close());
  await waitUntil(async () => (await shards.states()).every((s) => s.state === 'reachable' && s.nodes.length === 3), 20_000, 'three nodes on each shard');
  // The API process, given both shards (API_COORDINATORS), is ready with each shard reported.
  await cluster.startApi();
  const apiReady = async () => {
    const r = await fetch(`http://127.0.0.1:${cluster.apiPort}/readyz`);
    return { status: r.status, body: await r.json() as unknown };
  };
  t.match(await apiReady(), { status: 200, body: { status: 'ready', coordinators: [{ name: 'a', state: 'reachable', node_count: 3 }, { name: 'b', state: 'reachable', node_count: 3 }], node_count: 3 } });

  // The first vault ids that the API's placement puts on each shard.
  const ids = { a: '', b: '' };
  for (let i = 0; !ids.a || !ids.b; i++) {
    const id = `vlt_two_${i}`;
    const shard = shards.placement(id) as 'a' | 'b';
    ids[shard] ||= id;
  }
  const vaults = await Promise.all((['a', 'b'] as const).map(async (shard): Promise<Vault> => {
    const id = ids[shard];
    const { vault } = await shards.forVault({ id, coordinator_shard: shard }).createVault({ vaultId: id, owner: ORG, tier: Tier.HOSTED, requestId: `${id}:job_1` }, { deadline: Date.now() + 60_000 });
    t.equal(vault?.state, 'active', `vault on shard ${shard} generated`);
    return { id, shard, groupKey: bytesToHex(vault!.publicKey), chainCode: bytesToHex(vault!.chainCode) };
  }));
  const [onA, onB] = vaults as [Vault, Vault];
  // Each shard keeps its own vaults' records. Asked directly about the other's vault (the API never does:
  // it sends a vault's work to its shard only), a shard rebuilds that record from the nodes
  // (docs/operations.md "Rebuilding a coordinator's records"); an id no node holds stays unknown.
  const seen = await shards.forVault({ id: onA.id, coordinator_shard: 'b' }).getVault({ vaultId: onA.id }, { deadline: Date.now() + 20_000 });
  t.equal(bytesToHex(seen.vault!.publicKey), onA.groupKey, 'shard b rebuilds a\'s vault from the nodes when asked');
  await t.rejects(shards.forVault({ id: 'vlt_nowhere', coordinator_shard: 'b' }).getVault({ vaultId: 'vlt_nowhere' }), { code: 'unknown_vault' }, 'a vault no node holds is unknown');

  const sign = async (v: Vault, what: string) => {
    const spend = taprootSpend(v);
    const res = await shards.forVault({ id: v.id, coordinator_shard: v.shard }).sign({
      vaultId: v.id, path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: [spend.digest], requestId: `txn_${v.shard}_${bytesToHex(randomBytes(4))}`,
      authorization: { intent: spend.intent, intentSignature: spend.signature, apiKeyId: 'key_1', template: spend.template },
    }, { deadline: Date.now() + 40_000 });
    t.ok(schnorr.verify(res.signatures[0]!, spend.digest, spend.q), `${what}: the signature verifies (noble)`);
  };
  await Promise.all([sign(onA, 'shard a'), sign(onB, 'shard b')]);

  const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const gauge = (text: string, address: string) => Number(new RegExp(`^node_coordinator_attached\\{coordinator="${address.replace(/\./g, '\\.')}"\\} (\\d)$`, 'm').exec(text)?.[1]);

  for (const [victim, survivor, signal] of [[onB, onA, 'SIGTERM'], [onA, onB, 'SIGKILL']] as const) {
    const address = victim.shard === 'a' ? addrA! : addrB!;
    const proc = cluster.shards.get(victim.shard)!.proc!;
    await proc.kill(signal);
    // The node sees the loss: that link's gauge drops, and it is not ready (a shard it is off cannot sign).
    await waitUntil(async () => gauge(await scrape(), address) === 0, 10_000, `node-1 detached from ${victim.shard}`);
    t.equal(gauge(await scrape(), victim.shard === 'a' ? addrB! : addrA!), 1, 'still attached to the other shard');
    t.equal((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status, 503, 'not ready while off one shard');
    t.match(await apiReady(), {
      status: 503, body: { status: 'unavailable', coordinators: [{ name: 'a', state: victim.shard === 'a' ? 'unreachable' : 'reachable' }, { name: 'b', state: victim.shard === 'b' ? 'unreachable' : 'reachable' }] },
    }, 'the API is not ready while a shard is away, and says which');
    // The surviving shard's vault signs while the other coordinator is away.
    await sign(survivor, `shard ${survivor.shard} with ${victim.shard} down (${signal})`);

    await cluster.startShard(victim.shard, coordinatorEnv);
    // As the API's /readyz sees it: the shard answers again once its client has redialed.
    await waitUntil(async () => (await shards.states()).every((s) => s.state === 'reachable'), 15_000, `shard ${victim.shard} reachable again`);
    const back = await shards.forVault({ id: victim.id, coordinator_shard: victim.shard }).getVault({ vaultId: victim.id }, { deadline: Date.now() + 10_000 });
    t.equal(bytesToHex(back.vault!.publicKey), victim.groupKey, `shard ${victim.shard} kept its vault's key record over the ${signal} restart`);
    // Its vault's next session succeeds once the nodes are back on it (the coordinator waits for them).
    await sign(victim, `shard ${victim.shard} after its ${signal} restart`);
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200, 10_000, 'node-1 ready again');
    await waitUntil(async () => (await apiReady()).status === 200, 10_000, 'the API ready again');
  }
});
