// Bitcoin spends built from an intent are accepted by the regtest double only when an independent
// script interpreter (bitcore-lib) validates every input: P2TR key path (BIP-340) and P2WPKH (ECDSA).
import t from 'tap';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { buildSpend, finalizeTaproot, SignatureCheckError, spendPsbt, SpendError, type UnsignedSpend } from '../../api/chains/bitcoin/build-spend.ts';
import { EsploraClient, EsploraError } from '../../api/chains/bitcoin/esplora-client.ts';
import type { BtcTransferIntent } from '../../core/intents/intent.ts';
import { EsploraDouble } from './esplora-double.ts';
import { tapTweak } from '../../node/protocols/frost/taproot.ts';
import { Fn } from '../../node/protocols/math/curve.ts';

bitcoin.initEccLib(ecc);
const net = bitcoin.networks.regtest;
const sk = sha256(new TextEncoder().encode('single key for the double'));
const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(3), network: net }).address!;

function intent(from: string, over: Partial<BtcTransferIntent> = {}): BtcTransferIntent {
  return { kind: 'btc.transfer', organization: 'org', walletId: 'w', network: 'regtest', from, outputs: [{ address: dest, amount: 70_000n }], maxFeeRate: 10n, maxFee: 10_000n, inputs: [], idempotencyKey: 'k', notAfter: 0n, ...over };
}

/** Key-path secret for a single key: even-y internal key, plus the TapTweak. */
/** A key-path spend finalized without the service's own signature check: what only the double judges. */
function unchecked(spend: UnsignedSpend, signatures: Uint8Array[]): string {
  const psbt = spendPsbt(spend, net);
  signatures.forEach((sig, i) => psbt.updateInput(i, { tapKeySig: sig }));
  psbt.finalizeAllInputs();
  return psbt.extractTransaction().toHex();
}

function tweakedSecret(secret: Uint8Array): Uint8Array {
  const P = secp256k1.Point.BASE.multiply(BigInt('0x' + Buffer.from(secret).toString('hex')));
  let d = BigInt('0x' + Buffer.from(secret).toString('hex'));
  if (P.toBytes(true)[0] === 0x03) d = Fn.neg(d);
  const t = tapTweak(P.toBytes(true).slice(1));
  return Fn.toBytes(Fn.add(d, t));
}

t.test('a P2TR key-path spend is verified and accepted; change returns to the sender', async (t) => {
  const double = new EsploraDouble();
  const client = new EsploraClient(await double.start());
  t.teardown(() => double.stop());
  const internal = secp256k1.getPublicKey(sk, true).slice(1);
  const from = bitcoin.payments.p2tr({ internalPubkey: internal, network: net }).address!;
  double.fund(from, 50_000n);
  double.fund(from, 40_000n);
  const utxos = await client.utxos(from);
  t.equal(utxos.length, 2);
  const spend = buildSpend(intent(from), utxos, BigInt((await client.feeEstimates())['6']!));
  t.equal(spend.tx.ins.length, 2, 'two inputs for 70000 sat');
  const sigs = spend.digests.map((d) => schnorr.sign(d, tweakedSecret(sk)));
  const txid = await client.broadcast(finalizeTaproot(spend, sigs));
  t.match(txid, /^[0-9a-f]{64}$/);
  t.same(await client.status(txid), { confirmed: false });
  double.mine();
  t.match(await client.status(txid), { confirmed: true });
  t.equal((await client.utxos(dest))[0]!.value, 70_000n, 'recipient paid exactly');
  const change = await client.utxos(from);
  t.equal(change.length, 1);
  t.equal(change[0]!.value, 90_000n - 70_000n - spend.fee, 'change returns to the sender');
  t.ok(spend.fee > 0n && spend.fee <= 10_000n);

  // The interpreter refuses a signature over anything else, and a double spend.
  double.fund(from, 100_000n);
  const again = buildSpend(intent(from), await client.utxos(from), 5n);
  const bad = again.digests.map(() => schnorr.sign(new Uint8Array(32).fill(9), tweakedSecret(sk)));
  t.throws(() => finalizeTaproot(again, bad), SignatureCheckError, 'the service does not finalize a signature that does not verify');
  await t.rejects(client.broadcast(unchecked(again, bad)), EsploraError);
  t.match(double.rejected.at(-1), /mandatory-script-verify-flag-failed/);
  await t.rejects(client.broadcast(finalizeTaproot(spend, sigs)), /missingorspent/);
});

