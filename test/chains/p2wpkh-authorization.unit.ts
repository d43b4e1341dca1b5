// Bitcoin P2WPKH with ECDSA through the node's authorization: the BIP-143 digests a node recomputes
// from the intent and template are the ones buildSpend produces; signed under the derived key and
// finalized, the spend passes the regtest double's independent script interpreter. A template that
// pays another output or a higher fee is refused. BIP-143 commits a signature to its own input's amount
// only, so the intent names every input with its amount (version 2) and the node signs no other amount.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { buildSpend, finalizeP2wpkh, SignatureCheckError, type UnsignedSpend } from '../../api/chains/bitcoin/build-spend.ts';
import { EsploraClient, type Utxo } from '../../api/chains/bitcoin/esplora-client.ts';
import { encodeIntent, signIntent, type BtcTransferIntent } from '../../core/intents/intent.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { Fn } from '../../node/protocols/math/curve.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer, type SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import type { SignScheme } from '../../core/session/sign-fields.ts';
import { SessionRefused } from '../../node/runtime/session-host.ts';
import { EsploraDouble } from './esplora-double.ts';

bitcoin.initEccLib(ecc);
const net = bitcoin.networks.regtest;
const ORG = 'org_btc';
const apiSecret = sha256(new TextEncoder().encode('p2wpkh api key'));
const groupSecret = sha256(new TextEncoder().encode('p2wpkh group key'));
const groupKey = bytesToHex(secp256k1.getPublicKey(groupSecret, true));
const chainCode = bytesToHex(sha256(new TextEncoder().encode('p2wpkh chain code')));
const PATH = [84, 1, 0, 0, 0];
const derived = derive(groupKey, chainCode, PATH);
const derivedSecret = Fn.toBytes(Fn.add(BigInt('0x' + bytesToHex(groupSecret)), derived.tweak));
const derivedKey = derived.publicKey.toBytes(true);
const from = bitcoin.payments.p2wpkh({ pubkey: derivedKey, network: net }).address!;
const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(4), network: net }).address!;

async function authorizer(t: Test) {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'p2wpkh-')), new Uint8Array(32).fill(1));
  t.teardown(() => store.close());
  const trust = new TrustRegistry(store, { operatorKeys: [], fileKeys: { [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } } });
  return new IntentAuthorizer(trust);
}

function intent(over: Partial<BtcTransferIntent> = {}): BtcTransferIntent {
  return { kind: 'btc.transfer', organization: ORG, walletId: 'w', network: 'regtest', from, outputs: [{ address: dest, amount: 45_000n }], maxFeeRate: 15n, maxFee: 5_000n, inputs: [], idempotencyKey: 'p2wpkh-1', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600), ...over };
}

/** The intent's inputs: these outputs with their amounts (intent version 2). */
const named = (utxos: Utxo[]) => utxos.map((u) => ({ txid: hexToBytes(u.txid), vout: u.vout, amount: u.value }));

function view(i: BtcTransferIntent, template: Uint8Array, digests: Uint8Array[], scheme: SignScheme = 'ecdsa'): SignRequestView {
  const bytes = encodeIntent(i);
  return {
    path: PATH, scheme, digests, intent: bytes, intentSignature: signIntent(bytes, apiSecret), apiKeyId: 'key_1',
    template, endUserToken: '', owner: ORG, groupKey, chainCode,
  };
}

const templateOf = (tx: bitcoin.Transaction, spend: UnsignedSpend) =>
  encodeBlob('btc-template', { tx: tx.toHex(), prevouts: spend.prevouts.map((p) => ({ script: bytesToHex(p.script), value: String(p.value) })) });
const refusal = (code: string) => ({ constructor: SessionRefused, code });

