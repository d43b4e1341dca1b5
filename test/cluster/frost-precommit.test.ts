// Precommitted FROST nonces across real node processes over gRPC (docs/protocols/pools.md "FROST"), with
// the coordinator in this process so the test can play a dishonest one. Nodes keep a rollback anchor.
// A precommit session returns each node's commitments signed by its identity key; an honest
// precommitted Taproot signing relays one round of envelopes and verifies (noble); a coordinator that
// replays an entry, hands a node another node's entry, alters a node's commitments, names an entry of
// another path or signer set, or one a node took before it restarted, is refused with no envelope
// relayed; the coordinator's fallback signs with two rounds; its pool refills when idle.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, freePort, type Proc } from './cluster-harness.ts';
import { PATH, taprootSpend } from './taproot-spend.ts';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';
import { signParams } from '../../core/session/session-contract.ts';
import type { PrecommittedNonce } from '../../core/session/session-params.ts';
import { Protocol, type Envelope, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { SignInput } from '../../coordinator/vaults/vault-service.ts';
import type { SessionOutcome } from '../../coordinator/sessions/session-hub.ts';
import { newSessionId } from '../node/session-ids.ts';

t.setTimeout(600_000);

const ORG = 'org_acme';
const VAULT = 'vault-frost-pool';
const apiSecret = new Uint8Array(randomBytes(32));
const OTHER_PATH = [86, 1, 0, 0, 1];

interface Harness {
  cluster: Cluster;
  coordinator: RunningCoordinator;
  relayed: Envelope[];
  env: (name: string) => Record<string, string>;
}

async function setup(t: Test, poolTarget: number): Promise<Harness> {
  const cluster = new Cluster();
  const dir = mkdtempSync(join(tmpdir(), 'coord-frost-pool-'));
  const port = await freePort();
  const rosterFile = await cluster.roster(['node-1', 'node-2', 'node-3']);
  const coordinator = await startCoordinator(loadCoordinatorConfig({ COORDINATOR_LISTEN: `127.0.0.1:${port}`, COORDINATOR_DATA_DIR: dir, COORDINATOR_ROSTER_FILE: rosterFile, COORDINATOR_HEARTBEAT_MS: '1000', COORDINATOR_SIGN_TIMEOUT_MS: '20000', COORDINATOR_ATTACH_WAIT_MS: '5000', COORDINATOR_FROST_NONCE_POOL_TARGET: String(poolTarget) }), createLogger('coordinator', process.env.DEBUG_COORD ? 'warn' : 'silent'));
  cluster.useCoordinatorPort(port);
  const keysFile = join(cluster.dir, 'api-keys.json');
  writeFileSync(keysFile, JSON.stringify({ [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } }));
  const h: Harness = { cluster, coordinator, relayed: [], env: (name) => ({ NODE_API_KEYS_FILE: keysFile, NODE_ROLLBACK_ANCHOR_FILE: join(cluster.dir, `${name}.anchor`) }) };
  coordinator.hub.tap = (_sid, env) => {
    h.relayed.push(env);
    return undefined;
  };
  t.teardown(async () => {
    await cluster.stop();
    await coordinator.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return h;
}

/** A Taproot spend request of the wallet at `path` (the template's own output is at PATH, as the nodes check). */
function request(groupKey: string, chainCode: string, path = PATH): SignInput & { q: Uint8Array } {
  const s = taprootSpend(ORG, apiSecret, groupKey, chainCode);
  return { vaultId: VAULT, path, scheme: 'taproot', digests: [s.digest], intent: s.intent, intentSignature: s.signature, apiKeyId: 'key_1', endUserToken: '', template: s.template, q: s.q };
}

t.test('precommitted Taproot over gRPC: one round, and every misuse of an entry refused', async (t) => {
  const h = await setup(t, 0);
  const procs = new Map<string, { proc: Proc; nodeId: string }>();
  for (const name of ['node-1', 'node-2', 'node-3']) procs.set(name, await h.cluster.startNode(name, h.env(name)));
  const nameOf = (nodeId: string) => [...procs].find(([, p]) => p.nodeId === nodeId)![0];
  const created = await h.coordinator.vaults.createVault({ vaultId: VAULT, owner: ORG, tier: 'hosted' });
  const { publicKey: groupKey, chainCode } = created;
  const vault = await h.coordinator.vaults.get(VAULT);
  const indexOf = (nodeId: string) => vault.committee.find((m) => m.nodeId === nodeId)!.index;
  const party = (nodeId: string): Party => {
    const n = h.coordinator.registry.get(nodeId)!;
    return { $typeName: 'mpc.v1.Party', nodeId, index: indexOf(nodeId), signingKey: n.signingKey, encryptionKey: n.encryptionKey };
  };
  const rogue = async (signers: string[], input: SignInput, row: PrecommittedNonce[]): Promise<{ outcome: SessionOutcome; relayed: number }> => {
    const sessionId = newSessionId(20_000);
    const params = signParams.encode({
      keyId: VAULT, epoch: vault.epoch, path: input.path, scheme: 'taproot', digests: input.digests, intent: input.intent, intentSignature: input.intentSignature,
      apiKeyId: input.apiKeyId, template: input.template, endUserToken: '', precommitted: [row],
    });
    const outcome = await h.coordinator.hub.run({ sessionId, requestId: '', protocol: Protocol.SIGN_SCHNORR, keyId: VAULT, parties: signers.map(party), params, timeoutMs: 20_000 });
    return { outcome, relayed: h.relayed.filter((e) => bytesToHex(e.sessionId) === bytesToHex(sessionId)).length };
  };
  const refusedBy = (t: Test, r: { outcome: SessionOutcome; relayed: number }, codes: Record<string, string>, what: string) => {
    t.notOk(r.outcome.ok, `${what}: the session fails`);
    if (!r.outcome.ok) {
      t.ok(r.outcome.reports.length >= 1, `${what}: a node reported`);
      for (const rep of r.outcome.reports) t.equal(rep.code, codes[rep.nodeId], `${what}: ${nameOf(rep.nodeId)} refuses with ${codes[rep.nodeId]}`);
    }
    t.equal(r.relayed, 0, `${what}: no envelope was relayed`);
  };

  const made = await h.coordinator.vaults.precommit({ vaultId: VAULT, path: PATH, scheme: 'taproot', count: 4 });
  t.equal(made.rows.length, 4, 'a precommit session made four rows');
  const [a, b] = made.signers as [string, string];
  const c = vault.committee.map((m) => m.nodeId).find((n) => n !== a && n !== b)!;
  const [r0, r1, r2] = made.rows as [PrecommittedNonce[], PrecommittedNonce[], PrecommittedNonce[]];
  const ia = indexOf(a);
  const own = (row: PrecommittedNonce[], nodeId: string) => row.find((e) => e.party === indexOf(nodeId))!;

  const honest = request(groupKey, chainCode);
  const before = h.relayed.length;
  const signed = await h.coordinator.vaults.sign({ ...honest, precommitted: { ...made, rows: [r0] } });
  t.same([...new Set(h.relayed.slice(before).map((e) => e.round))], [1], 'every envelope of the session is of its one round');
  t.same([...signed.signers].sort(), [a, b].sort(), 'signed by the pair that precommitted');
  t.ok(schnorr.verify(signed.signatures[0]!, honest.digests[0]!, honest.q), 'the precommitted Taproot signature verifies (noble)');

  refusedBy(t, await rogue([a, b], request(groupKey, chainCode), r0), { [a]: 'nonce_used', [b]: 'nonce_used' }, 'a replayed entry');
  const stolen = [{ ...own(r1, b), party: ia }, own(r1, b)];
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode), stolen), { [a]: 'wrong_commitment', [b]: 'wrong_commitment' }, 'another node\'s entry named for a');
  const altered = [{ ...own(r1, a), hiding: own(r2, a).hiding }, own(r1, b)];
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode), altered), { [a]: 'wrong_commitment', [b]: 'wrong_commitment' }, 'a\'s commitments altered');
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode, OTHER_PATH), r1), { [a]: 'wrong_commitment', [b]: 'wrong_commitment' }, 'an entry of another path');
  refusedBy(t, await rogue([a, c], request(groupKey, chainCode), [own(r1, a), { ...own(r1, b), party: indexOf(c) }]), { [a]: 'wrong_commitment', [c]: 'wrong_commitment' }, 'an entry of another signer set');

  // Node a restarts after it took r0's entry: the take is on its disk.
  const name = nameOf(a);
  await procs.get(name)!.proc.kill('SIGTERM');
  procs.set(name, await h.cluster.startNode(name, h.env(name)));
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode), r0), { [a]: 'nonce_used', [b]: 'nonce_used' }, 'an entry taken before the node restarted');

  const later = request(groupKey, chainCode);
  const again = await h.coordinator.vaults.sign({ ...later, precommitted: { ...made, rows: [r1] } });
  t.ok(schnorr.verify(again.signatures[0]!, later.digests[0]!, later.q), 'r1, refused for the misuses above, still signs for its own path and pair');

  const fallback = request(groupKey, chainCode);
  const opened = h.relayed.length;
  const full = await h.coordinator.vaults.sign({ ...fallback, precommitted: { ...made, rows: [r0] } });
  t.ok(schnorr.verify(full.signatures[0]!, fallback.digests[0]!, fallback.q), 'a refused row falls back to two rounds, which sign');
  t.ok(h.relayed.slice(opened).some((e) => e.round === 2), 'with a round 2');
});

