// The unsigned Bitcoin transaction a btc.transfer intent describes, spending UTXOs of the wallet's own
// address (P2TR key path or P2WPKH), change back to it, fee within both ceilings; the per-input
// digests the signers sign; and the signed transaction once the signatures are back.
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { equalBytes } from '@noble/curves/utils.js';
import type { BtcTransferIntent } from '../../../core/intents/intent.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { Utxo } from './esplora-client.ts';
import { BITCOIN_NETWORK_PARAMS } from '../../../core/chains/bitcoin/network-params.ts';
import { bitcoinSighashes, spendKind, type SpentOutput } from '../../../core/chains/bitcoin/sighash.ts';

bitcoin.initEccLib(ecc);

export class SpendError extends CustodyError {
  constructor(override readonly code: 'insufficient_funds' | 'fee_ceiling' | 'bad_intent' | 'input_amounts_required' | 'wrong_input_amounts', message: string) {
    super(code, message);
    this.name = 'SpendError';
  }
}

export interface UnsignedSpend {
  tx: bitcoin.Transaction;
  prevouts: SpentOutput[];
  digests: Uint8Array[];
  fee: bigint;
  /** Versioned template the nodes check against the intent (docs/sessions.md). */
  template: Uint8Array;
}

const DUST = 330n;

/** Virtual size of the signed transaction: key-path witness 1+1+64 bytes, P2WPKH 1+1+72+1+33. */
function signedVsize(nIn: number, outputs: Uint8Array[], kind: 'p2tr' | 'p2wpkh'): bigint {
  const base = 4 + 1 + nIn * (32 + 4 + 1 + 4) + 1 + outputs.reduce((n, s) => n + 8 + 1 + s.length, 0) + 4;
  const witness = 2 + nIn * (kind === 'p2tr' ? 66 : 108);
  return BigInt(Math.ceil((base * 4 + witness) / 4));
}

export interface BuildSpendOptions {
  /**
   * Spend exactly `utxos`, in this order, whatever the intent names: what a template built by someone
   * other than this service can hold (the node tests build such templates to show they are refused).
   */
  exactInputs?: boolean;
}

export function buildSpend(intent: BtcTransferIntent, utxos: Utxo[], feeRate: bigint, opts: BuildSpendOptions = {}): UnsignedSpend {
  const network = BITCOIN_NETWORK_PARAMS[intent.network];
  const own = bitcoin.address.toOutputScript(intent.from, network);
  const kind = spendKind(own);
  if (!kind) throw new SpendError('bad_intent', 'the sending address is neither P2TR nor P2WPKH');
  // The nodes sign a P2WPKH input only for an amount the customer named (BIP-143 commits to nothing else).
  const namedAmounts = intent.inputs.length > 0 && intent.inputs.every((i) => i.amount !== undefined);
  if (kind === 'p2wpkh' && !namedAmounts) throw new SpendError('input_amounts_required', 'a P2WPKH spend needs an intent naming its inputs with their amounts');
  const rate = feeRate > intent.maxFeeRate ? intent.maxFeeRate : feeRate;
  const outs = intent.outputs.map((o) => ({ script: bitcoin.address.toOutputScript(o.address, network), value: o.amount }));
  const want = outs.reduce((a, o) => a + o.value, 0n);
  let pool: Utxo[];
  const fixed = intent.inputs.length > 0 || opts.exactInputs === true;
  if (opts.exactInputs) {
    pool = utxos;
    if (!pool.length) throw new SpendError('insufficient_funds', 'no inputs to spend');
  } else if (intent.inputs.length) {
    pool = intent.inputs.map((i) => {
      const u = utxos.find((x) => x.txid === bytesToHex(i.txid) && x.vout === i.vout);
      if (!u) throw new SpendError('insufficient_funds', `input ${bytesToHex(i.txid)}:${i.vout} is not an unspent output of ${intent.from}`);
      if (i.amount !== undefined && u.value !== i.amount) throw new SpendError('wrong_input_amounts', `input ${u.txid}:${u.vout} holds ${u.value} sat, the intent says ${i.amount}`);
      return u;
    });
  } else {
    // Largest first: few inputs, small fee; confirmed before unconfirmed.
    pool = [...utxos].sort((a, b) => Number(b.status.confirmed) - Number(a.status.confirmed) || (b.value > a.value ? 1 : b.value < a.value ? -1 : 0));
  }
  const chosen: Utxo[] = [];
  let have = 0n;
  for (const u of pool) {
    chosen.push(u);
    have += u.value;
    const feeNoChange = rate * signedVsize(chosen.length, outs.map((o) => o.script), kind);
    if (have >= want + feeNoChange && !fixed) break;
  }
  const withChange = [...outs.map((o) => o.script), own];
  let fee = rate * signedVsize(chosen.length, withChange, kind);
  let change = have - want - fee;
  if (change < DUST) {
    fee = have - want;
    change = 0n;
  }
  if (have < want + (change === 0n ? rate * signedVsize(chosen.length, outs.map((o) => o.script), kind) : fee)) {
    throw new SpendError('insufficient_funds', `${intent.from} holds ${have} sat; ${want} plus fees are needed`);
  }
  if (fee > intent.maxFee) throw new SpendError('fee_ceiling', `the fee ${fee} sat exceeds the intent's ${intent.maxFee}`);
  const tx = new bitcoin.Transaction();
  tx.version = 2;
  for (const u of chosen) tx.addInput(hexToBytes(u.txid).reverse(), u.vout, 0xfffffffd);
  for (const o of outs) tx.addOutput(o.script, o.value);
  if (change > 0n) tx.addOutput(own, change);
  const prevouts = chosen.map((u) => ({ script: own, value: u.value }));
  // BIP-341 key path or BIP-143 P2WPKH, the function every node recomputes them with.
  const digests = bitcoinSighashes(tx, prevouts, kind);
  const template = encodeBlob('btc-template', { tx: tx.toHex(), prevouts: prevouts.map((p) => ({ script: bytesToHex(p.script), value: String(p.value) })) });
  return { tx, prevouts, digests, fee, template };
}

