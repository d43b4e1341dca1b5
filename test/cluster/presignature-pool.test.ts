// ECDSA presignature pools across real node processes over gRPC (docs/protocols/pools.md), with the
// coordinator in this process so the test can play a dishonest one. Nodes keep a rollback anchor, so
// they keep entries. An honest pooled signing runs only the online round (every envelope of its session
// is of round 1) and its signature verifies with noble and viem. A coordinator that replays an entry id,
// names an unknown one, one of another path or signer set, or one a node took before it restarted, is
// refused (each report names the node's own reason), with no envelope relayed; the coordinator's own fallback signs such a
// request with the full protocol.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import * as viem from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { Cluster, freePort, type Proc } from './cluster-harness.ts';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';
import { encodeIntent, signIntent } from '../../core/intents/intent.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { signParams } from '../../core/session/session-contract.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { Protocol, type Envelope, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { SignInput } from '../../coordinator/vaults/vault-service.ts';
import type { SessionOutcome } from '../../coordinator/sessions/session-hub.ts';
import { newSessionId } from '../node/session-ids.ts';

t.setTimeout(600_000);

const ORG = 'org_acme';
const VAULT = 'vault-pool';
const apiSecret = new Uint8Array(randomBytes(32));
const PATH = [44, 60, 0, 0, 0];
const OTHER_PATH = [44, 60, 0, 0, 1];

interface Harness {
  cluster: Cluster;
  coordinator: RunningCoordinator;
  relayed: Envelope[];
  env: (name: string) => Record<string, string>;
}

async function setup(t: Test, poolTarget: number): Promise<Harness> {
  const cluster = new Cluster();
  const dir = mkdtempSync(join(tmpdir(), 'coord-pool-'));
  const port = await freePort();
  const rosterFile = await cluster.roster(['node-1', 'node-2', 'node-3']);
  const coordinator = await startCoordinator(loadCoordinatorConfig({ COORDINATOR_LISTEN: `127.0.0.1:${port}`, COORDINATOR_DATA_DIR: dir, COORDINATOR_ROSTER_FILE: rosterFile, COORDINATOR_HEARTBEAT_MS: '1000', COORDINATOR_SIGN_TIMEOUT_MS: '20000', COORDINATOR_ATTACH_WAIT_MS: '5000', COORDINATOR_PRESIGN_POOL_TARGET: String(poolTarget) }), createLogger('coordinator', process.env.DEBUG_COORD ? 'warn' : 'silent'));
  cluster.useCoordinatorPort(port);
  const keysFile = join(cluster.dir, 'api-keys.json');
  writeFileSync(keysFile, JSON.stringify({ [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } }));
  const h: Harness = {
    cluster, coordinator, relayed: [],
    // The anchor sits beside the data directory here; in production it lives where the host cannot roll it back.
    env: (name) => ({ NODE_API_KEYS_FILE: keysFile, NODE_ROLLBACK_ANCHOR_FILE: join(cluster.dir, `${name}.anchor`) }),
  };
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

let nonce = 0;
/** A signing request of an EVM transfer from the wallet at `path`, with a fresh nonce. */
function request(groupKey: string, chainCode: string, path: number[]): SignInput {
  const derived = derive(groupKey, chainCode, path).publicKey;
  const from = publicKeyToAddress(viem.toHex(derived.toBytes(false)));
  const n = nonce++;
  const fields = {
    kind: 'evm.transfer' as const, organization: ORG, walletId: 'w-pool', chainId: 31337n, nonce: BigInt(n), from: viem.hexToBytes(from), to: viem.hexToBytes('0x000000000000000000000000000000000000b0b0'),
    asset: { kind: 'native' as const }, amount: viem.parseEther('0.1'), data: new Uint8Array(), maxFee: viem.parseEther('0.01'), idempotencyKey: `pool-${n}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const template = { nonce: n, gasLimit: 21_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  const intent = encodeIntent(fields);
  return {
    vaultId: VAULT, path, scheme: 'ecdsa', digests: [evmSigningDigest(evmTransaction(fields, template))],
    intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'key_1', endUserToken: '',
    template: encodeBlob('evm-template', { nonce: n, gasLimit: '21000', maxFeePerGas: String(template.maxFeePerGas), maxPriorityFeePerGas: String(template.maxPriorityFeePerGas) }),
  };
}

t.test('pooled ECDSA over gRPC: one online round, and every misuse of an entry refused', async (t) => {
  // The coordinator's own pool stays off here: the test names every entry itself.
  const h = await setup(t, 0);
  const procs = new Map<string, { proc: Proc; nodeId: string }>();
  for (const name of ['node-1', 'node-2', 'node-3']) procs.set(name, await h.cluster.startNode(name, h.env(name)));
  const nameOf = (nodeId: string) => [...procs].find(([, p]) => p.nodeId === nodeId)![0];
  const created = await h.coordinator.vaults.createVault({ vaultId: VAULT, owner: ORG, tier: 'hosted' });
  const groupKey = created.publicKey;
  const chainCode = created.chainCode;
  const vault = await h.coordinator.vaults.get(VAULT);
  const indexOf = (nodeId: string) => vault.committee.find((m) => m.nodeId === nodeId)!.index;
  const party = (nodeId: string): Party => {
    const n = h.coordinator.registry.get(nodeId)!;
    return { $typeName: 'mpc.v1.Party', nodeId, index: indexOf(nodeId), signingKey: n.signingKey, encryptionKey: n.encryptionKey };
  };
  /** A dishonest coordinator's signing session: any signers, any entries. */
  const rogue = async (signers: string[], input: SignInput, entryIds: string[]): Promise<{ outcome: SessionOutcome; relayed: number }> => {
    const sessionId = newSessionId(20_000);
    const params = signParams.encode({
      keyId: VAULT, epoch: vault.epoch, path: input.path, scheme: 'ecdsa', digests: input.digests, intent: input.intent, intentSignature: input.intentSignature,
      apiKeyId: input.apiKeyId, template: input.template, endUserToken: '', presignatures: entryIds,
    });
    const outcome = await h.coordinator.hub.run({ sessionId, requestId: '', protocol: Protocol.SIGN_ECDSA, keyId: VAULT, parties: signers.map(party), params, timeoutMs: 20_000 });
    return { outcome, relayed: h.relayed.filter((e) => bytesToHex(e.sessionId) === bytesToHex(sessionId)).length };
  };
  const refusedBy = (t: Test, r: { outcome: SessionOutcome; relayed: number }, codes: Record<string, string>, what: string) => {
    t.notOk(r.outcome.ok, `${what}: the session fails`);
    // The first refusal ends the session (the other node is cancelled): every report that arrived names the node's own reason.
    if (!r.outcome.ok) {
      t.ok(r.outcome.reports.length >= 1, `${what}: a node reported`);
      for (const rep of r.outcome.reports) t.equal(rep.code, codes[rep.nodeId], `${what}: ${nameOf(rep.nodeId)} refuses with ${codes[rep.nodeId]}`);
    }
    t.equal(r.relayed, 0, `${what}: no envelope was relayed`);
  };

  const made = await h.coordinator.vaults.presign({ vaultId: VAULT, path: PATH, count: 3 });
  t.equal(made.entryIds.length, 3, 'a presigning session made three entries');
  t.equal(made.signers.length, 2, 'for a signer pair');
  const [a, b] = made.signers as [string, string];
  const c = vault.committee.map((m) => m.nodeId).find((n) => n !== a && n !== b)!;
  const [e0, e1, e2] = made.entryIds as [string, string, string];

  // An honest pooled signing: the open names the entry, and only the online round runs.
  const honest = request(groupKey, chainCode, PATH);
  const before = h.relayed.length;
  const signed = await h.coordinator.vaults.sign({ ...honest, presignatures: { ...made, entryIds: [e0] } });
  const rounds = new Set(h.relayed.slice(before).map((e) => e.round));
  t.same([...rounds], [1], 'every envelope of the session is of the online round');
  t.same([...signed.signers].sort(), [a, b].sort(), 'signed by the pair that made the entry');
  const key = derive(groupKey, chainCode, PATH).publicKey;
  t.ok(secp256k1.verify(signed.signatures[0]!, honest.digests[0]!, key.toBytes(true), { prehash: false }), 'noble verifies the pooled signature');
  const sig = secp256k1.Signature.fromBytes(signed.signatures[0]!, 'compact');
  const recovered = await viem.recoverAddress({ hash: viem.toHex(honest.digests[0]!), signature: viem.serializeSignature({ r: viem.numberToHex(sig.r, { size: 32 }), s: viem.numberToHex(sig.s, { size: 32 }), yParity: signed.recoveryIds[0]! & 1 }) });
  t.equal(recovered.toLowerCase(), publicKeyToAddress(viem.toHex(key.toBytes(false))).toLowerCase(), 'viem recovers the wallet address');

  refusedBy(t, await rogue([a, b], request(groupKey, chainCode, PATH), [e0]), { [a]: 'presignature_used', [b]: 'presignature_used' }, 'a replayed entry id');
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode, PATH), [randomBytes(16).toString('hex')]), { [a]: 'presignature_unknown', [b]: 'presignature_unknown' }, 'an unknown entry id');
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode, OTHER_PATH), [e1]), { [a]: 'presignature_wrong_path', [b]: 'presignature_wrong_path' }, 'an entry of another path');
  refusedBy(t, await rogue([a, c], request(groupKey, chainCode, PATH), [e1]), { [a]: 'presignature_wrong_signers', [c]: 'presignature_unknown' }, 'an entry of another signer set');

  // Node a restarts after it took e0: the take is on its disk.
  const name = nameOf(a);
  await procs.get(name)!.proc.kill('SIGTERM');
  procs.set(name, await h.cluster.startNode(name, h.env(name)));
  refusedBy(t, await rogue([a, b], request(groupKey, chainCode, PATH), [e0]), { [a]: 'presignature_used', [b]: 'presignature_used' }, 'an entry taken before the node restarted');

  // The entries the refusals above named are intact: e1 still signs for its own path and pair.
  const later = request(groupKey, chainCode, PATH);
  const again = await h.coordinator.vaults.sign({ ...later, presignatures: { ...made, entryIds: [e1] } });
  t.ok(secp256k1.verify(again.signatures[0]!, later.digests[0]!, key.toBytes(true), { prehash: false }), 'e1, refused for the wrong path and signers, still signs for its own');

  // The coordinator's fallback: an entry a node refuses (used) gives way to the full protocol.
  const fallback = request(groupKey, chainCode, PATH);
  const opened = h.relayed.length;
  const full = await h.coordinator.vaults.sign({ ...fallback, presignatures: { ...made, entryIds: [e0] } });
  t.ok(secp256k1.verify(full.signatures[0]!, fallback.digests[0]!, key.toBytes(true), { prehash: false }), 'a refused entry falls back to the full protocol, which signs');
  t.ok(h.relayed.slice(opened).some((e) => e.round > 100), 'whose online round follows presigning');
  t.ok(e2, 'one entry left unused expires at the nodes');
});

t.test('the coordinator pool refills when idle, and a request uses an entry when one is ready', async (t) => {
  const h = await setup(t, 2);
  for (const name of ['node-1', 'node-2', 'node-3']) await h.cluster.startNode(name, h.env(name));
  const created = await h.coordinator.vaults.createVault({ vaultId: VAULT, owner: ORG, tier: 'hosted' });
  const key = derive(created.publicKey, created.chainCode, PATH).publicKey;
  const pool = h.coordinator.vaults.pool;
  t.equal(pool.size(VAULT, created.epoch, PATH), 0, 'the pool starts empty');
  const first = request(created.publicKey, created.chainCode, PATH);
  let mark = h.relayed.length;
  const one = await h.coordinator.vaults.sign(first);
  t.ok(secp256k1.verify(one.signatures[0]!, first.digests[0]!, key.toBytes(true), { prehash: false }), 'the first request signs with the full protocol');
  t.ok(h.relayed.slice(mark).some((e) => e.round > 100), 'presigning and the online round in one session');
  await waitFor(() => pool.size(VAULT, created.epoch, PATH) === 2, 'the refill to the target');
  t.pass('once the vault is idle, the pool holds the target of two entries');
  const second = request(created.publicKey, created.chainCode, PATH);
  mark = h.relayed.length;
  const two = await h.coordinator.vaults.sign(second);
  t.ok(secp256k1.verify(two.signatures[0]!, second.digests[0]!, key.toBytes(true), { prehash: false }), 'the second request signs');
  t.same([...new Set(h.relayed.slice(mark).map((e) => e.round))], [1], 'with the online round only');
});

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}
