// The one Bitcoin sighash module (core/chains/bitcoin/sighash.ts), which the API builds spends with and
// every node recomputes digests with, against public vectors: BIP-341's key-path spending (its
// SIGHASH_DEFAULT input, the only hash type we sign P2TR with) and BIP-143's native P2WPKH example
// (SIGHASH_ALL); and the inputs it refuses.
import t from 'tap';
import { readFileSync } from 'node:fs';
import * as bitcoin from 'bitcoinjs-lib';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { bitcoinSighash, bitcoinSighashes, checkSpentOutputs, spendKind, type SpentOutput } from '../../../core/chains/bitcoin/sighash.ts';
import { outputKey } from '../../../core/keys/taproot.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';

const shared = new URL('../../../../shared/vectors/', import.meta.url);
const local = new URL('../../vectors/', import.meta.url);
const json = (dir: URL, file: string) => JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
const spentOf = (list: { scriptPubKey: string; amountSats: number }[]): SpentOutput[] => list.map((u) => ({ script: hexToBytes(u.scriptPubKey), value: BigInt(u.amountSats) }));

t.test('BIP-341 key-path spending: the SIGHASH_DEFAULT digest, its signature and output key', async (t) => {
  const v = json(shared, 'bip/bip341-wallet-test-vectors.json');
  let checked = 0;
  for (const c of v.keyPathSpending) {
    const tx = bitcoin.Transaction.fromHex(c.given.rawUnsignedTx);
    const spent = spentOf(c.given.utxosSpent);
    const signed = bitcoin.Transaction.fromHex(c.auxiliary.fullySignedTx);
    for (const i of c.inputSpending) {
      if (i.given.hashType !== 0) continue; // we sign P2TR with SIGHASH_DEFAULT only
      const n: number = i.given.txinIndex;
      const digest = bitcoinSighash(tx, spent, n, 'p2tr');
      t.equal(bytesToHex(digest), i.intermediary.sigHash, `input ${n} sighash`);
      const program = spent[n]!.script.subarray(2);
      const root = i.given.merkleRoot ? hexToBytes(i.given.merkleRoot) : undefined;
      t.equal(bytesToHex(outputKey('02' + i.intermediary.internalPubkey, root)), bytesToHex(program), `input ${n} output key is the spent program`);
      const witness = signed.ins[n]!.witness;
      t.equal(witness.length, 1, 'key-path witness');
      t.ok(schnorr.verify(witness[0]!, digest, program), `input ${n}: the vector's signature verifies over our digest`);
      checked++;
    }
  }
  t.ok(checked >= 1, 'at least one SIGHASH_DEFAULT input');
  // The same transaction spends P2PKH and P2WPKH outputs too: not every input is a key-path spend.
  const c = v.keyPathSpending[0];
  t.throws(() => bitcoinSighashes(bitcoin.Transaction.fromHex(c.given.rawUnsignedTx), spentOf(c.given.utxosSpent), 'p2tr'), { code: 'bad_template', message: /input \d+ does not spend a P2TR output/ });
});

t.test('BIP-143 native P2WPKH: the SIGHASH_ALL digest and its signature', async (t) => {
  const v = json(local, 'bip143-native-p2wpkh.json');
  const tx = bitcoin.Transaction.fromHex(v.unsignedTx);
  const spent = spentOf(v.spent);
  const digest = bitcoinSighash(tx, spent, v.txinIndex, 'p2wpkh');
  t.equal(bytesToHex(digest), v.sigHash);
  const pub = hexToBytes(v.publicKey);
  t.equal(bytesToHex(bitcoin.crypto.hash160(pub)), bytesToHex(spent[v.txinIndex]!.script.subarray(2)), 'the key hashes to the spent program');
  t.equal(v.scriptCode, '1976a914' + bytesToHex(spent[v.txinIndex]!.script.subarray(2)) + '88ac', 'the script code is P2PKH of the key hash');
  t.ok(secp256k1.verify(hexToBytes(v.signature), digest, pub, { prehash: false, format: 'der' }), 'the vector\'s signature verifies over our digest');
  t.throws(() => bitcoinSighash(tx, spent, 0, 'p2wpkh'), { code: 'bad_template', message: /input 0 does not spend a P2WPKH output/ }, 'the P2PK input is not ours to sign');
  // BIP-143 commits to the input's own amount: another amount, another digest.
  const other = spent.map((p, i) => (i === v.txinIndex ? { ...p, value: p.value - 1n } : p));
  t.not(bytesToHex(bitcoinSighash(tx, other, v.txinIndex, 'p2wpkh')), v.sigHash);
});

