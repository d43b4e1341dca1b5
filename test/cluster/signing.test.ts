// Real DKG, Schnorr (Taproot) signing and reshare across node processes over gRPC, with the coordinator
// in this process so the test can watch and tamper with everything it relays.
import { PATH, taprootSpend as sharedSpend } from './taproot-spend.ts';
import t, { type Test } from 'tap';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Cluster, freePort } from './cluster-harness.ts';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';
import { Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { connectCoordinator, type CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { encodeIntent, signIntent } from '../../core/intents/intent.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { pointHex } from '../../node/protocols/math/curve.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { loadStorageKey } from '../../node/storage/storage-key.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { scalarHex } from '../../node/protocols/math/curve.ts';
import { Protocol, type Envelope } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { ToNode } from '../../coordinator/sessions/session-hub.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

// Real processes on a 2-core machine shared with the rest of the suite: more than tap's default file budget.
t.setTimeout(300_000);

bitcoin.initEccLib(ecc);
const ORG = 'org_acme';
const apiSecret = new Uint8Array(randomBytes(32));

interface Harness {
  cluster: Cluster;
  coordinator: RunningCoordinator;
  /** The API's client: every failure arrives as a CustodyError decoded from the status details. */
  client: CoordinatorClient;
  keysFile: string;
  relayed: Envelope[];
  /** Every SessionOpen the coordinator sent, with its recipient. */
  opened: { nodeId: string; protocol: Protocol; sessionId: Uint8Array; requestId: string }[];
  tamper?: (env: Envelope) => Envelope[] | undefined;
}

async function setup(t: Test, attachWaitMs: number): Promise<Harness> {
  const cluster = new Cluster();
  const dir = mkdtempSync(join(tmpdir(), 'coord-'));
  const port = await freePort();
  // The operator's roster lists every service node the tests start.
  const rosterFile = await cluster.roster(['node-1', 'node-2', 'node-3', 'node-4']);
  const coordinator = await startCoordinator(loadCoordinatorConfig({ COORDINATOR_LISTEN: `127.0.0.1:${port}`, COORDINATOR_DATA_DIR: dir, COORDINATOR_ROSTER_FILE: rosterFile, COORDINATOR_HEARTBEAT_MS: '1000', COORDINATOR_SIGN_TIMEOUT_MS: '4000', COORDINATOR_ATTACH_WAIT_MS: String(attachWaitMs) }), createLogger('coordinator', process.env.DEBUG_COORD ? 'warn' : 'silent'));
  cluster.useCoordinatorPort(port);
  const keysFile = join(cluster.dir, 'api-keys.json');
  writeFileSync(keysFile, JSON.stringify({ [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } }));
  const client = connectCoordinator({ address: `127.0.0.1:${port}` });
  const h: Harness = { cluster, coordinator, client, keysFile, relayed: [], opened: [] };
  const send = coordinator.registry.send.bind(coordinator.registry);
  coordinator.registry.send = <M>(nodeId: string, msg: M) => {
    const body = (msg as ToNode).body;
    if (body?.case === 'open') h.opened.push({ nodeId, protocol: body.value.protocol!, sessionId: body.value.sessionId as Uint8Array, requestId: body.value.requestId ?? '' });
    return send(nodeId, msg);
  };
  coordinator.hub.tap = (_sid, env) => {
    h.relayed.push(env);
    return h.tamper?.(env);
  };
  t.teardown(async () => {
    client.close();
    await cluster.stop();
    await coordinator.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return h;
}

/** A P2TR spend of the wallet of vault-1's key: intent, template and sighash. */
function taprootSpend(groupKey: string, chainCode: string, amount = 60_000n, prev?: Uint8Array) {
  return sharedSpend(ORG, apiSecret, groupKey, chainCode, amount, prev);
}

async function signSpend(h: Harness, vaultId: string, spend: ReturnType<typeof taprootSpend>, digest = spend.digest, requestId = '') {
  return h.client.sign({
    vaultId, path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: [digest], requestId,
    authorization: { intent: spend.intent, intentSignature: spend.signature, apiKeyId: 'key_1', template: spend.template },
  }, { deadline: Date.now() + 30_000 });
}

t.test('DKG 2-of-3 over gRPC, Taproot signatures, failures, reshare to a self node, restart', async (t) => {
  const h = await setup(t, 30_000);
  const env = { NODE_API_KEYS_FILE: h.keysFile };
  const nodes = await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => h.cluster.startNode(n, env)));

  const created = await h.client.createVault({ vaultId: 'vault-1', owner: ORG, tier: Tier.HOSTED, requestId: 'vlt_1:job_1' }, { deadline: Date.now() + 60_000 });
  const key = created.vault!;
  // The request id names every session of the key generation, the OT setup after the DKG included.
  t.same([...new Set(h.opened.map((o) => o.protocol))], [Protocol.DKG, Protocol.OT_SETUP]);
  t.ok(h.opened.every((o) => o.requestId === 'vlt_1:job_1'), 'every SessionOpen of the key generation names its request');
  t.equal(key.state, 'active');
  t.equal(key.threshold, 2);
  t.equal(key.committee.length, 3);
  const groupKey = bytesToHex(key.publicKey);
  const chainCode = bytesToHex(key.chainCode);

  // A Taproot signature from the cluster verifies under the wallet's output key.
  const spend = taprootSpend(groupKey, chainCode);
  const signed = await signSpend(h, 'vault-1', spend);
  t.ok(schnorr.verify(signed.signatures[0]!, spend.digest, spend.q), 'taproot signature verifies (noble)');
  t.equal(signed.signers.length, 2);

  // A malformed request id is refused before any session opens; a good one reaches every signer in its
  // SessionOpen, under a session id of its own, and is on the nodes' log lines about the session.
  const opened = h.opened.length;
  await t.rejects(signSpend(h, 'vault-1', spend, spend.digest, 'txn/1'), { constructor: CustodyError, code: 'invalid_request', kind: 'invalid', message: /request_id/ });
  t.equal(h.opened.length, opened, 'no session opened for a malformed request id');
  await t.rejects(signSpend(h, 'vault-1', spend, new Uint8Array(randomBytes(32)), 'txn_0193cluster:1'), { constructor: CustodyError, code: 'digest_mismatch' });
  const tagged = h.opened.slice(opened);
  // The refusal ends the request once a second node, in another subset, gives it too: two sessions.
  const sessionIds = [...new Set(tagged.map((o) => bytesToHex(o.sessionId)))];
  t.equal(sessionIds.length, 2, 'two sessions, the second without the node that refused first');
  t.equal(tagged.length, 4, 'each opened on its two signers');
  t.ok(tagged.every((o) => o.requestId === 'txn_0193cluster:1' && o.sessionId.length === 32), 'the SessionOpen each signer gets names the request');
  const first = tagged.filter((o) => bytesToHex(o.sessionId) === sessionIds[0]);
  const signerProcs = nodes.filter((n) => first.some((o) => o.nodeId === n.nodeId)).map((n) => n.proc);
  // Each signer of the first session refuses, or is cancelled once the other's refusal ended it.
  const ended = (l: { msg: string; session?: unknown }) => (l.msg.startsWith('session refused') || l.msg === 'session cancelled by the coordinator') && l.session === sessionIds[0];
  const lines = await Promise.all(signerProcs.map((p) => p.waitFor((l) => ended(l) && l['requestId'] === 'txn_0193cluster:1', 10_000, 'a line naming the request')));
  t.equal(lines.length, 2, 'each signer logs the session\'s end with the session and request ids');
  t.ok(lines.some((l) => l.msg.startsWith('session refused')), 'a signer logged its refusal');

  // The nodes refuse a digest that is not the intent's, and an intent signature that does not verify.
  const otherDigest = new Uint8Array(randomBytes(32));
  // Each refusal arrives structured: the refusing node's own code, kind refused, no culprits.
  await t.rejects(signSpend(h, 'vault-1', spend, otherDigest), { constructor: CustodyError, code: 'digest_mismatch', kind: 'refused', culprits: [] });
  const forged = { ...spend, signature: ed25519.sign(spend.intent, new Uint8Array(randomBytes(32))) };
  await t.rejects(signSpend(h, 'vault-1', forged), { constructor: CustodyError, code: 'bad_intent_signature', kind: 'refused', culprits: [] });
  const overpay = taprootSpend(groupKey, chainCode, 50_000n, spend.prev);
  await t.rejects(signSpend(h, 'vault-1', { ...overpay, template: spend.template, digest: spend.digest }), { constructor: CustodyError, code: 'wrong_outputs', kind: 'refused' }, 'intent and template must agree');

  // A relay that flips a byte causes an abort, never a bad signature.
  h.tamper = (e) => (e.round === 2 ? [{ ...e, body: e.body.map((b, i) => (i === 3 ? b ^ 0x80 : b)) }] : undefined);
  await t.rejects(signSpend(h, 'vault-1', taprootSpend(groupKey, chainCode)), { constructor: CustodyError, code: 'failed', kind: 'aborted', message: /relayed|envelope|signature/ });
  // A replayed message aborts too; a dropped one fails the session at its deadline, naming who is silent.
  h.tamper = (e) => (e.round === 1 ? [e, e] : undefined);
  await t.rejects(signSpend(h, 'vault-1', taprootSpend(groupKey, chainCode)), { constructor: CustodyError, code: 'failed', kind: 'aborted' });
  h.tamper = (e) => (e.round === 2 ? [] : undefined);
  const silent = await signSpend(h, 'vault-1', taprootSpend(groupKey, chainCode)).then(() => undefined, (e: unknown) => e);
  t.match(silent, { constructor: CustodyError, code: 'failed', kind: 'aborted', message: /no result from/ });
  t.ok((silent as CustodyError).culprits.length > 0 && (silent as CustodyError).culprits.every((c) => (silent as CustodyError).message.includes(String(c))), 'the silent parties are the culprits');
  h.tamper = undefined;

  // Kill a signer in the middle of a session: the session names it and the retry with the others signs.
  let killed = '';
  h.tamper = (e) => {
    if (!killed && e.round === 1) {
      const victim = nodes.find((n) => n.nodeId === e.from)!;
      killed = victim.nodeId;
      victim.proc.child.kill('SIGKILL');
      return [];
    }
    return undefined;
  };
  const retry = taprootSpend(groupKey, chainCode);
  const afterKill = await signSpend(h, 'vault-1', retry);
  h.tamper = undefined;
  t.ok(schnorr.verify(afterKill.signatures[0]!, retry.digest, retry.q), 'retry with the remaining nodes signs');
  t.notOk(afterKill.signers.includes(killed), 'the killed node is not among the signers');
  const restarted = await h.cluster.startNode(`node-${nodes.findIndex((n) => n.nodeId === killed) + 1}`, env);
  t.equal(restarted.nodeId, killed);

  // A frozen node (stopped, its stream still open, so still attached): every signing still succeeds.
  // A session with it ends at its deadline naming the node that is behind (not the signer waiting for
  // it), and the retry without it signs: at most two sessions a signing (docs/sessions.md "Signing subsets").
  const frozen = nodes.find((n) => n.nodeId !== killed)!;
  const before = h.opened.length;
  frozen.proc.child.kill('SIGSTOP');
  try {
    for (let i = 0; i < 3; i++) {
      const s = taprootSpend(groupKey, chainCode);
      const out = await signSpend(h, 'vault-1', s);
      t.ok(schnorr.verify(out.signatures[0]!, s.digest, s.q) && !out.signers.includes(frozen.nodeId), `signing ${i + 1} with a node frozen: signed by the two others`);
    }
  } finally {
    frozen.proc.child.kill('SIGCONT');
  }
  const sessions = new Set(h.opened.slice(before).filter((o) => o.protocol === Protocol.SIGN_SCHNORR).map((o) => bytesToHex(o.sessionId)));
  t.ok(sessions.size <= 6, `${sessions.size} sessions for 3 signings`);

  // Reshare to {one service node, the customer's self node}, which the customer names in its signed request.
  const selfId = await h.cluster.identity('self-1');
  const self = await h.cluster.startNode('self-1', { ...env, NODE_KIND: 'self', NODE_OWNER: ORG });
  // The organization enrolled the node first (its signed POST /v1/nodes in the trust log).
  const enrolment = signedEntry(signer(ORG, apiSecret, 'key_1'), 'POST', '/v1/nodes', { kind: 'self', ...selfId });
  // A move between tiers binds the vault's rotation, the target tier and the committee (docs/trust.md).
  const reshareRequest = signedEntry(signer(ORG, apiSecret, 'key_1'), 'POST', '/v1/vaults/vault-1/reshare', { target_tier: 'self', rotation: 0, committee: [nodes[0]!.nodeId, selfId.node_id], customer_node: selfId });
  const moved = await h.client.reshare({ vaultId: 'vault-1', targetTier: Tier.SELF, reshareRequest, trustLog: [enrolment] }, { deadline: Date.now() + 60_000 });
  t.equal(bytesToHex(moved.vault!.publicKey), groupKey, 'same public key after reshare');
  t.equal(moved.vault!.rotation, 1, 'rotation counter +1');
  t.equal(moved.vault!.tier, Tier.SELF);
  t.ok(moved.vault!.committee.some((m) => m.nodeId === self.nodeId), 'the self node holds a share');
  const afterReshare = taprootSpend(groupKey, chainCode);
  const newSig = await signSpend(h, 'vault-1', afterReshare);
  t.ok(schnorr.verify(newSig.signatures[0]!, afterReshare.digest, afterReshare.q), 'the new committee signs for the same address');
  t.ok(newSig.signers.includes(self.nodeId), 'with the self node');

  // Restart every process: the key still signs. The signing is sent while the nodes are still booting;
  // the coordinator waits for the committee to attach instead of failing.
  await Promise.all(h.cluster.procs.filter((p) => p.running).map((p) => p.kill('SIGTERM')));
  const booting = [...['node-1', 'node-2', 'node-3'].map((n) => h.cluster.startNode(n, env)), h.cluster.startNode('self-1', { ...env, NODE_KIND: 'self', NODE_OWNER: ORG })];
  const later = taprootSpend(groupKey, chainCode);
  const again = await signSpend(h, 'vault-1', later);
  await Promise.all(booting);
  t.ok(schnorr.verify(again.signatures[0]!, later.digest, later.q), 'after a restart of every node the key signs');

  // The old committee's other members dropped their shares; nothing the coordinator relayed holds a share.
  await Promise.all(h.cluster.procs.filter((p) => p.running).map((p) => p.kill('SIGTERM')));
  const shares: string[] = [];
  for (const name of ['node-1', 'node-2', 'node-3', 'self-1']) {
    const dir = join(h.cluster.dir, name);
    const store = await SealedStore.open(join(dir, 'db'), loadStorageKey(join(dir, 'storage.key'), false));
    const vault = new VaultShareStore(store);
    const cur = await vault.current('vault-1');
    if (cur) shares.push(scalarHex(cur.key.share.scalar()));
    await store.close();
  }
  t.equal(shares.length, 2, 'exactly the new committee holds shares');
  const relayedHex = h.relayed.map((e) => bytesToHex(e.body)).join('');
  for (const s of shares) t.notOk(relayedHex.includes(s) || relayedHex.includes(s.slice(0, 24)), 'no share in relayed bytes');
  t.ok(h.relayed.length > 20, `watched ${h.relayed.length} relayed envelopes`);
});

t.test('a node killed in the middle of a reshare: the old epoch still signs, the key needs attention, a later reshare completes', async (t) => {
  const h = await setup(t, 1_500);
  const env = { NODE_API_KEYS_FILE: h.keysFile };
  const nodes = await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => h.cluster.startNode(n, env)));
  const created = await h.client.createVault({ vaultId: 'vault-2', owner: ORG, tier: Tier.HOSTED }, { deadline: Date.now() + 60_000 });
  const groupKey = bytesToHex(created.vault!.publicKey);
  const chainCode = bytesToHex(created.vault!.chainCode);
  const fourth = await h.cluster.startNode('node-4', env);

  // Reshare to {node-1, node-2, node-4}; node-4 dies as the dealers' first messages go out.
  h.tamper = (e) => {
    if (e.round === 1 && fourth.proc.running) {
      fourth.proc.child.kill('SIGKILL');
      return [];
    }
    return undefined;
  };
  const target = [nodes[0]!.nodeId, nodes[1]!.nodeId, fourth.nodeId];
  const failed = await h.client.reshare({ vaultId: 'vault-2', nodeIds: target, threshold: 2 }, { deadline: Date.now() + 60_000 }).then(() => undefined, (e: unknown) => e);
  t.match(failed, { constructor: CustodyError, code: 'failed', kind: 'aborted' });
  t.ok((failed as CustodyError).culprits.includes(fourth.nodeId), 'the killed node is a culprit');
  h.tamper = undefined;
  const after = (await h.client.getVault({ vaultId: 'vault-2' })).vault!;
  t.equal(after.state, 'reshare_pending');
  t.match(after.problem, /reshare to epoch 1 failed/);
  t.equal(after.epoch, 0, 'still epoch 0');
  t.equal(after.rotation, 0);

  const spend = taprootSpend(groupKey, chainCode);
  const sig = await signSpend(h, 'vault-2', spend);
  t.ok(schnorr.verify(sig.signatures[0]!, spend.digest, spend.q), 'the old epoch still signs');

  const fourthAgain = await h.cluster.startNode('node-4', env);
  const done = (await h.client.reshare({ vaultId: 'vault-2', nodeIds: target, threshold: 2 }, { deadline: Date.now() + 60_000 })).vault!;
  t.equal(done.state, 'active');
  t.equal(done.epoch, 1);
  t.equal(done.rotation, 1);
  t.equal(bytesToHex(done.publicKey), groupKey);
  const later = taprootSpend(groupKey, chainCode);
  const sig2 = await signSpend(h, 'vault-2', later);
  t.ok(schnorr.verify(sig2.signatures[0]!, later.digest, later.q), 'the new epoch signs');

  // With two of the three members gone and not coming back, signing answers UNAVAILABLE naming them
  // once the attach wait is over; nothing is started.
  const gone = [nodes[1]!, fourthAgain];
  await Promise.all(gone.map((n) => n.proc.kill('SIGTERM')));
  const sessionsBefore = h.relayed.length;
  const unavailable = await signSpend(h, 'vault-2', taprootSpend(groupKey, chainCode)).then(() => undefined, (e: unknown) => e);
  t.match(unavailable, { constructor: CustodyError, code: 'not_enough_nodes', kind: 'unavailable', message: new RegExp(`not attached: .*(${gone.map((n) => n.nodeId).join('|')})`) });
  t.same([...(unavailable as CustodyError).culprits].sort(), gone.map((n) => n.nodeId).sort(), 'the missing members are named');
  t.equal(h.relayed.length, sessionsBefore, 'no session was opened');
});

