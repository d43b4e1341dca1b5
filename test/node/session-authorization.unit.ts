// Every session kind states what authorizes it (session-kind.ts `Authorization`), and the statement
// holds: each kind the node registers is run here on the coordinator's word alone, among three real
// nodes (session hosts, sealed stores with rollback anchors, trust and roster registries, pools), and
// every record of every node is read back afterwards.
// - A kind authorized by the customer or by peers' receipts changes nothing without them.
// - A kind authorized by the node's own records only adds material under the record prefixes it
//   declares: no share, committee or claim changes and nothing outside them is removed.
// A protocol the node registers without a coordinator-only case below fails the test, so a new kind
// cannot skip it.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { SessionHost } from '../../node/runtime/session-host.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { ExportRecords } from '../../node/storage/export-records.ts';
import { PresignatureStore } from '../../node/storage/presignature-store.ts';
import { FrostNonceStore } from '../../node/storage/frost-nonce-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { RosterRegistry } from '../../node/runtime/authorization/roster-registry.ts';
import { nodeProtocols, nodeSessionKinds, type NodeProtocolDeps } from '../../node/runtime/sessions/node-protocols.ts';
import type { Authorization } from '../../node/runtime/sessions/session-kind.ts';
import { dkgParams, dkgResult, epochParams, exportParams, otParams, precommitParams, precommitResult, presignParams, reshareParams, reshareResult, signParams } from '../../core/session/session-contract.ts';
import { epochReceiptStatement } from '../../core/session/epoch-receipt.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import type { EpochReceipt, PrecommittedNonce } from '../../core/session/session-params.ts';
import { encodeIntent, signIntent, type BtcTransferIntent } from '../../core/intents/intent.ts';
import { buildSpend } from '../../api/chains/bitcoin/build-spend.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { pointHex } from '../../node/protocols/math/curve.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { signRoster } from '../../core/trust/roster.ts';
import { createLogger } from '../../common/logger.ts';
import { relayHost, runRelayed, storeRecords, type RelayOutcome } from './relay-host.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

bitcoin.initEccLib(ecc);

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_authz';
const KEY = 'vault-authz';
const operator = seed('authorization operator');
const operatorKeys = [bytesToHex(ed25519.getPublicKey(operator))];
const customer = signer(ORG, seed('authorization customer key'));
const trustLog = [signBootstrap(ORG, customer.publicKey, 1_795_000_000, operator)];
// What the coordinator can sign: keys of its own.
const coordinatorKey = seed('a key the coordinator made');

interface TestNode {
  identity: NodeIdentity;
  host: SessionHost;
  store: SealedStore;
  outcomes: Map<string, RelayOutcome>;
}

const nodes = new Map<string, TestNode>();

async function node(t: Test): Promise<TestNode> {
  const dir = mkdtempSync(join(tmpdir(), 'authz-'));
  const storageKey = new Uint8Array(randomBytes(32));
  const store = await SealedStore.open(join(dir, 'db'), storageKey, { anchor: new FileRollbackAnchor(join(dir, 'anchor'), storageKey) });
  t.teardown(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  const identity = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
  const trust = new TrustRegistry(store, { operatorKeys });
  const deps: NodeProtocolDeps = {
    vault: new VaultShareStore(store), trust, authorizer: new IntentAuthorizer(trust), ledger: new IntentLedger(store), rosters: new RosterRegistry(store, operatorKeys),
    presignatures: new PresignatureStore(store), frostNonces: new FrostNonceStore(store), identity, exportRecords: new ExportRecords(store),
  };
  const outcomes = new Map<string, RelayOutcome>();
  const host = relayHost(identity, nodes, nodeProtocols(deps), createLogger('test', 'silent'), outcomes);
  const n = { identity, host, store, outcomes };
  nodes.set(identity.nodeId, n);
  return n;
}

const partiesOf = (members: TestNode[]): Party[] =>
  members.map((m, i) => ({ $typeName: 'mpc.v1.Party', nodeId: m.identity.nodeId, index: i + 1, signingKey: m.identity.signingKey, encryptionKey: m.identity.encryptionKey }));

/** Opens a session at every member as the coordinator would and waits until each reported. */
function run(members: TestNode[], protocol: Protocol, params: Uint8Array, keyId = KEY): Promise<RelayOutcome[]> {
  return runRelayed(members, partiesOf(members), protocol, keyId, params, 30_000);
}

/** Every record of a node: its key and a hash of its stored bytes. */
const records = (n: TestNode): Promise<Map<string, string>> => storeRecords(n.store);

/** Records added, changed or removed between two snapshots. */
function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k)).sort();
}

