// A Safe for a token: a SafeProxy created by the SafeProxyFactory with `createProxyWithNonce`, set up with its
// owners and threshold and the CompatibilityFallbackHandler. Its address is known before it exists: the
// factory CREATE2s the proxy with salt keccak256(keccak256(initializer) ‖ saltNonce) and init code
// proxyCreationCode ‖ uint256(singleton), so the same owners, threshold and salt nonce give the same address.
import { encodeFunctionData, encodePacked, getContractAddress, hexToBigInt, keccak256, stringToBytes, zeroAddress, type Address, type Hex, type PublicClient } from 'viem';
import { safeArtifact } from './artifacts.ts';
import { SAFE_ABI, SAFE_PROXY_FACTORY_ABI } from './safe-abi.ts';
import type { SafeInfrastructure } from './safe-infrastructure.ts';
import { sendAndWait, type TransactionSender } from './transaction-sender.ts';

export interface SafeParameters {
  owners: readonly Address[];
  threshold: number;
  /** From `safeSaltNonce(recordId)`: one Safe per record. */
  saltNonce: bigint;
  /** SafeL2 (the default) emits an event for every execution, which lets the API follow them from logs alone. */
  singleton?: 'SafeL2' | 'Safe';
}

/** The salt nonce of the Safe of a record (a token id): keccak256 of `custody/token-safe/v1:` ‖ the id, as a uint256. */
export function safeSaltNonce(recordId: string): bigint {
  return hexToBigInt(keccak256(stringToBytes(`custody/token-safe/v1:${recordId}`)));
}

/** The `setup` call a new proxy runs: owners, threshold, the fallback handler, no module setup, no payment. */
export function safeInitializer(p: SafeParameters, infra: SafeInfrastructure): Hex {
  if (p.threshold < 1 || p.threshold > p.owners.length) throw new RangeError(`threshold ${p.threshold} of ${p.owners.length} owners`);
  return encodeFunctionData({ abi: SAFE_ABI, functionName: 'setup', args: [[...p.owners], BigInt(p.threshold), zeroAddress, '0x', infra.fallbackHandler, zeroAddress, 0n, zeroAddress] });
}

function singletonOf(p: SafeParameters, infra: SafeInfrastructure): Address {
  return (p.singleton ?? 'SafeL2') === 'SafeL2' ? infra.safeL2 : infra.safe;
}

/** Where the factory creates this Safe. */
export function predictSafeAddress(p: SafeParameters, infra: SafeInfrastructure): Address {
  const salt = keccak256(encodePacked(['bytes32', 'uint256'], [keccak256(safeInitializer(p, infra)), p.saltNonce]));
  const bytecode = encodePacked(['bytes', 'uint256'], [safeArtifact('SafeProxy').bytecode, hexToBigInt(singletonOf(p, infra))]);
  return getContractAddress({ opcode: 'CREATE2', from: infra.proxyFactory, salt, bytecode });
}

/** Creates the Safe unless its address already holds it; `created` says which. */
export async function createSafe(client: PublicClient, sender: TransactionSender, p: SafeParameters, infra: SafeInfrastructure): Promise<{ address: Address; created: boolean }> {
  const address = predictSafeAddress(p, infra);
  const code = await client.getCode({ address });
  if (code && code !== '0x') return { address, created: false };
  await sendAndWait(client, sender, { to: infra.proxyFactory, data: encodeFunctionData({ abi: SAFE_PROXY_FACTORY_ABI, functionName: 'createProxyWithNonce', args: [singletonOf(p, infra), safeInitializer(p, infra), p.saltNonce] }) });
  const after = await client.getCode({ address });
  if (!after || after === '0x') throw new Error(`the Safe was not created at ${address}`);
  return { address, created: true };
}