t.test('a P2TR spend signed by the cluster is accepted by the regtest double\'s script interpreter', async (t) => {
  const { EsploraDouble } = await import('../chains/esplora-double.ts');
  const { EsploraClient } = await import('../../api/chains/bitcoin/esplora-client.ts');
  const { buildSpend, finalizeTaproot } = await import('../../api/chains/bitcoin/build-spend.ts');
  const h = await setup(t, 1_500);
  const env = { NODE_API_KEYS_FILE: h.keysFile };
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => h.cluster.startNode(n, env)));
  const key = (await h.client.createVault({ vaultId: 'vault-btc', owner: ORG, tier: Tier.HOSTED }, { deadline: Date.now() + 60_000 })).vault!;
  const q = outputKey(pointHex(derive(bytesToHex(key.publicKey), bytesToHex(key.chainCode), PATH).publicKey));
  const from = bitcoin.payments.p2tr({ pubkey: q, network: bitcoin.networks.regtest }).address!;
  const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(5), network: bitcoin.networks.regtest }).address!;
  const double = new EsploraDouble();
  const esplora = new EsploraClient(await double.start());
  t.teardown(() => double.stop());
  double.fund(from, 30_000n);
  double.fund(from, 30_000n);
  const utxos = await esplora.utxos(from);
  const intentFields = {
    kind: 'btc.transfer' as const, organization: ORG, walletId: 'w', network: 'regtest' as const, from, outputs: [{ address: dest, amount: 45_000n }], maxFeeRate: 15n, maxFee: 5_000n,
    inputs: utxos.map((u) => ({ txid: hexToBytes(u.txid), vout: u.vout })), idempotencyKey: 'spend-1', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const spend = buildSpend(intentFields, utxos, 6n);
  t.equal(spend.digests.length, 2, 'two inputs, two digests, one session');
  const intent = encodeIntent(intentFields);
  const signed = await h.client.sign({
    vaultId: 'vault-btc', path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: spend.digests,
    authorization: { intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'key_1', template: spend.template },
  }, { deadline: Date.now() + 30_000 });
  const txid = await esplora.broadcast(finalizeTaproot(spend, signed.signatures));
  t.match(txid, /^[0-9a-f]{64}$/, 'accepted after script verification');
  t.equal((await esplora.utxos(dest))[0]!.value, 45_000n);
});