t.test('a wallet spend: one digest per input, each the single-input answer', async (t) => {
  const script = Uint8Array.of(0x51, 0x20, ...new Uint8Array(32).fill(7));
  const tx = new bitcoin.Transaction();
  tx.version = 2;
  tx.addInput(new Uint8Array(32).fill(1), 0, 0xfffffffd);
  tx.addInput(new Uint8Array(32).fill(2), 3, 0xfffffffd);
  tx.addOutput(script, 1000n);
  const spent = [{ script, value: 5000n }, { script, value: 6000n }];
  const all = bitcoinSighashes(tx, spent, 'p2tr');
  t.equal(all.length, 2);
  t.same(all.map(bytesToHex), [0, 1].map((i) => bytesToHex(bitcoinSighash(tx, spent, i, 'p2tr'))));
  t.not(bytesToHex(all[0]!), bytesToHex(all[1]!));
  // BIP-341 commits to every input's amount.
  t.not(bytesToHex(bitcoinSighashes(tx, [spent[0]!, { script, value: 6001n }], 'p2tr')[0]!), bytesToHex(all[0]!));
});

t.test('spent outputs and kinds are validated', async (t) => {
  const p2tr = Uint8Array.of(0x51, 0x20, ...new Uint8Array(32).fill(7));
  const p2wpkh = Uint8Array.of(0x00, 0x14, ...new Uint8Array(20).fill(8));
  t.equal(spendKind(p2tr), 'p2tr');
  t.equal(spendKind(p2wpkh), 'p2wpkh');
  t.equal(spendKind(Uint8Array.of(0x76, 0xa9, 0x14, ...new Uint8Array(20), 0x88, 0xac)), undefined, 'P2PKH');
  t.equal(spendKind(Uint8Array.of(0x00, 0x20, ...new Uint8Array(32))), undefined, 'P2WSH');
  const tx = new bitcoin.Transaction();
  t.throws(() => checkSpentOutputs(tx, []), { code: 'bad_template', message: 'one spent output per input' }, 'no inputs');
  tx.addInput(new Uint8Array(32).fill(1), 0);
  tx.addOutput(p2tr, 1000n);
  t.throws(() => bitcoinSighashes(tx, [], 'p2tr'), { code: 'bad_template', message: 'one spent output per input' });
  t.throws(() => bitcoinSighashes(tx, [{ script: p2tr, value: 1n }, { script: p2tr, value: 1n }], 'p2tr'), { message: 'one spent output per input' });
  for (const value of [0n, -1n, 21_000_000n * 100_000_000n + 1n]) {
    t.throws(() => bitcoinSighashes(tx, [{ script: p2tr, value }], 'p2tr'), { code: 'bad_template', message: /at most 21 million BTC/ }, `amount ${value}`);
  }
  t.ok(bitcoinSighashes(tx, [{ script: p2tr, value: 21_000_000n * 100_000_000n }], 'p2tr')[0]!.length === 32, '21 million BTC is allowed');
  t.throws(() => bitcoinSighashes(tx, [{ script: p2tr, value: 1n }], 'p2wpkh'), { message: 'input 0 does not spend a P2WPKH output' });
  t.throws(() => bitcoinSighashes(tx, [{ script: p2wpkh, value: 1n }], 'p2tr'), { message: 'input 0 does not spend a P2TR output' });
  t.throws(() => bitcoinSighash(tx, [{ script: p2tr, value: 1n }], 1, 'p2tr'), { message: 'the transaction has no input 1' });
  t.throws(() => checkSpentOutputs(tx, []), CustodyError, 'a CustodyError');
});
