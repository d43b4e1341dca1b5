// A token's access registry on chain (contracts/tokens/AccessRegistry.sol, docs/platform/rwa.md "Holders,
// eligibility, lockups and the cap table"): one per token, deployed with CREATE2 through the
// deterministic-deployment proxy like the token itself (salt from the token id, its admin the token's admin
// Safe), so its address is known before it exists and a second deployment is a no-op. The service deployer
// pays; it is attached to the token by the token's `set_access_registry` Safe operation.
import { encodeDeployData, getAddress, keccak256, stringToBytes, type Address, type Hex, type PublicClient } from 'viem';
import { builtArtifact } from '../../tokenization/chain/artifacts.ts';
import { create2Address, deployCreate2, ensureDeterministicDeployer } from '../../tokenization/chain/deterministic-deployer.ts';
import { create2StepState } from '../../tokenization/chain/safe-infrastructure.ts';
import type { TransactionSender } from '../../tokenization/chain/transaction-sender.ts';

export const registryAbi = () => builtArtifact('AccessRegistry').abi;

/** The CREATE2 salt of token `tokenId`'s registry. */
export function registrySalt(tokenId: string): Hex {
  return keccak256(stringToBytes(`custody/access-registry/v1:${tokenId}`));
}

export function registryInitCode(safe: Address): Hex {
  const { abi, bytecode } = builtArtifact('AccessRegistry');
  return encodeDeployData({ abi, bytecode, args: [getAddress(safe)] });
}

/** Where token `tokenId`'s registry, administered by `safe`, is (deployed or not). */
export function registryAddress(tokenId: string, safe: Address): Address {
  return create2Address(registrySalt(tokenId), registryInitCode(safe));
}

/** Whether the registry is on chain (throws when its address holds other code). */
export async function registryDeployed(client: PublicClient, tokenId: string, safe: Address): Promise<boolean> {
  const step = { name: 'AccessRegistry', salt: registrySalt(tokenId), initCode: registryInitCode(safe), address: registryAddress(tokenId, safe) };
  return (await create2StepState(client, step, builtArtifact('AccessRegistry'))) === 'done';
}

/** Deploys the registry unless it is there; its address. */
export async function ensureRegistry(client: PublicClient, sender: TransactionSender, tokenId: string, safe: Address): Promise<Address> {
  const address = registryAddress(tokenId, safe);
  if (await registryDeployed(client, tokenId, safe)) return address;
  await ensureDeterministicDeployer(client, sender);
  await deployCreate2(client, sender, registrySalt(tokenId), registryInitCode(safe));
  return address;
}
