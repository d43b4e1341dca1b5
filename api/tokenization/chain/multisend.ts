// MultiSend batches (Safe 1.4.1 libraries/MultiSend.sol): several calls as one Safe transaction, the Safe
// DELEGATECALLing MultiSendCallOnly (which refuses nested delegate calls) with `multiSend(bytes)`, each call
// packed as operation (uint8) ‖ to (address) ‖ value (uint256) ‖ data length (uint256) ‖ data.
import { decodeFunctionData, encodeFunctionData, encodePacked, hexToBigInt, hexToNumber, size, slice, type Address, type Hex } from 'viem';
import { MULTI_SEND_ABI } from './safe-abi.ts';

export interface BatchCall { to: Address; data: Hex; value?: bigint }

/** The `multiSend(bytes)` calldata of `calls` (all plain calls). */
export function encodeMultiSend(calls: readonly BatchCall[]): Hex {
  if (!calls.length) throw new RangeError('an empty batch');
  const packed = calls.map((c) => encodePacked(['uint8', 'address', 'uint256', 'uint256', 'bytes'], [0, c.to, c.value ?? 0n, BigInt(size(c.data)), c.data]));
  return encodeFunctionData({ abi: MULTI_SEND_ABI, functionName: 'multiSend', args: [`0x${packed.map((p) => p.slice(2)).join('')}`] });
}

/** The Safe transaction fields of a batch through MultiSendCallOnly at `multiSendCallOnly`. */
export function multiSendTransaction(multiSendCallOnly: Address, calls: readonly BatchCall[]): { to: Address; data: Hex; operation: 1 } {
  return { to: multiSendCallOnly, data: encodeMultiSend(calls), operation: 1 };
}

/** The calls in `multiSend(bytes)` calldata. */
export function decodeMultiSend(data: Hex): (BatchCall & { operation: number; value: bigint })[] {
  const { args } = decodeFunctionData({ abi: MULTI_SEND_ABI, data });
  const bytes = args[0];
  const calls: (BatchCall & { operation: number; value: bigint })[] = [];
  for (let at = 0; at < size(bytes);) {
    const operation = hexToNumber(slice(bytes, at, at + 1));
    const to = slice(bytes, at + 1, at + 21) as Address;
    const value = hexToBigInt(slice(bytes, at + 21, at + 53));
    const length = Number(hexToBigInt(slice(bytes, at + 53, at + 85)));
    const callData = length ? slice(bytes, at + 85, at + 85 + length) : '0x';
    calls.push({ operation, to, value, data: callData });
    at += 85 + length;
  }
  return calls;
}