t.test('the coordinator\'s nonce pool refills when idle, and a request uses a row when one is ready', async (t) => {
  const h = await setup(t, 2);
  for (const name of ['node-1', 'node-2', 'node-3']) await h.cluster.startNode(name, h.env(name));
  const created = await h.coordinator.vaults.createVault({ vaultId: VAULT, owner: ORG, tier: 'hosted' });
  const pool = h.coordinator.vaults.noncePool;
  t.equal(pool.size(VAULT, created.epoch, 'taproot', PATH), 0, 'the pool starts empty');
  const first = request(created.publicKey, created.chainCode);
  let mark = h.relayed.length;
  const one = await h.coordinator.vaults.sign(first);
  t.ok(schnorr.verify(one.signatures[0]!, first.digests[0]!, first.q), 'the first request signs with two rounds');
  t.ok(h.relayed.slice(mark).some((e) => e.round === 2), 'round 2 was relayed');
  for (let i = 0; i < 600 && pool.size(VAULT, created.epoch, 'taproot', PATH) < 2; i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(pool.size(VAULT, created.epoch, 'taproot', PATH), 2, 'once idle, the pool holds the target of two rows');
  const second = request(created.publicKey, created.chainCode);
  mark = h.relayed.length;
  const two = await h.coordinator.vaults.sign(second);
  t.ok(schnorr.verify(two.signatures[0]!, second.digests[0]!, second.q), 'the second request signs');
  t.same([...new Set(h.relayed.slice(mark).map((e) => e.round))], [1], 'in one round');
});