/** A Bitcoin intent of the vault's wallet, signed by the coordinator's own key under the customer's key id. */
function forgedSigning(pkg: KeyPackage, scheme: 'taproot' | 'ecdsa', extra: Record<string, unknown> = {}): Uint8Array {
  const derived = pointHex(derive(pkg.groupKey, pkg.chainCode, []).publicKey);
  const network = bitcoin.networks.regtest;
  const from = scheme === 'taproot' ? bitcoin.payments.p2tr({ pubkey: outputKey(derived), network }).address! : bitcoin.payments.p2wpkh({ pubkey: hexToBytes(derived), network }).address!;
  const utxo = { txid: bytesToHex(new Uint8Array(32).fill(0x42)), vout: 0, value: 70_000n, status: { confirmed: true } };
  const intent: BtcTransferIntent = {
    kind: 'btc.transfer', organization: ORG, walletId: 'w', network: 'regtest', from, outputs: [{ address: bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(3), network }).address!, amount: 30_000n }],
    maxFeeRate: 20n, maxFee: 5_000n, inputs: [{ txid: hexToBytes(utxo.txid), vout: 0, amount: utxo.value }], idempotencyKey: `forged-${bytesToHex(randomBytes(4))}`,
    notAfter: BigInt(Math.floor(Date.now() / 1000) + 600),
  };
  const bytes = encodeIntent(intent);
  const spend = buildSpend(intent, [utxo], 5n);
  return signParams.encode({
    keyId: KEY, epoch: pkg.epoch, path: [], scheme, digests: spend.digests, intent: bytes, intentSignature: signIntent(bytes, coordinatorKey), apiKeyId: customer.keyId,
    template: spend.template, endUserToken: '', trustLog, ...extra,
  });
}