t.test('an output key whose first byte is zero (1 key in 256) spends like any other', async (t) => {
  // A deterministic search for such a key: the double must not refuse valid spends from 1 wallet in 256.
  let secret = sk;
  let from = '';
  for (let i = 0; ; i++) {
    secret = sha256(new TextEncoder().encode(`zero-led output key ${i}`));
    const pay = bitcoin.payments.p2tr({ internalPubkey: secp256k1.getPublicKey(secret, true).slice(1), network: net });
    if (pay.pubkey![0] === 0) {
      from = pay.address!;
      break;
    }
  }
  const double = new EsploraDouble();
  const client = new EsploraClient(await double.start());
  t.teardown(() => double.stop());
  double.fund(from, 50_000n);
  double.fund(from, 40_000n);
  const spend = buildSpend(intent(from), await client.utxos(from), 5n);
  const bad = spend.digests.map(() => schnorr.sign(new Uint8Array(32).fill(9), tweakedSecret(secret)));
  await t.rejects(client.broadcast(unchecked(spend, bad)), EsploraError, 'a signature over something else is still refused under that key');
  const txid = await client.broadcast(finalizeTaproot(spend, spend.digests.map((d) => schnorr.sign(d, tweakedSecret(secret)))));
  t.match(txid, /^[0-9a-f]{64}$/, 'the valid spend is accepted');
  t.equal(double.rejected.length, 1);
});

t.test('a P2WPKH spend signed with ECDSA is verified and accepted', async (t) => {
  const double = new EsploraDouble();
  const client = new EsploraClient(await double.start());
  t.teardown(() => double.stop());
  const pub = secp256k1.getPublicKey(sk, true);
  const from = bitcoin.payments.p2wpkh({ pubkey: pub, network: net }).address!;
  double.fund(from, 100_000n);
  const utxos = await client.utxos(from);
  // P2WPKH: the intent names its inputs with their amounts (BIP-143 signs no other input's amount).
  const inputs = utxos.map((u) => ({ txid: Uint8Array.from(Buffer.from(u.txid, 'hex')), vout: u.vout, amount: u.value }));
  const spend = buildSpend(intent(from, { inputs }), utxos, 5n);
  const tx = spend.tx.clone();
  spend.digests.forEach((d, i) => {
    const der = secp256k1.sign(d, sk, { prehash: false, format: 'der' });
    tx.setWitness(i, [new Uint8Array([...der, bitcoin.Transaction.SIGHASH_ALL]), pub]);
  });
  t.match(await client.broadcast(tx.toHex()), /^[0-9a-f]{64}$/);
});

t.test('spends that cannot satisfy the intent are refused before signing', async (t) => {
  const from = bitcoin.payments.p2tr({ internalPubkey: secp256k1.getPublicKey(sk, true).slice(1), network: net }).address!;
  const utxo = { txid: 'aa'.repeat(32), vout: 0, value: 60_000n, status: { confirmed: true } };
  t.throws(() => buildSpend(intent(from), [utxo], 5n), SpendError, 'not enough funds');
  t.throws(() => buildSpend(intent(from, { maxFee: 10n }), [{ ...utxo, value: 200_000n }], 5n), { code: 'fee_ceiling' });
  t.throws(() => buildSpend(intent(from, { inputs: [{ txid: new Uint8Array(32).fill(1), vout: 0 }] }), [{ ...utxo, value: 200_000n }], 5n), { code: 'insufficient_funds' }, 'explicit input not owned');
});
