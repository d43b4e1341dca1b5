// Whether a Bitcoin transaction found on chain is a btc.transfer intent's own (docs/transactions.md
// "Adopted transactions"): another signing of the same intent (a retry with another fee, or a template
// the nodes signed that a coordinator broadcast itself). It is when it spends exactly the inputs the
// intent names, pays every output the intent names (address and amount), sends anything else only back
// to the sending address (change), and its fee is within the intent's ceiling. Read from the
// transaction's own bytes, never from a backend's summary of it.
import * as bitcoin from 'bitcoinjs-lib';
import { bytesToHex } from '@noble/hashes/utils.js';
import { equalBytes } from '@noble/curves/utils.js';
import type { BtcTransferIntent } from '../../../core/intents/intent.ts';
import { BITCOIN_NETWORK_PARAMS } from '../../../core/chains/bitcoin/network-params.ts';

/** `txid:vout` (display-order txid) of every input of `tx`, in input order. */
export function spentOutpoints(tx: bitcoin.Transaction): string[] {
  return tx.ins.map((i) => `${bytesToHex(Uint8Array.from(i.hash).reverse())}:${i.index}`);
}

/** `txid:vout` of every input the intent names, in its order. */
export function intentOutpoints(intent: BtcTransferIntent): string[] {
  return intent.inputs.map((i) => `${bytesToHex(i.txid)}:${i.vout}`);
}

/**
 * Why `tx` is not the intent's own transaction, or undefined when it is. `inputValues` holds the amount
 * of each input of `tx`, in input order (the fee is what they hold beyond the outputs).
 */
export function notIntentSpend(intent: BtcTransferIntent, tx: bitcoin.Transaction, inputValues: bigint[]): string | undefined {
  const named = intentOutpoints(intent);
  const spent = spentOutpoints(tx);
  if (!named.length) return 'the intent names no inputs';
  if (spent.length !== named.length || new Set(spent).size !== spent.length || !spent.every((o) => named.includes(o))) {
    return `it spends ${spent.join(', ')}, the intent names ${named.join(', ')}`;
  }
  const network = BITCOIN_NETWORK_PARAMS[intent.network];
  const own = bitcoin.address.toOutputScript(intent.from, network);
  const unmatched = tx.outs.map((o) => ({ script: o.script, value: o.value }));
  for (const want of intent.outputs) {
    const script = bitcoin.address.toOutputScript(want.address, network);
    const at = unmatched.findIndex((o) => o.value === want.amount && equalBytes(o.script, script));
    if (at < 0) return `it does not pay ${want.amount} sat to ${want.address}`;
    unmatched.splice(at, 1);
  }
  const stranger = unmatched.find((o) => !equalBytes(o.script, own));
  if (stranger) return `it pays ${stranger.value} sat to an output the intent does not name`;
  if (inputValues.length !== tx.ins.length) return 'the amounts of its inputs are unknown';
  const fee = spendFee(tx, inputValues);
  if (fee < 0n) return 'its outputs exceed its inputs';
  if (fee > intent.maxFee) return `its fee ${fee} sat exceeds the intent's ${intent.maxFee}`;
  return undefined;
}

/** The fee of `tx`: what its inputs (amounts in input order) hold beyond its outputs. */
export function spendFee(tx: bitcoin.Transaction, inputValues: bigint[]): bigint {
  return inputValues.reduce((a, v) => a + v, 0n) - tx.outs.reduce((a, o) => a + o.value, 0n);
}