t.test('a P2WPKH spend authorized by the node, signed with ECDSA under the derived key, passes the script interpreter', async (t) => {
  const double = new EsploraDouble();
  const esplora = new EsploraClient(await double.start());
  t.teardown(() => double.stop());
  double.fund(from, 30_000n);
  double.fund(from, 30_000n);
  const utxos = await esplora.utxos(from);
  const fields = intent({ inputs: named(utxos) });
  const spend = buildSpend(fields, utxos, 6n);
  t.equal(spend.digests.length, 2, 'one BIP-143 digest per input');
  const node = await authorizer(t);
  await node.authorize(view(fields, spend.template, spend.digests));
  const signatures = spend.digests.map((d) => secp256k1.sign(d, derivedSecret, { prehash: false }));
  const txid = await esplora.broadcast(finalizeP2wpkh(spend, signatures, derivedKey));
  t.match(txid, /^[0-9a-f]{64}$/, 'accepted after script verification');
  t.equal((await esplora.utxos(dest))[0]!.value, 45_000n);
  // A high-s signature is normalized into the low-s form relay policy wants.
  const high = spend.digests.map((d) => {
    const s = secp256k1.Signature.fromBytes(secp256k1.sign(d, derivedSecret, { prehash: false }), 'compact');
    return new secp256k1.Signature(s.r, Fn.neg(s.s)).toBytes('compact');
  });
  t.equal(finalizeP2wpkh(spend, high, derivedKey), finalizeP2wpkh(spend, signatures, derivedKey));
  t.throws(() => finalizeP2wpkh(spend, signatures.slice(1), derivedKey), /2 signatures are needed/);
  t.throws(() => finalizeP2wpkh(spend, [signatures[1]!, signatures[0]!], derivedKey), SignatureCheckError, 'a signature for another input is not finalized');
  t.throws(() => finalizeP2wpkh(spend, signatures, secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), SignatureCheckError, 'a key the outputs do not pay to is not finalized');
});

t.test('the node refuses a P2WPKH template that pays another output or a higher fee', async (t) => {
  const node = await authorizer(t);
  const utxos = [{ txid: 'ab'.repeat(32), vout: 1, value: 80_000n, status: { confirmed: true } }];
  const fields = intent({ idempotencyKey: 'p2wpkh-2', inputs: named(utxos) });
  const spend = buildSpend(fields, utxos, 5n);
  await node.authorize(view(fields, spend.template, spend.digests));

  // Another recipient: the template of a different intent.
  const other = buildSpend(intent({ inputs: named(utxos), outputs: [{ address: bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(9), network: net }).address!, amount: 45_000n }] }), utxos, 5n);
  await t.rejects(node.authorize(view(fields, other.template, other.digests)), refusal('wrong_outputs'));

  // A bigger fee taken out of the change: over max_fee.
  const greedy = spend.tx.clone();
  greedy.outs[1]!.value -= 5_000n;
  await t.rejects(node.authorize(view(fields, templateOf(greedy, spend), spend.digests)), refusal('fee_ceiling'));
  // Within max_fee but over max_fee_rate.
  const rate = spend.tx.clone();
  rate.outs[1]!.value -= 1_500n;
  await t.rejects(node.authorize(view(intent({ idempotencyKey: 'p2wpkh-2', inputs: named(utxos), maxFeeRate: 5n, maxFee: 100_000n }), templateOf(rate, spend), spend.digests)), refusal('fee_ceiling'));
  // The right template, other digests.
  await t.rejects(node.authorize(view(fields, spend.template, [new Uint8Array(32).fill(1)])), refusal('digest_mismatch'));
  // The P2WPKH address is not this key's P2TR address, and BIP-340 under the plain key signs no Bitcoin spend.
  await t.rejects(node.authorize(view(fields, spend.template, spend.digests, 'taproot')), refusal('wrong_sender'));
  await t.rejects(node.authorize(view(fields, spend.template, spend.digests, 'bip340')), refusal('unsupported_scheme'));
  // An input from another address.
  const foreign = encodeBlob('btc-template', { tx: spend.tx.toHex(), prevouts: [{ script: bytesToHex(bitcoin.address.toOutputScript(dest, net)), value: '80000' }] });
  await t.rejects(node.authorize(view(fields, foreign, spend.digests)), refusal('foreign_input'));
});

