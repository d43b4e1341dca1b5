// A vault signs, as a Safe owner, exactly the Safe transaction the customer signed, once (intent kind 3,
// docs/intents.md "Kind 3"). Three nodes run their real session hosts and signing-session factory
// (node-protocols.ts) over real sealed stores, the real intent authorizer and the intent ledger, wired by
// an in-memory relay; the test plays a malicious coordinator (and API): it opens ECDSA signings whose
// digest is another SafeTx than the intent's (another to, data, Safe nonce, Safe or chain), intents of
// another wallet or path, a delegatecall elsewhere than MultiSendCallOnly, a template smuggled in, and
// the same intent again with another nonce's digest. Every honest node refuses, and every record of every
// node is read back: nothing marked, nothing signed. The one signing that runs is checked with an
// implementation not written here: @safe-global/protocol-kit computes the SafeTx hash and assembles the
// owner signature, and the signature recovers to the vault wallet's address.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { getAddress, recoverAddress, toHex as viemHex, type Hex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { calculateSafeTransactionHash, EthSafeSignature, buildSignatureBytes } from '@safe-global/protocol-kit';
import { encodeIntent, signIntent, type SafeTxIntent } from '../../core/intents/intent.ts';
import { safeTxHash, SAFE_DELEGATECALL_TARGETS } from '../../core/chains/evm/safe-tx.ts';
import { signParams, signResult } from '../../core/session/session-contract.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { nodeProtocols, type NodeProtocolDeps } from '../../node/runtime/sessions/node-protocols.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { SessionHost } from '../../node/runtime/session-host.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar, pointHex } from '../../node/protocols/math/curve.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { createLogger } from '../../common/logger.ts';
import { Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { committee } from '../protocols/ecdsa/harness.ts';
import { relayHost, runRelayed, storeRecords, type RelayOutcome } from './relay-host.ts';

const ORG = 'org_safe';
const apiSecret = sha256(new TextEncoder().encode('safe tx api key'));
const c = committee(3, 2, 'safe-tx-signing');
const pkg = c.keys.get(1)!.pkg;
const keyId = pkg.keyId;
const addressAt = (path: number[]) => publicKeyToAddress(viemHex(secp256k1.Point.fromHex(pointHex(derive(pkg.groupKey, pkg.chainCode, path).publicKey)).toBytes(false)));
/** The vault wallet at path m/0: the Safe's owner. */
const PATH = [0];
const owner = addressAt(PATH);
const SAFE = new Uint8Array(20).fill(0x5a);
const TOKEN = new Uint8Array(20).fill(0x70);
const MINT = hexToBytes('40c10f19000000000000000000000000b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b200000000000000000000000000000000000000000000000000000000000003e8');

interface TestNode {
  me: number;
  identity: NodeIdentity;
  host: SessionHost;
  store: SealedStore;
  outcomes: Map<string, RelayOutcome>;
}

async function cluster(t: Test): Promise<TestNode[]> {
  const identities = [1, 2, 3].map(() => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))));
  const pinned: PinnedMember[] = identities.map((id, i) => ({ index: i + 1, nodeId: id.nodeId, signingKey: bytesToHex(id.signingKey), encryptionKey: bytesToHex(id.encryptionKey) }));
  const hosts = new Map<string, { identity: NodeIdentity; host: SessionHost }>();
  const nodes: TestNode[] = [];
  for (const [i, identity] of identities.entries()) {
    const me = i + 1;
    const dir = mkdtempSync(join(tmpdir(), 'safe-tx-'));
    const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
    t.teardown(async () => {
      await store.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });
    const vault = new VaultShareStore(store);
    const k = c.keys.get(me)!;
    await vault.putNew(keyId, { key: { share: new SecretShare(me, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: ORG, committee: pinned, tier: 'hosted' });
    await vault.putOt(keyId, c.ots.get(me)!);
    const trust = new TrustRegistry(store, { operatorKeys: [], fileKeys: { [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } } });
    const deps = { vault, trust, authorizer: new IntentAuthorizer(trust), ledger: new IntentLedger(store), identity } as unknown as NodeProtocolDeps;
    const outcomes = new Map<string, RelayOutcome>();
    const host = relayHost(identity, hosts, nodeProtocols(deps), createLogger('test', 'silent'), outcomes);
    hosts.set(identity.nodeId, { identity, host });
    nodes.push({ me, identity, host, store, outcomes });
  }
  return nodes;
}

const partiesOf = (members: TestNode[]): Party[] =>
  members.map((m) => ({ $typeName: 'mpc.v1.Party', nodeId: m.identity.nodeId, index: m.me, signingKey: m.identity.signingKey, encryptionKey: m.identity.encryptionKey }));

/** Opens a session at every member as the coordinator would and waits until each reported. */
function run(members: TestNode[], protocol: Protocol, params: Uint8Array): Promise<RelayOutcome[]> {
  return runRelayed(members, partiesOf(members), protocol, keyId, params, 60_000);
}

/** Every record of a node: its key and a hash of its stored bytes. */
const records = (n: TestNode): Promise<Map<string, string>> => storeRecords(n.store);

let counter = 0;
function safeIntent(over: Partial<SafeTxIntent> = {}): SafeTxIntent {
  return {
    kind: 'evm.safe_tx', organization: ORG, walletId: 'w_owner', chainId: 31337n, owner: hexToBytes(owner.slice(2)), safe: SAFE, to: TOKEN, value: 0n, data: MINT,
    operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: new Uint8Array(20), refundReceiver: new Uint8Array(20), safeNonce: 5n,
    idempotencyKey: `safe-${++counter}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600), ...over,
  };
}

/** The SIGN_ECDSA parameters a coordinator sends: `intent`, signed by the customer, and the digest it chose. */
function session(intent: SafeTxIntent, opts: { digest?: Uint8Array; path?: number[]; template?: Uint8Array; scheme?: 'ecdsa' | 'taproot' } = {}): Uint8Array {
  const bytes = encodeIntent(intent);
  return signParams.encode({
    keyId, epoch: pkg.epoch, path: opts.path ?? PATH, scheme: opts.scheme ?? 'ecdsa', digests: [opts.digest ?? safeTxHash(intent)],
    intent: bytes, intentSignature: signIntent(bytes, apiSecret), apiKeyId: 'key_1', template: opts.template ?? new Uint8Array(), endUserToken: '',
  });
}

const hashOf = (intent: SafeTxIntent) => bytesToHex(sha256(encodeIntent(intent)));

/** protocol-kit's SafeTx hash for Safe 1.4.1. */
function theirHash(i: SafeTxIntent): Hex {
  return calculateSafeTransactionHash(getAddress(viemHex(i.safe)), {
    to: getAddress(viemHex(i.to)), value: i.value.toString(), data: viemHex(i.data), operation: i.operation, safeTxGas: i.safeTxGas.toString(), baseGas: i.baseGas.toString(),
    gasPrice: i.gasPrice.toString(), gasToken: getAddress(viemHex(i.gasToken)), refundReceiver: getAddress(viemHex(i.refundReceiver)), nonce: Number(i.safeNonce),
  } as never, '1.4.1', i.chainId) as Hex;
}

/**
 * Runs `params` on two subsets that between them ask every node, and expects each to refuse with `code`,
 * every record of every node unchanged (no ledger record, no session claim, nothing else).
 */
async function refusedByAll(t: Test, nodes: TestNode[], params: Uint8Array, code: string, what: string): Promise<void> {
  const before = await Promise.all(nodes.map(records));
  // Nodes 1 and 2, then 3 with 1: every honest node is asked, in a subset the coordinator chose.
  const outcome = [...await run(nodes.slice(0, 2), Protocol.SIGN_ECDSA, params), ...await run([nodes[2]!, nodes[0]!], Protocol.SIGN_ECDSA, params)];
  t.same(outcome.map((o) => o.failed?.code), [code, code, code, code], `${what}: every node refuses (${code})`);
  t.ok(outcome.every((o) => !o.done), `${what}: no signature`);
  const after = await Promise.all(nodes.map(records));
  for (const [i, n] of nodes.entries()) t.same([...after[i]!.entries()], [...before[i]!.entries()], `${what}: node ${n.me}'s records are unchanged`);
}

t.test('the SafeTx signature: the digest nodes sign is protocol-kit\'s, and it recovers to the vault wallet', async (t) => {
  const nodes = await cluster(t);
  const intent = safeIntent();
  t.equal(viemHex(safeTxHash(intent)), theirHash(intent), 'the digest the nodes recompute is protocol-kit\'s SafeTx hash');
  const outcome = await run(nodes.slice(0, 2), Protocol.SIGN_ECDSA, session(intent));
  t.ok(outcome.every((o) => o.done), 'both signers sign');
  const result = signResult.decode(outcome[0]!.done!);
  t.same(signResult.decode(outcome[1]!.done!), result, 'both report the same signature');
  const sig = result.signatures[0]!;
  const v = 27 + result.recoveryIds![0]!;
  // Safe's owner signature for an EOA: r || s || v with v 27 or 28, as protocol-kit assembles it.
  const ours = `0x${bytesToHex(sig)}${v.toString(16)}` as Hex;
  const signer = await recoverAddress({ hash: theirHash(intent), signature: ours });
  t.equal(signer, getAddress(owner), 'the signature recovers to the vault wallet\'s address (the Safe owner)');
  t.equal(buildSignatureBytes([new EthSafeSignature(owner, ours)]), ours, 'protocol-kit lays the owner signature out as r || s || v');
  t.not(addressAt([]), owner, 'the owner is the wallet at m/0, not the group key\'s address');
  for (const n of nodes.slice(0, 2)) {
    t.same(await new IntentLedger(n.store).recorded(hashOf(intent)), {
      chain: 'evm-safe-tx', chainId: 31337n, safe: viemHex(SAFE), owner: owner.toLowerCase(), safeNonce: 5n, digest: bytesToHex(safeTxHash(intent)),
    }, `node ${n.me} recorded the one SafeTx digest`);
  }
  t.equal(await new IntentLedger(nodes[2]!.store).recorded(hashOf(intent)), undefined, 'node 3 took no part and recorded nothing');
});

t.test('a malicious coordinator cannot get another SafeTx signed than the intent\'s', async (t) => {
  const nodes = await cluster(t);
  const intent = safeIntent();
  // The customer signed `intent`; the coordinator asks for the digest of a transaction it changed.
  const others: [string, Partial<SafeTxIntent>][] = [
    ['another to', { to: new Uint8Array(20).fill(0x66) }],
    ['other calldata', { data: hexToBytes('a9059cbb') }],
    ['another Safe nonce', { safeNonce: 6n }],
    ['another Safe', { safe: new Uint8Array(20).fill(0x5b) }],
    ['another chain', { chainId: 1n }],
    ['a value', { value: 10n ** 18n }],
    ['a delegatecall', { operation: 1 }],
    ['a gas refund to the coordinator', { gasPrice: 1n, refundReceiver: new Uint8Array(20).fill(0xcc) }],
  ];
  for (const [what, change] of others) {
    await refusedByAll(t, nodes, session(intent, { digest: safeTxHash({ ...intent, ...change }) }), 'digest_mismatch', what);
  }
  await refusedByAll(t, nodes, session(intent, { digest: new Uint8Array(32).fill(1) }), 'digest_mismatch', 'an arbitrary digest');
  for (const n of nodes) t.equal(await new IntentLedger(n.store).recorded(hashOf(intent)), undefined, `node ${n.me} recorded nothing for the intent`);
});

t.test('one intent, one SafeTx: the same intent again is only ever its own digest', async (t) => {
  const nodes = await cluster(t);
  const intent = safeIntent({ safeNonce: 9n });
  const first = await run(nodes.slice(0, 2), Protocol.SIGN_ECDSA, session(intent));
  t.ok(first.every((o) => o.done), 'the intent signs once');
  // The same intent with the next nonce's digest, on the signers that signed it and on the one that did not.
  const next = safeTxHash({ ...intent, safeNonce: 10n });
  // Node 3 never signed it and has no record of it: it refuses all the same, from the intent alone.
  await refusedByAll(t, nodes, session(intent, { digest: next }), 'digest_mismatch', 'the same intent with the next Safe nonce');
  // Another nonce needs another intent: another customer signature, another record.
  const other = safeIntent({ safeNonce: 10n });
  t.not(hashOf(other), hashOf(intent));
  // A record for the intent that named anything else fails closed: the ledger refuses the claim.
  const ledger = new IntentLedger(nodes[0]!.store);
  const recorded = await ledger.recorded(hashOf(intent));
  t.equal(recorded?.chain, 'evm-safe-tx');
  await t.rejects(ledger.claim({ intentHash: hashOf(intent), notAfter: intent.notAfter, use: { ...recorded!, digest: bytesToHex(next) } as never }), { code: 'intent_already_used' }, 'the ledger refuses another digest for a recorded intent');
  // A retry of the same intent (a failed session, another subset) is over the same digest: the ledger's
  // rule for transfers, where the same nonce again is allowed. It signs the same SafeTx, which a Safe
  // counts once per owner and executes once per nonce.
  const again = await run([nodes[1]!, nodes[2]!], Protocol.SIGN_ECDSA, session(intent));
  t.ok(again.every((o) => o.done), 'a retry over the same digest signs');
  const sig = signResult.decode(again[0]!.done!);
  const signer = await recoverAddress({ hash: viemHex(safeTxHash(intent)), signature: `0x${bytesToHex(sig.signatures[0]!)}${(27 + sig.recoveryIds![0]!).toString(16)}` as Hex });
  t.equal(signer, getAddress(owner), 'over the same SafeTx, by the same owner');
});

t.test('an intent whose owner is not this vault\'s wallet at the path is refused', async (t) => {
  const nodes = await cluster(t);
  const stranger = new Uint8Array(20).fill(0xee);
  await refusedByAll(t, nodes, session(safeIntent({ owner: stranger })), 'wrong_sender', 'an owner address of another vault');
  const intent = safeIntent();
  await refusedByAll(t, nodes, session(intent, { path: [1] }), 'wrong_sender', 'the wallet\'s intent at another path of the vault');
  await refusedByAll(t, nodes, session(intent, { path: [] }), 'wrong_sender', 'the wallet\'s intent at the vault\'s root');
  await refusedByAll(t, nodes, session(safeIntent({ organization: 'org_other' })), 'wrong_organization', 'another organization\'s intent');
});

t.test('what the intent does not allow is refused: a delegatecall elsewhere, a template, another scheme, a forged signature', async (t) => {
  const nodes = await cluster(t);
  const elsewhere = safeIntent({ operation: 1, to: new Uint8Array(20).fill(0x66) });
  await refusedByAll(t, nodes, session(elsewhere), 'delegatecall_refused', 'a delegatecall to another contract, customer-signed');
  const intent = safeIntent();
  await refusedByAll(t, nodes, session(intent, { template: encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: '1', maxPriorityFeePerGas: '1' }) }), 'bad_template', 'a template beside the intent');
  const bytes = encodeIntent(intent);
  const forged = signParams.encode({
    keyId, epoch: pkg.epoch, path: PATH, scheme: 'ecdsa', digests: [safeTxHash(intent)], intent: bytes, intentSignature: ed25519.sign(bytes, sha256(new TextEncoder().encode('the coordinator\'s own key'))),
    apiKeyId: 'key_1', template: new Uint8Array(), endUserToken: '',
  });
  await refusedByAll(t, nodes, forged, 'bad_intent_signature', 'an intent the customer did not sign');
  const before = await Promise.all(nodes.map(records));
  const taproot = await run(nodes.slice(0, 2), Protocol.SIGN_SCHNORR, session(intent, { scheme: 'taproot' }));
  t.same(taproot.map((o) => o.failed?.code), ['wrong_scheme', 'wrong_scheme'], 'a Schnorr signing of the SafeTx is refused');
  const after = await Promise.all(nodes.map(records));
  for (const [i, n] of nodes.entries()) t.same([...after[i]!.entries()], [...before[i]!.entries()], `node ${n.me}'s records are unchanged`);
  // The delegatecall the nodes do sign: a batch through MultiSendCallOnly.
  const batch = safeIntent({ operation: 1, to: hexToBytes(SAFE_DELEGATECALL_TARGETS[0]!.slice(2)), data: hexToBytes('8d80ff0a') });
  t.ok((await run(nodes.slice(0, 2), Protocol.SIGN_ECDSA, session(batch))).every((o) => o.done), 'a delegatecall to MultiSendCallOnly signs');
});
