// The gasless relayer's side of an ERC-2771 forward request: the transaction that calls the forwarder's
// `execute`, paid by the relayer account. Its worst cost is known before it is signed (gas limit × max fee per
// gas, EIP-1559), so a budget can reserve it; it is signed locally, so its hash is known (and recorded) before
// it is broadcast, and the same signed bytes can be broadcast again after a restart without a second spend;
// its actual cost is the receipt's gas used × effective gas price.
import { keccak256, parseEventLogs, type Address, type Hex, type PublicClient, type TransactionReceipt, type TransactionSerializableEIP1559 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { forwarderAbi } from './forward-request.ts';

/** The relayer account: signs its own transactions; never a customer's key. */
export interface RelayerAccount {
  readonly address: Address;
  signTransaction(tx: TransactionSerializableEIP1559): Promise<Hex>;
}

export function localRelayer(key: Hex): RelayerAccount {
  const a = privateKeyToAccount(key);
  return { address: a.address, signTransaction: (tx) => a.signTransaction(tx) };
}

/** The gas limit the relayer allows over the estimate: the state may change before the transaction is mined. */
export const RELAY_GAS_MARGIN_PERCENT = 20n;

export interface RelayFees { gasLimit: bigint; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }

/** The most the transaction can cost the relayer: every unit of its gas limit at the max fee. */
export function worstCaseCost(f: RelayFees): bigint {
  return f.gasLimit * f.maxFeePerGas;
}

/** Gas limit (the estimate of `execute` from the relayer, plus the margin) and EIP-1559 fees, read now. */
export async function relayFees(client: PublicClient, relayer: Address, forwarder: Address, calldata: Hex): Promise<RelayFees> {
  const estimate = await client.estimateGas({ account: relayer, to: forwarder, data: calldata, value: 0n });
  const fees = await client.estimateFeesPerGas();
  return { gasLimit: estimate + (estimate * RELAY_GAS_MARGIN_PERCENT + 99n) / 100n, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
}

/** The signed `execute` transaction and its hash, before anything is broadcast. */
export async function signRelay(relayer: RelayerAccount, chainId: number, forwarder: Address, calldata: Hex, fees: RelayFees, nonce: number): Promise<{ raw: Hex; hash: Hex }> {
  const raw = await relayer.signTransaction({
    type: 'eip1559', chainId, nonce, to: forwarder, data: calldata, value: 0n, gas: fees.gasLimit, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  });
  return { raw, hash: keccak256(raw) };
}

/** What the relayer actually paid. */
export function receiptCost(receipt: TransactionReceipt): { gasUsed: bigint; effectiveGasPrice: bigint; cost: bigint } {
  return { gasUsed: receipt.gasUsed, effectiveGasPrice: receipt.effectiveGasPrice, cost: receipt.gasUsed * receipt.effectiveGasPrice };
}

/** Whether the receipt holds the forwarder's `ExecutedForwardRequest(signer = from, nonce, success = true)`. */
export function executedForward(receipt: TransactionReceipt, forwarder: Address, from: Address, nonce: bigint): boolean {
  const logs = parseEventLogs({ abi: forwarderAbi(), logs: receipt.logs.filter((l) => l.address.toLowerCase() === forwarder.toLowerCase()), eventName: 'ExecutedForwardRequest' });
  return logs.some((l) => {
    const a = l.args as { signer: Address; nonce: bigint; success: boolean };
    return a.signer.toLowerCase() === from.toLowerCase() && a.nonce === nonce && a.success;
  });
}