t.test('two sessions that each understate the other input cannot yield one transaction paying an arbitrary fee', async (t) => {
  const double = new EsploraDouble();
  const esplora = new EsploraClient(await double.start());
  t.teardown(() => double.stop());
  double.fund(from, 100_000n);
  double.fund(from, 100_000n);
  const utxos = await esplora.utxos(from);
  const node = await authorizer(t);
  // The attack: both inputs (200 000 sat), 45 000 to the recipient, 53 000 "change": 102 000 sat of fee
  // against a ceiling of 5 000. Session k states input k truly and the other input as 1 sat, so each
  // session alone sees a fee of 2 001 sat, and each yields the one valid signature of input k.
  const tx = new bitcoin.Transaction();
  tx.version = 2;
  for (const u of utxos) tx.addInput(hexToBytes(u.txid).reverse(), u.vout, 0xfffffffd);
  tx.addOutput(bitcoin.address.toOutputScript(dest, net), 45_000n);
  tx.addOutput(bitcoin.address.toOutputScript(from, net), 53_000n);
  const own = bitcoin.address.toOutputScript(from, net);
  const scriptCode = bitcoin.payments.p2pkh({ hash: own.subarray(2), network: net }).output!;
  const session = (k: number) => {
    const stated = utxos.map((u, i) => (i === k ? u.value : 1n));
    const template = encodeBlob('btc-template', { tx: tx.toHex(), prevouts: stated.map((v) => ({ script: bytesToHex(own), value: String(v) })) });
    const digests = tx.ins.map((_, i) => tx.hashForWitnessV0(i, scriptCode, stated[i]!, bitcoin.Transaction.SIGHASH_ALL));
    return { template, digests };
  };
  const [s0, s1] = [session(0), session(1)];

  // What the two sessions would be worth to an attacker: input k signed from session k, together, make
  // a transaction the script interpreter accepts, paying 102 000 sat of fee.
  const signatures = [s0.digests[0]!, s1.digests[1]!].map((d) => secp256k1.sign(d, derivedSecret, { prehash: false }));
  const truth = { tx, prevouts: utxos.map((u) => ({ script: own, value: u.value })), digests: [s0.digests[0]!, s1.digests[1]!], fee: 102_000n, template: new Uint8Array() };
  const raw = finalizeP2wpkh(truth, signatures, derivedKey);

  // The service selects the inputs: no node signs an intent that names none.
  const selected = intent({ idempotencyKey: 'amounts-1' });
  await t.rejects(node.authorize(view(selected, s0.template, s0.digests)), refusal('intent_inputs_required'), 'session 0, inputs left to the service');
  await t.rejects(node.authorize(view(selected, s1.template, s1.digests)), refusal('intent_inputs_required'), 'session 1, inputs left to the service');
  // The customer names both inputs with their amounts: each understated amount is refused.
  const bound = intent({ idempotencyKey: 'amounts-2', inputs: named(utxos) });
  await t.rejects(node.authorize(view(bound, s0.template, s0.digests)), refusal('wrong_input_amounts'), 'session 0, amounts named');
  await t.rejects(node.authorize(view(bound, s1.template, s1.digests)), refusal('wrong_input_amounts'), 'session 1, amounts named');
  // Named inputs without amounts (a version 1 intent) are not enough for P2WPKH either.
  const unpriced = intent({ idempotencyKey: 'amounts-3', inputs: utxos.map((u) => ({ txid: hexToBytes(u.txid), vout: u.vout })) });
  await t.rejects(node.authorize(view(unpriced, s0.template, s0.digests)), refusal('input_amounts_required'));

  // The payoff the refusals prevent is real: this transaction is valid.
  t.match(await esplora.broadcast(raw), /^[0-9a-f]{64}$/, 'the combined signatures spend both inputs with a 102 000 sat fee');
});

t.test('a version 2 intent whose amounts differ from the outputs on chain is refused before signing', async (t) => {
  const utxos = [{ txid: 'cd'.repeat(32), vout: 0, value: 80_000n, status: { confirmed: true } }];
  const fields = intent({ idempotencyKey: 'amounts-4', inputs: named(utxos).map((i) => ({ ...i, amount: 90_000n })) });
  t.throws(() => buildSpend(fields, utxos, 5n), { code: 'wrong_input_amounts' }, 'the service does not build it');
  t.throws(() => buildSpend(intent({ idempotencyKey: 'amounts-5' }), utxos, 5n), { code: 'input_amounts_required' });
  // A template with the intent's (false) amounts: the node's own check passes only on the stated
  // amounts, and the signature is then invalid on chain; the service never asks for it.
  const node = await authorizer(t);
  const honest = buildSpend(intent({ idempotencyKey: 'amounts-4', inputs: named(utxos) }), utxos, 5n);
  await t.rejects(node.authorize(view(fields, honest.template, honest.digests)), refusal('wrong_input_amounts'));
});
