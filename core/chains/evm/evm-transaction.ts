// The EIP-1559 transaction an EVM intent describes, and the digest a signer signs. Nodes call this with
// the intent they verified and the service's fee and nonce choices, so the digest they sign is one they
// computed, never one they were handed. The chain id is a bigint end to end (the intent carries a u64):
// viem's serializer takes a number, so the EIP-2718 envelope is assembled here with viem's RLP encoder.
import { concatHex, encodeFunctionData, erc20Abi, keccak256, numberToHex, toRlp, toHex as viemHex, type Hex } from 'viem';
import type { EvmTransferIntent } from '../../intents/intent.ts';
import { CustodyError } from '../../errors/custody-error.ts';

/** What the service chooses and the intent does not fix (gas and fees), with the nonce the intent names. */
export interface EvmTemplate {
  nonce: number;
  gasLimit: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export class EvmTemplateError extends CustodyError {
  constructor(message: string) {
    super('bad_template', message);
    this.name = 'EvmTemplateError';
  }
}

/** An unsigned EIP-1559 transaction (type 2), every integer a bigint but the nonce. */
export interface EvmUnsignedTransaction {
  type: 'eip1559';
  chainId: bigint;
  nonce: number;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  to: Hex;
  value: bigint;
  data?: Hex | undefined;
}

export function evmTransaction(intent: EvmTransferIntent, t: EvmTemplate): EvmUnsignedTransaction {
  if (!Number.isSafeInteger(t.nonce) || t.nonce < 0) throw new EvmTemplateError('nonce must be a non-negative integer');
  if (t.gasLimit <= 0n || t.maxFeePerGas <= 0n || t.maxPriorityFeePerGas < 0n) throw new EvmTemplateError('gas values must be positive');
  if (t.maxPriorityFeePerGas > t.maxFeePerGas) throw new EvmTemplateError('priority fee above max fee per gas');
  if (t.gasLimit * t.maxFeePerGas > intent.maxFee) {
    throw new EvmTemplateError(`fee ceiling exceeded: ${t.gasLimit} gas x ${t.maxFeePerGas} wei > ${intent.maxFee} wei`);
  }
  const base = {
    type: 'eip1559' as const,
    chainId: intent.chainId,
    nonce: t.nonce,
    gas: t.gasLimit,
    maxFeePerGas: t.maxFeePerGas,
    maxPriorityFeePerGas: t.maxPriorityFeePerGas,
  };
  if (intent.asset.kind === 'erc20') {
    return {
      ...base,
      to: viemHex(intent.asset.contract),
      value: 0n,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [viemHex(intent.to), intent.amount] }),
    };
  }
  return { ...base, to: viemHex(intent.to), value: intent.amount, data: intent.data.length ? viemHex(intent.data) : undefined };
}

// RLP integers are minimal big-endian with no leading zeros; zero is the empty string.
const rlpInt = (n: bigint | number): Hex => (BigInt(n) === 0n ? '0x' : numberToHex(BigInt(n)));

/** The EIP-1559 payload fields, in order: chain_id, nonce, max_priority_fee, max_fee, gas, to, value, data, access_list. */
function fields(tx: EvmUnsignedTransaction): (Hex | Hex[])[] {
  return [rlpInt(tx.chainId), rlpInt(tx.nonce), rlpInt(tx.maxPriorityFeePerGas), rlpInt(tx.maxFeePerGas), rlpInt(tx.gas), tx.to, rlpInt(tx.value), tx.data ?? '0x', []];
}

/** The unsigned serialized transaction: 0x02 ‖ rlp(fields). */
export function evmUnsignedSerialized(tx: EvmUnsignedTransaction): Hex {
  return concatHex(['0x02', toRlp(fields(tx))]);
}

/** keccak256 of the unsigned serialized transaction: what the ECDSA signature signs. */
export function evmSigningDigest(tx: EvmUnsignedTransaction): Uint8Array {
  return keccak256(evmUnsignedSerialized(tx), 'bytes');
}

/** The broadcastable transaction once the signature is known: 0x02 ‖ rlp(fields ‖ y_parity, r, s). */
export function evmSignedTransaction(tx: EvmUnsignedTransaction, sig: { r: bigint; s: bigint; recovery: number }): Hex {
  if (sig.recovery !== 0 && sig.recovery !== 1) throw new EvmTemplateError('the recovery id of a type-2 signature is 0 or 1');
  return concatHex(['0x02', toRlp([...fields(tx), rlpInt(sig.recovery), rlpInt(sig.r), rlpInt(sig.s)])]);
}
