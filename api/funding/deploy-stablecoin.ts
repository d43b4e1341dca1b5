// Deploys the sandbox stablecoin (docs/platform/funding.md "Stablecoin"): OpenZeppelin's
// ERC20PresetMinterPauser (v4.9.6; 18 decimals, fixed by the preset), deployed by the issuer's own
// account, which the preset makes its admin and only minter. For a local chain (anvil) and tests; a
// production stablecoin is the issuer's, not deployed by this service. The preset's prebuilt artifact comes
// from the `@openzeppelin/contracts-v4` alias: OpenZeppelin 5, which the project's sources compile against,
// dropped the presets.
import { createRequire } from 'node:module';
import { createPublicClient, createWalletClient, http, type Abi, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmNetwork } from '../../core/chains/evm/evm-networks.ts';

const require = createRequire(import.meta.url);

export function stablecoinArtifact(): { abi: Abi; bytecode: Hex } {
  return require('@openzeppelin/contracts-v4/build/contracts/ERC20PresetMinterPauser.json') as { abi: Abi; bytecode: Hex };
}

/** Deploys the stablecoin from `issuerKey`'s account and returns its address (lower case). */
export async function deployStablecoin(network: EvmNetwork, rpcUrl: string, issuerKey: Hex, name = 'Sandbox USD', symbol = 'SUSD'): Promise<Hex> {
  const chain = { id: Number(network.chainId), name: network.chain, nativeCurrency: { name: network.nativeSymbol, symbol: network.nativeSymbol, decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } };
  const wallet = createWalletClient({ chain, transport: http(rpcUrl), account: privateKeyToAccount(issuerKey) });
  const client = createPublicClient({ chain, transport: http(rpcUrl) });
  const { abi, bytecode } = stablecoinArtifact();
  const hash = await wallet.deployContract({ abi, bytecode, args: [name, symbol] });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`the stablecoin deployment ${hash} failed`);
  return receipt.contractAddress.toLowerCase() as Hex;
}
