// One customer-signed intent, one transfer (DESIGN.md "Trust", point 3). Three nodes run their real
// signing-session factory (node-protocols.ts) over a real sealed store (LevelDB in a temp dir), the real
// intent authorizer and the intent ledger. The intent fixes what makes its transaction unique on chain
// (the EVM nonce, the Bitcoin outputs spent), so a coordinator with one malicious node cannot have two
// honest nodes, each with its own ledger, sign one intent into two transfers; and a replay with another
// nonce or other inputs is refused by every node before anything derived from the signing leaves. The
// same nonce or input set again is allowed (a retry); the ledger's record survives a restart; two
// concurrent sessions for one intent cannot both pass.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { toHex as viemHex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { encodeIntent, signIntent, type BtcTransferIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { evmSigningDigest, evmTransaction, type EvmTemplate } from '../../core/chains/evm/evm-transaction.ts';
import { buildSpend } from '../../api/chains/bitcoin/build-spend.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import type { PartyProtocol } from '../../node/runtime/party-protocol.ts';
import type { SessionContext } from '../../node/runtime/session-host.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { signParams } from '../../core/session/session-contract.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar, pointHex } from '../../node/protocols/math/curve.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { committee } from '../protocols/ecdsa/harness.ts';
import { sessionIdFields } from './session-ids.ts';

bitcoin.initEccLib(ecc);
const ORG = 'org_replay';
const apiSecret = sha256(new TextEncoder().encode('intent replay api key'));
const NOW = Date.now();
const NOT_AFTER = BigInt(Math.floor(NOW / 1000) + 3600);
const c = committee(3, 2, 'intent-replay');
const pkg = c.keys.get(1)!.pkg;
const keyId = pkg.keyId;
const derived = pointHex(derive(pkg.groupKey, pkg.chainCode, []).publicKey);
const evmFrom = publicKeyToAddress(viemHex(secp256k1.Point.fromHex(derived).toBytes(false)));
const p2tr = bitcoin.payments.p2tr({ pubkey: outputKey(derived), network: bitcoin.networks.regtest }).address!;
const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(7), network: bitcoin.networks.regtest }).address!;

const ids: PinnedMember[] = [1, 2, 3].map((i) => ({ index: i, nodeId: `node-${i}`, signingKey: bytesToHex(randomBytes(32)), encryptionKey: bytesToHex(randomBytes(32)) }));
const parties: Party[] = ids.map((m) => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: m.index, signingKey: hexToBytes(m.signingKey), encryptionKey: hexToBytes(m.encryptionKey) }));

interface Node {
  me: number;
  dir: string;
  storageKey: Uint8Array<ArrayBuffer>;
  store: SealedStore;
  open(protocol: Protocol, params: Uint8Array): Promise<PartyProtocol>;
}

