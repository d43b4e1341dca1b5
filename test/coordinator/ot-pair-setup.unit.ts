// A vault whose OT setup one member missed (docs/protocols/ecdsa.md "Per-pair setup"): the coordinator's
// real VaultService and SessionHub drive three nodes' real session hosts (their sealed LevelDB stores,
// trust and roster registries, intent authorizer and ledger) in this process. Node 3 drops off right
// after the key generation, before the OT setup that follows it: nodes 1 and 2 set up their pair and
// sign ECDSA; while the attached members share no pair the vault says it cannot sign; when node 3
// attaches again, only its pairs are set up and it signs.
import t, { type Test } from 'tap';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { Level } from 'level';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { toHex as viemHex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { encodeIntent, signIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { evmSigningDigest, evmTransaction, type EvmTemplate } from '../../core/chains/evm/evm-transaction.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import { SessionHost, type ToCoordinator } from '../../node/runtime/session-host.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar, pointHex } from '../../node/protocols/math/curve.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { SessionHub, type ToNode } from '../../coordinator/sessions/session-hub.ts';
import { VaultService } from '../../coordinator/vaults/vault-service.ts';
import { VaultStore, type VaultRecord } from '../../coordinator/vaults/vault-store.ts';
import type { NodeRegistry } from '../../coordinator/nodes/node-registry.ts';
import { SessionFailedSchema, SessionOpenSchema, type Envelope, type SessionDone, type SessionFailed } from '../../proto/gen/mpc/v1/session_pb.ts';
import { createLogger } from '../../common/logger.ts';
import { RosterRegistry } from '../../node/runtime/authorization/roster-registry.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { decodeRoster, signRoster } from '../../core/trust/roster.ts';
import { Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';
import { dkgKeys } from '../protocols/frost/keys.ts';
import { otParams } from '../../core/session/session-contract.ts';
import { newSessionId } from '../node/session-ids.ts';

const log = createLogger('test', 'silent');
const ORG = 'org_pairs';
const apiSecret = sha256(new TextEncoder().encode('ot pair setup api key'));
const keys = dkgKeys(3, 2, 'ot-pair-setup-sessions');
const pkg = keys.get(1)!.pkg;
const VAULT = pkg.keyId;
const evmFrom = publicKeyToAddress(viemHex(secp256k1.Point.fromHex(pointHex(derive(pkg.groupKey, pkg.chainCode, []).publicKey)).toBytes(false)));

const operator = sha256(new TextEncoder().encode('ot pair setup operator'));
const customer = signer(ORG, sha256(new TextEncoder().encode('ot pair setup customer')));
const trustLog = [signBootstrap(ORG, customer.publicKey, 1_795_000_000, operator)];

/**
 * The nodes, the coordinator's view of who is attached, and the coordinator's vault service. With `dkg`
 * the nodes hold nothing yet and trust the operator's roster and the customer's trust log; without it
 * they hold the shares of `keys` and the vault is stored as key generation leaves it.
 */
async function world(t: Test, o: { dkg?: boolean } = {}) {
  const identities = [1, 2, 3].map(() => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))));
  const committee: PinnedMember[] = identities.map((id, i) => ({ index: i + 1, nodeId: id.nodeId, signingKey: bytesToHex(id.signingKey), encryptionKey: bytesToHex(id.encryptionKey) }));
  const attached = new Set<string>();
  const hosts = new Map<string, SessionHost>();
  const events = new EventEmitter();
  const registry = {
    get: (nodeId: string) => {
      const id = identities.find((x) => x.nodeId === nodeId);
      return id && attached.has(nodeId) ? { nodeId, kind: 'service', signingKey: id.signingKey, encryptionKey: id.encryptionKey } : undefined;
    },
    isAttached: (nodeId: string) => attached.has(nodeId),
    list: () => [...attached].sort().map((nodeId) => ({ nodeId })),
    on: (e: string, f: () => void) => events.on(e, f),
    off: (e: string, f: () => void) => events.off(e, f),
  } as unknown as NodeRegistry;
  const protocols = new Map<string, Protocol>();
  /** A node that drops off right after it reports its part of a key generation (before the OT setup after it). */
  let leavesAfterDkg: string | undefined;
  const hub = new SessionHub({
    isAttached: (id) => attached.has(id),
    send(nodeId, msg: ToNode) {
      const host = hosts.get(nodeId);
      const b = msg.body;
      if (!host || !b || !attached.has(nodeId)) return false;
      if (b.case === 'open') protocols.set(bytesToHex(b.value.sessionId as Uint8Array), b.value.protocol as Protocol);
      queueMicrotask(() => {
        if (b.case === 'open') host.onOpen(create(SessionOpenSchema, b.value));
        else if (b.case === 'relay') host.onRelay(b.value.envelope as Envelope);
        else if (b.case === 'cancel') host.onCancel(b.value.sessionId as Uint8Array, b.value.reason ?? '');
      });
      return true;
    },
  }, log);
  const vaults: VaultShareStore[] = [];
  for (const [i, id] of identities.entries()) {
    const me = i + 1;
    const dir = mkdtempSync(join(tmpdir(), `ot-pairs-${me}-`));
    const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
    t.teardown(async () => {
      await store.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });
    const vault = new VaultShareStore(store);
    const k = keys.get(me)!;
    if (!o.dkg) await vault.putNew(VAULT, { key: { share: new SecretShare(me, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: ORG, committee, tier: 'hosted' });
    vaults.push(vault);
    const operatorKeys = o.dkg ? [bytesToHex(ed25519.getPublicKey(operator))] : [];
    const trust = new TrustRegistry(store, { operatorKeys, ...(o.dkg ? {} : { fileKeys: { [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } } }) });
    const factory = nodeProtocols({ vault, authorizer: new IntentAuthorizer(trust), trust, ledger: new IntentLedger(store), rosters: new RosterRegistry(store, operatorKeys), identity: id } as Parameters<typeof nodeProtocols>[0]);
    const toHub = (m: ToCoordinator) => {
      const b = m.body;
      if (!b || !attached.has(id.nodeId)) return;
      queueMicrotask(() => {
        if (b.case === 'send') hub.fromNode(id.nodeId, { case: 'send', value: { envelope: b.value.envelope as Envelope } });
        else if (b.case === 'done' && leavesAfterDkg === id.nodeId && protocols.get(bytesToHex(b.value.sessionId as Uint8Array)) === Protocol.DKG) {
          hub.fromNode(id.nodeId, { case: 'done', value: b.value as SessionDone });
          // Its stream ends right after its key generation result: the OT setup that follows runs without it.
          leavesAfterDkg = undefined;
          attached.delete(id.nodeId);
          events.emit('change');
        } else if (b.case === 'done') hub.fromNode(id.nodeId, { case: 'done', value: b.value as SessionDone });
        else if (b.case === 'failed') hub.fromNode(id.nodeId, { case: 'failed', value: create(SessionFailedSchema, b.value) as SessionFailed });
      });
    };
    hosts.set(id.nodeId, new SessionHost(id, toHub, factory, log));
  }
  const dbDir = mkdtempSync(join(tmpdir(), 'ot-pairs-coord-'));
  const db = new Level<string, string>(dbDir, { valueEncoding: 'utf8' });
  await db.open();
  const store = new VaultStore(db);
  const rosterBytes = signRoster({ version: 1, created: 1_795_000_001, nodes: committee.map((m) => ({ nodeId: m.nodeId, signingKey: m.signingKey, encryptionKey: m.encryptionKey })) }, operator);
  const roster = { bytes: rosterBytes, roster: decodeRoster(rosterBytes) };
  const service = new VaultService(store, registry, hub, log, { dkgMs: 60_000, signMs: 60_000, reshareMs: 60_000, attachWaitMs: 0 }, roster);
  t.teardown(async () => {
    service.stop();
    await db.close();
    rmSync(dbDir, { recursive: true, force: true });
  });
  // The vault as key generation leaves it: active, its epoch's OT pairs not set up yet.
  const record: VaultRecord = {
    v: 2, vaultId: VAULT, owner: ORG, tier: 'hosted', threshold: 2, committee: committee.map((m) => ({ nodeId: m.nodeId, index: m.index })),
    epoch: pkg.epoch, rotation: 0, publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg, state: 'active', createdAtMs: 0, updatedAtMs: 0,
  };
  if (!o.dkg) await store.put(record);
  const node = (i: number) => identities[i - 1]!.nodeId;
  /** Opens an OT setup the coordinator's way on `parties` (committee index and node), as a malicious coordinator could. */
  const openSetup = (parties: [number, number][]) => hub.run({
    sessionId: newSessionId(), requestId: '', protocol: Protocol.OT_SETUP, keyId: VAULT, params: otParams.encode({ keyId: VAULT, epoch: pkg.epoch }), timeoutMs: 30_000,
    parties: parties.map(([index, i]) => ({ $typeName: 'mpc.v1.Party', nodeId: identities[i - 1]!.nodeId, index, signingKey: identities[i - 1]!.signingKey, encryptionKey: identities[i - 1]!.encryptionKey })),
  });
  return {
    service, store, vaults, node, openSetup,
    leaveAfterDkg(i: number) {
      leavesAfterDkg = node(i);
    },
    attach(...which: number[]) {
      for (const i of which) attached.add(node(i));
      events.emit('change');
    },
    /** Attached, but the coordinator is not told (its change handler has not run yet). */
    attachQuietly(...which: number[]) {
      for (const i of which) attached.add(node(i));
    },
    detach(...which: number[]) {
      for (const i of which) attached.delete(node(i));
      events.emit('change');
    },
  };
}

let nonce = 0;
/** A customer-signed EVM transfer of 1 ETH from `from`, as the API would pass it to the coordinator. */
function evmTransfer(vaultId: string, from: string, signer: { secret: Uint8Array; keyId: string }, tag: string, extra: { trustLog?: Uint8Array[] } = {}): Parameters<VaultService['sign']>[0] {
  const n = nonce++;
  const intent: EvmTransferIntent = {
    kind: 'evm.transfer', organization: ORG, walletId: 'w', chainId: 31337n, nonce: BigInt(n), from: hexToBytes(from.slice(2)), to: new Uint8Array(20).fill(0xb0),
    asset: { kind: 'native' }, amount: 10n ** 18n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: `${tag}-${n}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const bytes = encodeIntent(intent);
  const template: EvmTemplate = { nonce: n, gasLimit: 21_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 1n };
  return {
    vaultId, path: [], scheme: 'ecdsa', digests: [evmSigningDigest(evmTransaction(intent, template))], intent: bytes, intentSignature: signIntent(bytes, signer.secret), apiKeyId: signer.keyId,
    template: encodeBlob('evm-template', { nonce: n, gasLimit: '21000', maxFeePerGas: String(10n ** 9n), maxPriorityFeePerGas: '1' }), endUserToken: '', ...extra,
  };
}

/** A transfer from the test vault's wallet, signed with the API key the nodes know. */
const transfer = () => evmTransfer(VAULT, evmFrom, { secret: apiSecret, keyId: 'key_1' }, 'pairs');

/** A transfer from a generated vault's wallet, signed with the customer's key of its trust log. */
function customerTransfer(rec: VaultRecord): Parameters<VaultService['sign']>[0] {
  const from = publicKeyToAddress(viemHex(secp256k1.Point.fromHex(pointHex(derive(rec.publicKey, rec.chainCode, []).publicKey)).toBytes(false)));
  return evmTransfer(rec.vaultId, from, customer, 'dkg', { trustLog });
}

const verifies = (out: { signatures: Uint8Array[] }, input: { digests: Uint8Array[] }) => secp256k1.verify(out.signatures[0]!, input.digests[0]!, hexToBytes(pkg.groupKey), { prehash: false });

async function until(check: () => Promise<boolean>, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test('a member lost right after key generation: the other two sign, the vault says it cannot sign while the attached members share no pair, and the member\'s pairs are set up when it returns', async (t) => {
  const w = await world(t, { dkg: true });
  w.attach(1, 2, 3);
  w.leaveAfterDkg(3);
  const created = await w.service.createVault({
    vaultId: 'vault-dkg', owner: ORG, tier: 'hosted', nodeIds: [w.node(1), w.node(2), w.node(3)], threshold: 2, trustLog,
    creationRequest: signedEntry(customer, 'POST', '/v1/vaults', { tier: 'hosted' }),
  });
  t.equal(created.state, 'active', 'the key was generated by all three');
  t.same(created.otPairs, ['1-2'], 'the OT setup after it ran on the two members still attached');
  t.equal(await w.vaults[2]!.ot('vault-dkg'), undefined, 'node 3 holds a share but no OT material');
  const verifiesUnder = (out: { signatures: Uint8Array[] }, input: { digests: Uint8Array[] }) => secp256k1.verify(out.signatures[0]!, input.digests[0]!, hexToBytes(created.publicKey), { prehash: false });
  const first = customerTransfer(created);
  const out = await w.service.sign(first);
  t.ok(verifiesUnder(out, first), 'nodes 1 and 2 sign ECDSA');
  t.same([...out.signers].sort(), [w.node(1), w.node(2)].sort());

  // Node 3 is back but the coordinator has not reacted yet, and node 2 is away: nodes 1 and 3 share no pair.
  w.detach(2);
  w.attachQuietly(3);
  t.match(w.service.ecdsaReadiness((await w.store.get('vault-dkg'))!), { ready: false, reason: 'ot_pairs_missing', missingPairs: ['1-3'], detached: [w.node(2)] }, 'the vault says it cannot sign, and why');
  // Its attach reaches the coordinator: pair {1,3}, and nothing else, is set up.
  w.attach(3);
  await until(async () => ((await w.store.get('vault-dkg'))!.otPairs ?? []).includes('1-3'), 'pair {1,3}');
  t.same((await w.store.get('vault-dkg'))!.otPairs, ['1-2', '1-3']);
  t.equal(w.service.ecdsaReadiness((await w.store.get('vault-dkg'))!).ready, true);
  const second = customerTransfer(created);
  const out2 = await w.service.sign(second);
  t.ok(verifiesUnder(out2, second), 'a signing with node 3 works');
  t.same([...out2.signers].sort(), [w.node(1), w.node(3)].sort());
});

t.test('a member away during the OT setup: the other two sign, it gets its pairs when it returns, and signs', async (t) => {
  const w = await world(t);
  w.attach(1, 2);
  // Node 3 is away: the first ECDSA signing sets up what it can, pair {1,2}, and signs with it.
  const first = transfer();
  const out = await w.service.sign(first);
  t.ok(verifies(out, first), 'nodes 1 and 2 sign ECDSA');
  t.same([...out.signers].sort(), [w.node(1), w.node(2)].sort());
  let rec = (await w.store.get(VAULT))!;
  t.same(rec.otPairs, ['1-2'], 'the record knows pair {1,2} has material, and only it');
  t.same(Object.keys((await w.vaults[0]!.ot(VAULT))!.peers), ['2'], 'node 1 holds material for node 2 only');
  t.equal(await w.vaults[2]!.ot(VAULT), undefined, 'node 3 holds none');

  // Node 2 goes away too: one member attached is too few, and the vault says so.
  w.detach(2);
  t.match(w.service.ecdsaReadiness(rec), { ready: false, reason: 'members_detached', detached: [w.node(2), w.node(3)] });

  w.attach(3);
  // Node 3's attach sets up its pairs in the background (here only {1,3}: node 2 is away).
  await until(async () => ((await w.store.get(VAULT))!.otPairs ?? []).includes('1-3'), 'pair {1,3}');
  rec = (await w.store.get(VAULT))!;
  t.same(rec.otPairs, ['1-2', '1-3'], 'only the missing pair among the attached members was set up');
  t.same(w.service.ecdsaReadiness(rec), { ready: true, detached: [w.node(2)], missingPairs: [] });
  const second = transfer();
  const out2 = await w.service.sign(second);
  t.ok(verifies(out2, second), 'nodes 1 and 3 sign');
  t.same([...out2.signers].sort(), [w.node(1), w.node(3)].sort());

  // Node 2 returns: pair {2,3}, and nothing else, is set up; every subset can sign.
  w.attach(2);
  await until(async () => ((await w.store.get(VAULT))!.otPairs ?? []).includes('2-3'), 'pair {2,3}');
  const ids = async (i: number) => Object.fromEntries(Object.entries((await w.vaults[i - 1]!.ot(VAULT))!.peers).map(([j, p]) => [j, p.setupId]));
  const [one, two, three] = [await ids(1), await ids(2), await ids(3)];
  t.equal(one['2'], two['1'], 'pair {1,2}: both hold the same material id');
  t.equal(one['3'], three['1'], 'pair {1,3} too');
  t.equal(two['3'], three['2'], 'pair {2,3} too');
  t.equal(new Set([one['2'], one['3'], two['3']]).size, 3, 'three runs, one per time a pair was missing');
  w.detach(1);
  const third = transfer();
  const out3 = await w.service.sign(third);
  t.ok(verifies(out3, third), 'nodes 2 and 3 sign');
  t.same(await w.service.unsignable(), { count: 0, reasons: {}, vaults: [] });
});

t.test('a vault whose attached members share no pair says it cannot sign, and why; a signing sets the pair up on demand', async (t) => {
  const w = await world(t);
  w.attach(1, 2);
  await w.service.sign(transfer());
  w.detach(2);
  // Node 3 attaches without the coordinator reacting (its attach handler has not run yet): nodes 1 and 3 share no pair.
  w.attachQuietly(3);
  const rec = (await w.store.get(VAULT))!;
  t.match(w.service.ecdsaReadiness(rec), { ready: false, reason: 'ot_pairs_missing', missingPairs: ['1-3'], detached: [w.node(2)] });
  t.match(await w.service.unsignable(), { count: 1, reasons: { ot_pairs_missing: 1 }, vaults: [{ vaultId: VAULT, readiness: { reason: 'ot_pairs_missing', missingPairs: ['1-3'] } }] }, 'the readiness probe counts it, with the reason');
  const input = transfer();
  const out = await w.service.sign(input);
  t.ok(verifies(out, input), 'the signing set up pair {1,3} first, then signed with nodes 1 and 3');
  t.same((await w.store.get(VAULT))!.otPairs, ['1-2', '1-3']);
});

t.test('a signing that cannot find a subset with pairs, even after a setup, says why', async (t) => {
  const w = await world(t);
  w.attach(1);
  await t.rejects(w.service.sign(transfer()), { code: 'not_enough_nodes' }, 'one member attached');
  // Node 2's stored share is gone: its OT setup sessions fail, so no pair can be set up.
  await w.vaults[1]!.retire(VAULT, pkg.epoch + 1, 0);
  w.attach(2);
  await t.rejects(w.service.sign(transfer()), { code: 'unavailable', message: /cannot sign ECDSA: no attached signer subset has OT material on every pair \(missing: 1-2\)/ });
  t.match(w.service.ecdsaReadiness((await w.store.get(VAULT))!), { ready: false, reason: 'ot_pairs_missing' });
});

t.test('a setup the coordinator opens on a non-member, or on one party, is refused and changes nothing; one on two members adds that pair only', async (t) => {
  const w = await world(t);
  // Attached without the coordinator's own setups reacting: only the sessions below run.
  w.attachQuietly(1, 2, 3);
  // Node 3 seated as committee member 2: nodes 1 and 3 check the pinned committee and refuse.
  const swapped = await w.openSetup([[1, 1], [2, 3]]);
  t.match(swapped, { ok: false, code: 'party_failed' });
  t.ok(!swapped.ok && swapped.reports.every((r) => r.code === 'committee_mismatch'), 'every party refuses: committee_mismatch');
  const alone = await w.openSetup([[1, 1]]);
  t.ok(!alone.ok && alone.reports.some((r) => r.code === 'bad_parties'), 'one party is no pair: bad_parties');
  for (const v of w.vaults) t.equal(await v.ot(VAULT), undefined, 'no node stored anything');
  const pair = await w.openSetup([[2, 2], [3, 3]]);
  t.ok(pair.ok, 'members 2 and 3, at their own places, set up their pair');
  t.same(Object.keys((await w.vaults[1]!.ot(VAULT))!.peers), ['3']);
  t.same(Object.keys((await w.vaults[2]!.ot(VAULT))!.peers), ['2']);
  t.equal(await w.vaults[0]!.ot(VAULT), undefined, 'node 1 was not in it');
});
