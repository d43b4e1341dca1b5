// The EIP-1559 transaction an EVM intent describes, and the digest a signer signs. Nodes call this with
// the intent they verified and the service's fee and nonce choices, so the digest they sign is one they
// computed, never one they were handed.
import { encodeFunctionData, erc20Abi, keccak256, serializeTransaction, toHex as viemHex, type Hex, type TransactionSerializableEIP1559 } from 'viem';
import type { EvmTransferIntent } from '../../intents/intent.ts';

/** What the service chooses and the intent does not fix. */
export interface EvmTemplate {
  nonce: number;
  gasLimit: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export class EvmTemplateError extends Error {
  readonly code = 'template_mismatch';
  constructor(message: string) {
    super(message);
    this.name = 'EvmTemplateError';
  }
}

export function evmTransaction(intent: EvmTransferIntent, t: EvmTemplate): TransactionSerializableEIP1559 {
  if (!Number.isSafeInteger(t.nonce) || t.nonce < 0) throw new EvmTemplateError('nonce must be a non-negative integer');
  if (t.gasLimit <= 0n || t.maxFeePerGas <= 0n || t.maxPriorityFeePerGas < 0n) throw new EvmTemplateError('gas values must be positive');
  if (t.maxPriorityFeePerGas > t.maxFeePerGas) throw new EvmTemplateError('priority fee above max fee per gas');
  if (t.gasLimit * t.maxFeePerGas > intent.maxFee) {
    throw new EvmTemplateError(`fee ceiling exceeded: ${t.gasLimit} gas x ${t.maxFeePerGas} wei > ${intent.maxFee} wei`);
  }
  const base = {
    type: 'eip1559' as const,
    chainId: Number(intent.chainId),
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

/** keccak256 of the unsigned serialized transaction: what the ECDSA signature signs. */
export function evmSigningDigest(tx: TransactionSerializableEIP1559): Uint8Array {
  return keccak256(serializeTransaction(tx), 'bytes');
}

/** The broadcastable transaction once the signature is known. */
export function evmSignedTransaction(tx: TransactionSerializableEIP1559, sig: { r: bigint; s: bigint; recovery: number }): Hex {
  return serializeTransaction(tx, { r: viemHex(sig.r, { size: 32 }), s: viemHex(sig.s, { size: 32 }), yParity: sig.recovery });
}
