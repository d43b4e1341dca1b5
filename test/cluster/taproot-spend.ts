// A P2TR spend of a (fake) 100000-sat output of a vault's wallet at PATH (named in the intent), for cluster signing tests: the
// customer's intent signed with its API key, the template the nodes check it against, and the sighash.
import { randomBytes } from 'node:crypto';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { bytesToHex } from '@noble/hashes/utils.js';
import { encodeIntent, signIntent } from '../../core/intents/intent.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { pointHex } from '../../node/protocols/math/curve.ts';

bitcoin.initEccLib(ecc);

/** The wallet's derivation path below the vault key. */
export const PATH = [86, 1, 0, 0, 0];

export function taprootSpend(org: string, apiSecret: Uint8Array, groupKey: string, chainCode: string, amount = 60_000n, prev: Uint8Array = new Uint8Array(randomBytes(32))) {
  const q = outputKey(pointHex(derive(groupKey, chainCode, PATH).publicKey));
  const own = bitcoin.payments.p2tr({ pubkey: q, network: bitcoin.networks.regtest });
  const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(7), network: bitcoin.networks.regtest });
  // The spent output's txid (`prev`): internal byte order in the transaction, display order in the intent.
  const intent = encodeIntent({
    kind: 'btc.transfer', organization: org, walletId: 'wal_btc', network: 'regtest', from: own.address!, outputs: [{ address: dest.address!, amount }],
    maxFeeRate: 20n, maxFee: 5_000n, inputs: [{ txid: prev.slice().reverse(), vout: 0 }], idempotencyKey: 'btc-' + bytesToHex(randomBytes(4)), notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  });
  const tx = new bitcoin.Transaction();
  tx.version = 2;
  tx.addInput(prev, 0);
  tx.addOutput(dest.output!, amount);
  tx.addOutput(own.output!, 100_000n - amount - 1_000n);
  const prevouts = [{ script: own.output!, value: 100_000n }];
  const digest = tx.hashForWitnessV1(0, prevouts.map((p) => p.script), prevouts.map((p) => p.value), bitcoin.Transaction.SIGHASH_DEFAULT);
  const template = encodeBlob('btc-template', { tx: tx.toHex(), prevouts: prevouts.map((p) => ({ script: bytesToHex(p.script), value: String(p.value) })) });
  return { intent, signature: signIntent(intent, apiSecret), template, digest, q, prev };
}
