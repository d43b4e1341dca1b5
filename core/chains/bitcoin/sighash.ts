// The per-input digests a Bitcoin spend from a wallet's own address is signed over: BIP-341 key path
// (SIGHASH_DEFAULT, signed with BIP-340 under the taproot output key) or BIP-143 P2WPKH (SIGHASH_ALL,
// signed with ECDSA). One function for both sides: the API builds the spend with it
// (api/chains/bitcoin/build-spend.ts) and every node recomputes each digest with it from the intent
// and the template (node/runtime/authorization/sign-authorizer.ts), never trusting the API's.
import * as bitcoin from 'bitcoinjs-lib';
import { CustodyError } from '../../errors/custody-error.ts';

/** What a wallet address spends: a P2TR key-path output or a P2WPKH output. */
export type BitcoinSpendKind = 'p2tr' | 'p2wpkh';

/** The output an input spends: its script and amount (satoshis). */
export interface SpentOutput {
  script: Uint8Array;
  value: bigint;
}

const MAX_MONEY = 21_000_000n * 100_000_000n;

const bad = (message: string) => new CustodyError('bad_template', message);

/** The kind of an output script: P2TR (OP_1 <32 bytes>), P2WPKH (OP_0 <20 bytes>), or neither. */
export function spendKind(script: Uint8Array): BitcoinSpendKind | undefined {
  if (script.length === 34 && script[0] === 0x51 && script[1] === 0x20) return 'p2tr';
  if (script.length === 22 && script[0] === 0x00 && script[1] === 0x14) return 'p2wpkh';
  return undefined;
}

/** Throws unless `spent` names one output per input of `tx` (at least one), each holding 1 sat to 21 million BTC. */
export function checkSpentOutputs(tx: bitcoin.Transaction, spent: readonly SpentOutput[]): void {
  if (tx.ins.length === 0 || spent.length !== tx.ins.length) throw bad('one spent output per input');
  if (spent.some((p) => typeof p.value !== 'bigint' || p.value <= 0n || p.value > MAX_MONEY)) throw bad('spent amounts are positive and at most 21 million BTC');
}

/** BIP-143: the script code of a P2WPKH input is the P2PKH script of its key hash. */
const p2wpkhScriptCode = (script: Uint8Array) => Uint8Array.of(0x76, 0xa9, 0x14, ...script.subarray(2), 0x88, 0xac);

function digest(tx: bitcoin.Transaction, spent: readonly SpentOutput[], index: number, kind: BitcoinSpendKind): Uint8Array {
  const own = spent[index]!;
  if (spendKind(own.script) !== kind) throw bad(`input ${index} does not spend a ${kind === 'p2tr' ? 'P2TR' : 'P2WPKH'} output`);
  if (kind === 'p2tr') {
    // BIP-341 commits to every spent output's script and amount, whatever their kind.
    return tx.hashForWitnessV1(index, spent.map((p) => p.script), spent.map((p) => p.value), bitcoin.Transaction.SIGHASH_DEFAULT);
  }
  // BIP-143 commits to this input's amount only.
  return tx.hashForWitnessV0(index, p2wpkhScriptCode(own.script), own.value, bitcoin.Transaction.SIGHASH_ALL);
}

/**
 * The digest of input `index` of `tx`, which spends `spent[index]`, an output of `kind`. `spent` names
 * the output every input spends, in input order.
 */
export function bitcoinSighash(tx: bitcoin.Transaction, spent: readonly SpentOutput[], index: number, kind: BitcoinSpendKind): Uint8Array {
  checkSpentOutputs(tx, spent);
  if (!Number.isSafeInteger(index) || index < 0 || index >= tx.ins.length) throw bad(`the transaction has no input ${index}`);
  return digest(tx, spent, index, kind);
}

/** The digest of every input of `tx`, all of which spend outputs of `kind`; `spent` in input order. */
export function bitcoinSighashes(tx: bitcoin.Transaction, spent: readonly SpentOutput[], kind: BitcoinSpendKind): Uint8Array[] {
  checkSpentOutputs(tx, spent);
  return tx.ins.map((_, i) => digest(tx, spent, i, kind));
}