t.test('every session kind, run on the coordinator\'s word alone, does no more than its declared authorization allows', async (t) => {
  const members = [await node(t), await node(t), await node(t)];
  const roster = signRoster({ version: 1, created: 1_795_000_001, nodes: members.map((m) => ({ nodeId: m.identity.nodeId, signingKey: bytesToHex(m.identity.signingKey), encryptionKey: bytesToHex(m.identity.encryptionKey) })) }, operator);

  // The vault, generated on the customer's signed request, with its OT setup.
  const created = await run(members, Protocol.DKG, dkgParams.encode({
    keyId: KEY, owner: ORG, epoch: 0, threshold: 2, tier: 'hosted', trustLog, roster, creationRequest: signedEntry(customer, 'POST', '/v1/vaults', { tier: 'hosted' }),
  }));
  t.ok(created.every((o) => o.done), 'the customer\'s request creates the key');
  const pkg = dkgResult.decode(created[0]!.done!).pkg;
  t.ok((await run(members, Protocol.OT_SETUP, otParams.encode({ keyId: KEY, epoch: 0 }))).every((o) => o.done), 'the OT setup runs');
  const signers = members.slice(0, 2);

  // What a coordinator alone can ask of each kind. Kinds that may act on the node's own records go
  // first, so the customer's kinds are then tried with pool entries and nonces that exist.
  let entryIds: string[] = [];
  let precommitted: PrecommittedNonce[][] = [];
  let receipts: EpochReceipt[] = [];
  let refreshed: KeyPackage | undefined;
  const forger = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
  const cases: { protocol: Protocol; what: string; members: TestNode[]; params: () => Uint8Array; after?: (o: { done?: Uint8Array }[]) => void; keyId?: string; completes?: true }[] = [
    { protocol: Protocol.OT_SETUP, what: 'a new OT setup', members, completes: true, params: () => otParams.encode({ keyId: KEY, epoch: 0 }) },
    {
      protocol: Protocol.PRESIGN_ECDSA, what: 'presignatures', members: signers, completes: true,
      params: () => presignParams.encode({ keyId: KEY, epoch: 0, path: [], entryIds: (entryIds = [bytesToHex(randomBytes(16))]) }),
    },
    {
      protocol: Protocol.PRECOMMIT_FROST, what: 'precommitted nonces', members: signers, completes: true, params: () => precommitParams.encode({ keyId: KEY, epoch: 0, path: [], scheme: 'taproot', count: 1 }),
      after: (o) => {
        const rows = o.map((r, i) => (r.done ? precommitResult.decode(r.done).entries.map((e) => ({ party: i + 1, ...e })) : []));
        precommitted = rows[0]!.length && rows[1]!.length ? [[rows[0]![0]!, rows[1]![0]!]] : [];
      },
    },
    { protocol: Protocol.DKG, what: 'a key with no creation request', members, keyId: 'vault-unasked', params: () => dkgParams.encode({ keyId: 'vault-unasked', owner: ORG, epoch: 0, threshold: 2, tier: 'hosted', trustLog, roster }) },
    { protocol: Protocol.SIGN_SCHNORR, what: 'a Taproot signing of a forged intent', members: signers, params: () => forgedSigning(pkg, 'taproot') },
    { protocol: Protocol.SIGN_SCHNORR, what: 'a precommitted Taproot signing of a forged intent', members: signers, params: () => forgedSigning(pkg, 'taproot', precommitted.length ? { precommitted } : {}) },
    { protocol: Protocol.SIGN_ECDSA, what: 'an ECDSA signing of a forged intent', members: signers, params: () => forgedSigning(pkg, 'ecdsa') },
    { protocol: Protocol.SIGN_ECDSA, what: 'a pooled ECDSA signing of a forged intent', members: signers, params: () => forgedSigning(pkg, 'ecdsa', { presignatures: entryIds }) },
    { protocol: Protocol.COMMIT_EPOCH, what: 'a commit of an epoch no reshare made', members, params: () => epochParams.encode({ keyId: KEY, epoch: 1 }) },
    {
      protocol: Protocol.RESHARE, what: 'a refresh among the pinned committee', members, completes: true,
      params: () => reshareParams.encode({
        keyId: KEY, owner: ORG, oldPkg: pkg, newEpoch: 1, newThreshold: 2, tier: 'hosted', roster, trustLog,
        members: [{ party: 1, oldId: 1, newId: 1 }, { party: 2, oldId: 2, newId: 2 }, { party: 3, newId: 3 }],
      }),
      after: (o) => {
        const results = o.map((r) => (r.done ? reshareResult.decode(r.done) : undefined));
        refreshed = results[0]?.pkg;
        receipts = results.flatMap((r, i) => (r?.receipt ? [{ party: i + 1, signature: r.receipt }] : []));
      },
    },
    { protocol: Protocol.COMMIT_EPOCH, what: 'a commit of the refreshed epoch with no receipts', members, params: () => epochParams.encode({ keyId: KEY, epoch: 1 }) },
    { protocol: Protocol.COMMIT_EPOCH, what: 'a commit with one receipt of a 2-of-3 committee', members, params: () => epochParams.encode({ keyId: KEY, epoch: 1, receipts: receipts.slice(0, 1) }) },
    {
      protocol: Protocol.COMMIT_EPOCH, what: 'a commit with receipts the coordinator signed itself', members,
      params: () => epochParams.encode({ keyId: KEY, epoch: 1, receipts: [1, 2].map((party) => ({ party, signature: forger.sign(epochReceiptStatement(refreshed!)) })) }),
    },
    {
      protocol: Protocol.COMMIT_EPOCH, what: 'a commit with one member\'s receipt under two parties', members,
      params: () => epochParams.encode({ keyId: KEY, epoch: 1, receipts: [{ party: 1, signature: receipts[0]!.signature }, { party: 2, signature: receipts[0]!.signature }] }),
    },
    {
      protocol: Protocol.COMMIT_EPOCH, what: 'a commit with receipts for another epoch\'s package', members,
      params: () => epochParams.encode({ keyId: KEY, epoch: 1, receipts: [0, 1].map((i) => ({ party: i + 1, signature: members[i]!.identity.sign(epochReceiptStatement({ ...refreshed!, epoch: 2 })) })) }),
    },
    { protocol: Protocol.ABANDON_EPOCH, what: 'an abandon of the refreshed epoch', members, params: () => epochParams.encode({ keyId: KEY, epoch: 1 }) },
    { protocol: Protocol.EXPORT_SHARE, what: 'an export the customer never requested', members, params: () => exportParams.encode({ keyId: KEY, requestId: 'exp_0123456789abcdef', trustLog }) },
  ];

  const registered = nodeSessionKinds({} as NodeProtocolDeps);
  const declared = new Map(registered.map((r) => [r.protocol, r.kinds.map((k) => k.authorization)]));
  for (const r of registered) {
    t.ok(r.kinds.length > 0 && r.kinds.every((k) => typeof k.authorization?.evidence === 'string' && k.authorization.evidence.length > 0), `${Protocol[r.protocol]} states its evidence`);
    t.ok(cases.some((c) => c.protocol === r.protocol), `${Protocol[r.protocol]} has a coordinator-only case here`);
  }
  for (const p of Object.values(Protocol).filter((v): v is Protocol => typeof v === 'number' && v !== 0)) {
    t.ok(declared.has(p), `${Protocol[p]} is registered with a stated authorization`);
  }

  for (const c of cases) {
    const auth: Authorization[] = declared.get(c.protocol)!;
    const before = await Promise.all(members.map(records));
    const outcome = await run(c.members, c.protocol, c.params(), c.keyId);
    c.after?.(outcome);
    // What the later cases need (pool entries, a pending epoch) exists only if these ran through.
    if (c.completes) t.ok(outcome.every((o) => o.done), `${Protocol[c.protocol]}, ${c.what}: runs through`);
    const after = await Promise.all(members.map(records));
    const diffs = members.map((_, i) => changed(before[i]!, after[i]!));
    const kind = auth.length === 1 ? auth[0]! : auth.find((a) => a.by !== 'records') ?? auth[0]!;
    if (kind.by === 'records') {
      const allowed = kind.adds.map((p) => p.replaceAll('{key}', c.keyId ?? KEY));
      const outside = diffs.flat().filter((k) => !allowed.some((p) => k.startsWith(p)));
      t.same(outside, [], `${Protocol[c.protocol]}, ${c.what}: only records under ${allowed.join(', ') || 'no prefix'} change`);
    } else {
      t.ok(outcome.every((o) => !o.done), `${Protocol[c.protocol]}, ${c.what}: no node completes it`);
      t.same(diffs, members.map(() => []), `${Protocol[c.protocol]}, ${c.what}: no record of any node changes`);
    }
  }
  // And the key still signs for the customer's own requests: nothing above destroyed it.
  for (const m of members) t.ok((await m.store.getSecret(`key/${KEY}/current/share`)) !== undefined, 'every node still holds its share');
  const epochOf = async (m: TestNode) => (await new VaultShareStore(m.store).current(KEY))?.key.pkg.epoch;
  t.same(await Promise.all(members.map(epochOf)), [0, 0, 0], 'every node is still at epoch 0');

  // With the receipts of the refresh's members, the commit promotes the pending epoch everywhere.
  t.equal(receipts.length, 3, 'each receiver signed a receipt');
  t.ok((await run(members, Protocol.COMMIT_EPOCH, epochParams.encode({ keyId: KEY, epoch: 1, receipts: receipts.slice(1) }))).every((o) => o.done), 'two receipts of the 2-of-3 committee commit');
  t.same(await Promise.all(members.map(epochOf)), [1, 1, 1], 'every node holds epoch 1');

  // A reshare that moves the key off node 3 onto a fourth node (dealers 1 and 3; receivers 1, 2 and 4):
  // node 3 drops its share only on the new committee's receipts, and keeps it sealed apart for the
  // retention window.
  const fourth = await node(t);
  const all = [...members, fourth];
  const roster2 = signRoster({ version: 2, created: 1_795_000_002, nodes: all.map((m) => ({ nodeId: m.identity.nodeId, signingKey: bytesToHex(m.identity.signingKey), encryptionKey: bytesToHex(m.identity.encryptionKey) })) }, operator);
  const seated = [members[0]!, members[1]!, fourth, members[2]!];
  const moved = await run(seated, Protocol.RESHARE, reshareParams.encode({
    keyId: KEY, owner: ORG, oldPkg: refreshed!, newEpoch: 2, newThreshold: 2, tier: 'hosted', roster: roster2, trustLog,
    members: [{ party: 1, oldId: 1, newId: 1 }, { party: 2, newId: 2 }, { party: 3, newId: 3 }, { party: 4, oldId: 3 }],
  }));
  t.ok(moved.every((o) => o.done), `the reshare to nodes 1, 2 and 4 runs: ${JSON.stringify(moved.map((o) => o.failed?.code))}`);
  const next = moved.slice(0, 3).map((o, i) => ({ party: i + 1, signature: reshareResult.decode(o.done!).receipt! }));
  t.notOk(reshareResult.decode(moved[3]!.done!).receipt, 'a dealer that receives nothing signs no receipt');
  t.notOk((await run([members[2]!], Protocol.COMMIT_EPOCH, epochParams.encode({ keyId: KEY, epoch: 2, receipts: next.slice(0, 1) })))[0]!.done, 'the leaving dealer refuses one receipt');
  t.equal(await epochOf(members[2]!), 1, 'and keeps serving epoch 1');
  t.ok((await run(seated, Protocol.COMMIT_EPOCH, epochParams.encode({ keyId: KEY, epoch: 2, receipts: next.slice(1) }))).every((o) => o.done), 'the commit with two receipts');
  t.same(await Promise.all(seated.map(epochOf)), [2, 2, 2, undefined], 'nodes 1, 2 and 4 hold epoch 2; node 3 holds no current share');
  t.ok(await members[2]!.store.getSecret('retired/' + KEY + '/1/share'), 'node 3 keeps its old share sealed, apart, for the retention window');
  t.equal(await new VaultShareStore(members[2]!.store).eraseRetired(Date.now()), 0, 'not erased before the window ends');
  t.equal(await new VaultShareStore(members[2]!.store).eraseRetired(Date.now() + 8 * 24 * 3600 * 1000), 1, 'erased after it');
  t.notOk(await members[2]!.store.get('retired/' + KEY + '/1/share'), 'gone');
});