/** Node `me` with its share and OT setup, as DKG and the OT-setup session leave them. */
async function startNode(t: Test, me: number, dir = mkdtempSync(join(tmpdir(), 'replay-')), storageKey: Uint8Array<ArrayBuffer> = new Uint8Array(randomBytes(32)), fresh = true): Promise<Node> {
  const store = await SealedStore.open(dir, storageKey);
  t.teardown(() => store.close().catch(() => undefined));
  const vault = new VaultShareStore(store);
  if (fresh) {
    const k = c.keys.get(me)!;
    await vault.putNew(keyId, { key: { share: new SecretShare(me, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: ORG, committee: ids, tier: 'hosted' });
    const ot = c.ots.get(me)!;
    await vault.putOt(keyId, ot);
  }
  const trust = new TrustRegistry(store, { operatorKeys: [], fileKeys: { [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } } });
  const factory = nodeProtocols({ vault, authorizer: new IntentAuthorizer(trust, () => NOW), trust, ledger: new IntentLedger(store) } as Parameters<typeof nodeProtocols>[0]);
  return {
    me, dir, storageKey, store,
    open: (protocol, params) => {
      const ctx: SessionContext = {
        open: create(SessionOpenSchema, { ...sessionIdFields(), protocol, keyId, parties, params }),
        myIndex: me,
        parties,
      };
      return factory(ctx);
    },
  };
}

async function cluster(t: Test): Promise<Node[]> {
  const nodes = await Promise.all([1, 2, 3].map((me) => startNode(t, me)));
  t.teardown(() => nodes.forEach((n) => rmSync(n.dir, { recursive: true, force: true })));
  return nodes;
}

function evmIntent(key: string, nonce: bigint | null = 7n): EvmTransferIntent {
  return {
    kind: 'evm.transfer', organization: ORG, walletId: 'w', chainId: 31337n, ...(nonce === null ? {} : { nonce }), from: hexToBytes(evmFrom.slice(2)), to: new Uint8Array(20).fill(0xb0),
    asset: { kind: 'native' }, amount: 10n ** 18n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: key, notAfter: NOT_AFTER,
  };
}

/** The SIGN_ECDSA session parameters a coordinator sends for `intent` at `nonce`. */
function evmSession(intent: EvmTransferIntent, nonce: number, maxFeePerGas = 10n ** 9n): Uint8Array {
  const bytes = encodeIntent(intent);
  const template: EvmTemplate = { nonce, gasLimit: 21_000n, maxFeePerGas, maxPriorityFeePerGas: 1n };
  return signParams.encode({
    keyId, epoch: pkg.epoch, path: [], scheme: 'ecdsa', digests: [evmSigningDigest(evmTransaction(intent, template))],
    intent: bytes, intentSignature: signIntent(bytes, apiSecret), apiKeyId: 'key_1',
    template: encodeBlob('evm-template', { nonce, gasLimit: '21000', maxFeePerGas: String(maxFeePerGas), maxPriorityFeePerGas: '1' }), endUserToken: '',
  });
}

const utxo = (byte: number, value: bigint) => ({ txid: bytesToHex(new Uint8Array(32).fill(byte)), vout: 0, value, status: { confirmed: true } });

const outpointOf = (u: { txid: string; vout: number }) => ({ txid: hexToBytes(u.txid), vout: u.vout });

/** A Taproot intent naming the outputs it spends (without amounts: BIP-341 commits to them anyway). */
function btcIntent(key: string, spends: { txid: string; vout: number }[]): BtcTransferIntent {
  return { kind: 'btc.transfer', organization: ORG, walletId: 'w', network: 'regtest', from: p2tr, outputs: [{ address: dest, amount: 40_000n }], maxFeeRate: 20n, maxFee: 5_000n, inputs: spends.map(outpointOf), idempotencyKey: key, notAfter: NOT_AFTER };
}

/** The SIGN_SCHNORR session parameters for `intent` spending `utxos`. */
function btcSession(intent: BtcTransferIntent, utxos: ReturnType<typeof utxo>[], feeRate = 5n): Uint8Array {
  const bytes = encodeIntent(intent);
  // Exactly `utxos`, whatever the intent names: what a malicious coordinator can put in a template.
  const spend = buildSpend(intent, utxos, feeRate, { exactInputs: true });
  return signParams.encode({
    keyId, epoch: pkg.epoch, path: [], scheme: 'taproot', digests: spend.digests,
    intent: bytes, intentSignature: signIntent(bytes, apiSecret), apiKeyId: 'key_1', template: spend.template, endUserToken: '',
  });
}

/** Opens the session on `node` and, for Schnorr, admits it (its authorization runs in `admit`). */
async function signs(node: Node, protocol: Protocol, params: Uint8Array): Promise<void> {
  const p = await node.open(protocol, params);
  try {
    await p.admit?.();
  } finally {
    p.dispose();
  }
}

const used = { code: 'intent_already_used' };
const refusal = (code: string) => ({ code });

t.test('a malicious coordinator and node cannot have two honest nodes sign one EVM intent at two nonces', async (t) => {
  // Node 3 is the coordinator's accomplice: it would co-sign anything. Honest nodes 1 and 2 each see one
  // session only, so neither ledger has the other's claim: the intent itself must fix the nonce.
  const nodes = await cluster(t);
  const [one, two] = nodes;
  const intent = evmIntent('evm-two-subsets', 7n);
  await signs(one!, Protocol.SIGN_ECDSA, evmSession(intent, 7));
  await t.rejects(signs(two!, Protocol.SIGN_ECDSA, evmSession(intent, 8)), refusal('wrong_evm_nonce'), 'node 2, never asked before, refuses nonce 8');
  await signs(two!, Protocol.SIGN_ECDSA, evmSession(intent, 7, 3n * 10n ** 9n));
  // An intent that leaves the nonce to the service is what made two transfers possible: no node signs it.
  const open = evmIntent('evm-no-nonce', null);
  for (const [n, nonce] of [[one!, 7], [two!, 8]] as const) {
    await t.rejects(signs(n, Protocol.SIGN_ECDSA, evmSession(open, nonce)), refusal('intent_nonce_required'), `node ${n.me} refuses an intent without a nonce`);
  }
  // Nothing of the refused sessions was recorded: each node's ledger holds only nonce 7 of the signed intent.
  for (const n of [one!, two!]) {
    const ledger = new IntentLedger(n.store);
    t.same(await ledger.recorded(bytesToHex(sha256(encodeIntent(intent)))), { chain: 'evm', chainId: 31337n, from: evmFrom.toLowerCase(), nonce: 7 }, `node ${n.me} recorded nonce 7`);
    t.equal(await ledger.recorded(bytesToHex(sha256(encodeIntent(open)))), undefined, `node ${n.me} recorded nothing for the intent without a nonce`);
  }
});

t.test('a malicious coordinator and node cannot have two honest nodes sign one Bitcoin intent with two input sets', async (t) => {
  const nodes = await cluster(t);
  const [one, two] = nodes;
  const a = utxo(0xa1, 60_000n);
  const b = utxo(0xb2, 60_000n);
  const intent = btcIntent('btc-two-subsets', [a]);
  await signs(one!, Protocol.SIGN_SCHNORR, btcSession(intent, [a]));
  await t.rejects(signs(two!, Protocol.SIGN_SCHNORR, btcSession(intent, [b])), refusal('wrong_inputs'), 'node 2 refuses outputs the intent does not name');
  await t.rejects(signs(two!, Protocol.SIGN_SCHNORR, btcSession(intent, [a, b].map((u) => ({ ...u, value: 25_000n })))), refusal('wrong_inputs'), 'and a superset');
  // An intent that leaves the inputs to the service: no node signs it, whatever it is given.
  const open = btcIntent('btc-no-inputs', []);
  for (const [n, spend] of [[one!, a], [two!, b]] as const) {
    await t.rejects(signs(n, Protocol.SIGN_SCHNORR, btcSession(open, [spend])), refusal('intent_inputs_required'), `node ${n.me} refuses an intent naming no inputs`);
  }
  t.equal(await new IntentLedger(two!.store).recorded(bytesToHex(sha256(encodeIntent(intent)))), undefined, 'node 2 recorded nothing');
});

t.test('an EVM intent is refused at another nonce by every node, and signs again at its own', async (t) => {
  const nodes = await cluster(t);
  const intent = evmIntent('evm-replay-1');
  for (const n of nodes) await signs(n, Protocol.SIGN_ECDSA, evmSession(intent, 7));
  for (const n of nodes) {
    await t.rejects(signs(n, Protocol.SIGN_ECDSA, evmSession(intent, 8)), refusal('wrong_evm_nonce'), `node ${n.me} refuses nonce 8`);
    await t.rejects(signs(n, Protocol.SIGN_ECDSA, evmSession(intent, 6)), refusal('wrong_evm_nonce'), `node ${n.me} refuses nonce 6`);
  }
  // A retry at the same nonce (other fees): only one of the two can ever be mined.
  for (const n of nodes) await signs(n, Protocol.SIGN_ECDSA, evmSession(intent, 7, 2n * 10n ** 9n));
  // Another intent is not affected.
  for (const n of nodes) await signs(n, Protocol.SIGN_ECDSA, evmSession(evmIntent('evm-replay-2', 8n), 8));
});

t.test('a Bitcoin intent is refused for other inputs or amounts by every node; the same set signs again', async (t) => {
  const nodes = await cluster(t);
  const a = utxo(0xa1, 60_000n);
  const b = utxo(0xb2, 60_000n);
  const intent = btcIntent('btc-replay-1', [a]);
  for (const n of nodes) await signs(n, Protocol.SIGN_SCHNORR, btcSession(intent, [a]));
  for (const n of nodes) await t.rejects(signs(n, Protocol.SIGN_SCHNORR, btcSession(intent, [b])), refusal('wrong_inputs'), `node ${n.me} refuses other inputs`);
  // The same outpoint claimed with another amount is another input set: the ledger refuses it.
  for (const n of nodes) await t.rejects(signs(n, Protocol.SIGN_SCHNORR, btcSession(intent, [{ ...a, value: 70_000n }])), used);
  // The same input set at another fee rate is a retry.
  for (const n of nodes) await signs(n, Protocol.SIGN_SCHNORR, btcSession(intent, [a], 10n));
});

t.test('the record survives a restart of the node', async (t) => {
  const [node] = await Promise.all([startNode(t, 1)]);
  t.teardown(() => rmSync(node!.dir, { recursive: true, force: true }));
  const evm = evmIntent('evm-restart', 3n);
  const c3 = utxo(0xc3, 80_000n);
  const btc = btcIntent('btc-restart', [c3]);
  await signs(node!, Protocol.SIGN_ECDSA, evmSession(evm, 3));
  await signs(node!, Protocol.SIGN_SCHNORR, btcSession(btc, [c3]));
  await node!.store.close();
  const again = await startNode(t, 1, node!.dir, node!.storageKey, false);
  t.same(await new IntentLedger(again.store).recorded(bytesToHex(sha256(encodeIntent(evm)))), { chain: 'evm', chainId: 31337n, from: evmFrom.toLowerCase(), nonce: 3 }, 'the EVM claim is there after the restart');
  await t.rejects(signs(again, Protocol.SIGN_SCHNORR, btcSession(btc, [{ ...c3, value: 90_000n }])), used, 'another amount for the input after the restart');
  await signs(again, Protocol.SIGN_ECDSA, evmSession(evm, 3));
  await signs(again, Protocol.SIGN_SCHNORR, btcSession(btc, [c3]));
  // The record is sealed: neither the intent's outpoint nor its nonce is stored in the clear.
  let raw = '';
  for await (const k of again.store.keys('intent/')) raw += Buffer.from((await again.store.raw(k))!).toString('latin1');
  t.notOk(raw.includes('c3c3c3c3'), 'no outpoint in the clear');
});

t.test('two concurrent sessions for one intent with different input amounts: exactly one passes', async (t) => {
  const nodes = await cluster(t);
  const e5 = utxo(0xe5, 60_000n);
  const intent = btcIntent('btc-race', [e5]);
  for (const n of nodes) {
    const outcomes = await Promise.allSettled([
      signs(n, Protocol.SIGN_SCHNORR, btcSession(intent, [e5])),
      signs(n, Protocol.SIGN_SCHNORR, btcSession(intent, [{ ...e5, value: 70_000n }])),
    ]);
    t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, `node ${n.me}: one session passes`);
    t.match(outcomes.find((o) => o.status === 'rejected'), { reason: used }, `node ${n.me}: the other is refused as a replay`);
  }
});

t.test('the ledger on its own: a second, different claim of one intent is refused, concurrently too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
  const store = await SealedStore.open(dir, new Uint8Array(32).fill(3));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const ledger = new IntentLedger(store);
  const grant = (nonce: number) => ({ intentHash: 'ab'.repeat(32), notAfter: NOT_AFTER, use: { chain: 'evm' as const, chainId: 2n ** 60n + 1n, from: evmFrom.toLowerCase(), nonce } });
  const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => ledger.claim(grant(i))));
  t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, 'one of eight concurrent nonces wins');
  const winner = outcomes.findIndex((o) => o.status === 'fulfilled');
  await ledger.claim(grant(winner));
  t.same(await ledger.recorded('ab'.repeat(32)), grant(winner).use, 'the record keeps the chain id exactly');
  await t.rejects(ledger.claim({ ...grant(winner), use: { chain: 'bitcoin', inputs: [{ txid: 'cd'.repeat(32), vout: 0, amount: 1n }] } }), used);
  await t.rejects(ledger.claim({ ...grant(winner), intentHash: 'AB' }), /intent hash/);

  // The session's claim rides in the ledger's batch: written with a new record, written alone when the
  // record is already there, and not at all when the claim is refused.
  const vault = new VaultShareStore(store);
  const v0 = store.version;
  await ledger.claim({ ...grant(0), intentHash: 'cd'.repeat(32) }, await vault.reserveSession('01'.repeat(32)));
  t.equal(store.version, v0 + 1n, 'a new record and the session claim: one write');
  t.ok(await store.get(`used/${'01'.repeat(32)}`), 'the session is claimed on disk');
  await ledger.claim(grant(winner), await vault.reserveSession('02'.repeat(32)));
  t.ok(await store.get(`used/${'02'.repeat(32)}`), 'the same claim again still writes the session claim');
  await t.rejects(ledger.claim({ ...grant(winner), use: { chain: 'bitcoin', inputs: [{ txid: 'ef'.repeat(32), vout: 1, amount: 2n }] } }, await vault.reserveSession('03'.repeat(32))), used);
  t.equal(await store.get(`used/${'03'.repeat(32)}`), undefined, 'a refused intent writes no session claim');
  await t.rejects(vault.reserveSession('03'.repeat(32)), { code: 'session_reused' }, 'and the reserved id stays refused in this process');
  await t.rejects(vault.reserveSession('01'.repeat(32)), { code: 'session_reused' }, 'a claimed id is refused');
});
