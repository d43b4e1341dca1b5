// Deploys the escrow contract (docs/platform/escrows.md "Deployment"): TokenEscrow from the committed
// artifact, by a deployer account that is never a customer's key and gets no power over the contract
// (it has no owner or admin). For a local chain (anvil) and tests; elsewhere the contract is deployed
// once and named in API_ESCROW_CONTRACTS.
import { createPublicClient, createWalletClient, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { tokenEscrowArtifact } from './token-escrow.ts';

/** Deploys TokenEscrow from `deployerKey`'s account and returns its address (lower case). */
export async function deployEscrow(network: EvmNetwork, rpcUrl: string, deployerKey: Hex): Promise<Hex> {
  const chain = { id: Number(network.chainId), name: network.chain, nativeCurrency: { name: network.nativeSymbol, symbol: network.nativeSymbol, decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } };
  const wallet = createWalletClient({ chain, transport: http(rpcUrl), account: privateKeyToAccount(deployerKey) });
  const client = createPublicClient({ chain, transport: http(rpcUrl) });
  const { abi, bytecode } = tokenEscrowArtifact();
  const hash = await wallet.deployContract({ abi, bytecode, args: [] });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`the escrow contract deployment ${hash} failed`);
  return receipt.contractAddress.toLowerCase() as Hex;
}