/** The unsigned spend as a PSBT (BIP-174): every input with the output it spends. */
export function spendPsbt(spend: UnsignedSpend, network: bitcoin.Network): bitcoin.Psbt {
  const psbt = new bitcoin.Psbt({ network });
  psbt.setVersion(spend.tx.version);
  psbt.setLocktime(spend.tx.locktime);
  spend.tx.ins.forEach((i, n) => psbt.addInput({ hash: i.hash, index: i.index, sequence: i.sequence, witnessUtxo: { script: spend.prevouts[n]!.script, value: spend.prevouts[n]!.value } }));
  for (const o of spend.tx.outs) psbt.addOutput({ script: o.script, value: o.value });
  return psbt;
}

function finalized(psbt: bitcoin.Psbt, spend: UnsignedSpend): string {
  psbt.finalizeAllInputs();
  const tx = psbt.extractTransaction();
  // The PSBT must describe exactly the transaction the nodes signed.
  if (tx.getId() !== spend.tx.getId()) throw new SpendError('bad_intent', 'the finalized transaction differs from the signed one');
  return tx.toHex();
}

const checkCount = (spend: UnsignedSpend, signatures: Uint8Array[]) => {
  if (signatures.length !== spend.tx.ins.length) throw new SpendError('bad_intent', `${spend.tx.ins.length} signatures are needed, got ${signatures.length}`);
};

/**
 * A signature from the cluster that does not verify for its input under the key the input pays to.
 * Nothing is broadcast; the transaction worker retries with a new signing session.
 */
export class SignatureCheckError extends Error {
  constructor(readonly input: number, message: string) {
    super(message);
    this.name = 'SignatureCheckError';
  }
}

/** Finalizes key-path inputs (64-byte BIP-340 signatures, SIGHASH_DEFAULT) through the PSBT; raw hex. */
export function finalizeTaproot(spend: UnsignedSpend, signatures: Uint8Array[], network: bitcoin.Network = bitcoin.networks.regtest): string {
  checkCount(spend, signatures);
  signatures.forEach((sig, i) => {
    // The key path spends under the 32-byte program of the output: OP_1 <x-only output key>.
    const key = spend.prevouts[i]!.script.subarray(2);
    if (sig.length !== 64 || !schnorr.verify(sig, spend.digests[i]!, key)) throw new SignatureCheckError(i, `the signature for input ${i} does not verify under the output key`);
  });
  const psbt = spendPsbt(spend, network);
  signatures.forEach((sig, i) => psbt.updateInput(i, { tapKeySig: sig }));
  return finalized(psbt, spend);
}

/**
 * Finalizes P2WPKH inputs through the PSBT (BIP-141 witness: DER ECDSA signature with SIGHASH_ALL,
 * then the 33-byte compressed key); raw hex. `signatures` are 64-byte r‖s, one per input, as the
 * cluster returns them; a high-s signature is normalized, since relay policy refuses it.
 */
export function finalizeP2wpkh(spend: UnsignedSpend, signatures: Uint8Array[], publicKey: Uint8Array, network: bitcoin.Network = bitcoin.networks.regtest): string {
  checkCount(spend, signatures);
  if (publicKey.length !== 33) throw new SpendError('bad_intent', 'a P2WPKH witness carries the 33-byte compressed key');
  const psbt = spendPsbt(spend, network);
  signatures.forEach((compact, i) => {
    // The key must be the one the output pays to (OP_0 <HASH160(key)>), and the signature valid under it.
    if (!equalBytes(spend.prevouts[i]!.script.subarray(2), bitcoin.crypto.hash160(publicKey))) throw new SignatureCheckError(i, `the key returned for input ${i} is not the one its output pays to`);
    if (compact.length !== 64 || !secp256k1.verify(compact, spend.digests[i]!, publicKey, { prehash: false, lowS: false })) throw new SignatureCheckError(i, `the signature for input ${i} does not verify under the wallet key`);
    let sig = secp256k1.Signature.fromBytes(compact, 'compact');
    if (sig.hasHighS()) sig = new secp256k1.Signature(sig.r, secp256k1.Point.Fn.neg(sig.s));
    psbt.updateInput(i, { partialSig: [{ pubkey: publicKey, signature: bitcoin.script.signature.encode(sig.toBytes('compact'), bitcoin.Transaction.SIGHASH_ALL) }] });
  });
  return finalized(psbt, spend);
}