t.test('threshold ECDSA over gRPC: DKG with OT setup, an EVM transfer signed by the cluster lands on anvil', async (t) => {
  const { startAnvil } = await import('../chains/anvil.ts');
  const { evmTransaction, evmSigningDigest, evmSignedTransaction } = await import('../../core/chains/evm/evm-transaction.ts');
  const { secp256k1 } = await import('@noble/curves/secp256k1.js');
  const viem = await import('viem');
  const { publicKeyToAddress } = await import('viem/utils');
  const h = await setup(t, 1_500);
  const env = { NODE_API_KEYS_FILE: h.keysFile };
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => h.cluster.startNode(n, env)));
  const key = (await h.client.createVault({ vaultId: 'vault-evm', owner: ORG, tier: Tier.HOSTED }, { deadline: Date.now() + 120_000 })).vault!;
  const path = [44, 60, 0, 0, 0];
  const derived = derive(bytesToHex(key.publicKey), bytesToHex(key.chainCode), path).publicKey;
  const from = publicKeyToAddress(viem.toHex(derived.toBytes(false)));
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await anvil.testClient.setBalance({ address: from, value: viem.parseEther('5') });
  const to = '0x000000000000000000000000000000000000b0b0';
  const intentFields = {
    kind: 'evm.transfer' as const, organization: ORG, walletId: 'w-evm', chainId: 31337n, nonce: 0n, from: viem.hexToBytes(from), to: viem.hexToBytes(to),
    asset: { kind: 'native' as const }, amount: viem.parseEther('1.5'), data: new Uint8Array(), maxFee: viem.parseEther('0.01'), idempotencyKey: 'evm-1', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const fees = await anvil.publicClient.estimateFeesPerGas();
  const template = { nonce: 0, gasLimit: 21_000n, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  const tx = evmTransaction(intentFields, template);
  const digest = evmSigningDigest(tx);
  const intent = encodeIntent(intentFields);
  const signed = await h.client.sign({
    vaultId: 'vault-evm', path, scheme: Scheme.ECDSA, digests: [digest],
    authorization: {
      intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'key_1',
      template: encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: String(fees.maxFeePerGas), maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas) }),
    },
  }, { deadline: Date.now() + 60_000 });
  const compact = signed.signatures[0]!;
  t.ok(secp256k1.verify(compact, digest, derived.toBytes(true), { prehash: false }), 'noble verifies the threshold ECDSA signature');
  const sig = secp256k1.Signature.fromBytes(compact, 'compact');
  t.ok(!sig.hasHighS(), 'low-s');
  const raw = evmSignedTransaction(tx, { r: sig.r, s: sig.s, recovery: signed.recoveryIds[0]! });
  t.equal((await viem.recoverTransactionAddress({ serializedTransaction: raw as `0x02${string}` })).toLowerCase(), from.toLowerCase(), 'viem recovers the wallet address');
  const hash = await anvil.publicClient.sendRawTransaction({ serializedTransaction: raw });
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash });
  t.equal(receipt.status, 'success');
  t.equal(await anvil.publicClient.getBalance({ address: to }), viem.parseEther('1.5'), 'recipient credited exactly');

  // The underived key signs too (path m): noble verifies under the vault's own public key.
  const plainFrom = publicKeyToAddress(viem.toHex(secp256k1.Point.fromBytes(key.publicKey).toBytes(false)));
  const plainFields = { ...intentFields, from: viem.hexToBytes(plainFrom), idempotencyKey: 'evm-plain' };
  const plainTx = evmTransaction(plainFields, { ...template, nonce: 0 });
  const plainDigest = evmSigningDigest(plainTx);
  const plainIntent = encodeIntent(plainFields);
  const plain = await h.client.sign({
    vaultId: 'vault-evm', path: [], scheme: Scheme.ECDSA, digests: [plainDigest],
    authorization: {
      intent: plainIntent, intentSignature: signIntent(plainIntent, apiSecret), apiKeyId: 'key_1',
      template: encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: String(fees.maxFeePerGas), maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas) }),
    },
  }, { deadline: Date.now() + 60_000 });
  t.ok(secp256k1.verify(plain.signatures[0]!, plainDigest, key.publicKey, { prehash: false }), 'the vault key itself signs (no derivation)');

  // Six signings at once: the coordinator gives each a signer subset whose OT pairs are free (nodes
  // refuse a second run over a busy pair), so all of them sign, over every pair of the committee.
  const many = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
    const fields = { ...intentFields, nonce: BigInt(10 + i), idempotencyKey: `evm-many-${i}` };
    const tmpl = { ...template, nonce: 10 + i };
    const d = evmSigningDigest(evmTransaction(fields, tmpl));
    const bytes = encodeIntent(fields);
    const out = await h.client.sign({
      vaultId: 'vault-evm', path, scheme: Scheme.ECDSA, digests: [d],
      authorization: {
        intent: bytes, intentSignature: signIntent(bytes, apiSecret), apiKeyId: 'key_1',
        template: encodeBlob('evm-template', { nonce: tmpl.nonce, gasLimit: '21000', maxFeePerGas: String(fees.maxFeePerGas), maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas) }),
      },
    }, { deadline: Date.now() + 120_000 });
    return { ok: secp256k1.verify(out.signatures[0]!, d, derived.toBytes(true), { prehash: false }), signers: [...out.signers].sort().join('+') };
  }));
  t.ok(many.every((m) => m.ok), 'six concurrent ECDSA signings all verify');
  t.ok(new Set(many.map((m) => m.signers)).size >= 2, 'over more than one signer pair');

  // A template that pays more gas than the intent allows is refused by the nodes.
  const greedy = encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: String(viem.parseEther('0.01')), maxPriorityFeePerGas: '1' });
  await t.rejects(h.client.sign({ vaultId: 'vault-evm', path, scheme: Scheme.ECDSA, digests: [digest], authorization: { intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'key_1', template: greedy } }), { constructor: CustodyError, code: 'bad_template', kind: 'invalid' });
});
