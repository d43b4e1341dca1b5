// One EVM chain as the tokenization service uses it: a public client for reads and proofs, and the service
// deployer account that sends (and pays for) deployments and Safe executions (docs/platform/tokenization.md
// "Who pays"). The deployer is the service's own account, never a customer's key.
import { createPublicClient, createWalletClient, defineChain, http, type PublicClient, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { walletSender, type TransactionSender } from './chain/transaction-sender.ts';

export interface TokenChain {
  chain: string;
  chainId: number;
  client: PublicClient;
  sender: TransactionSender;
}

export function tokenChain(net: EvmNetwork, rpcUrl: string, deployerKey: Hex): TokenChain {
  const chain = defineChain({ id: Number(net.chainId), name: net.chain, nativeCurrency: { name: net.nativeSymbol, symbol: net.nativeSymbol, decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } });
  const transport = http(rpcUrl);
  const client = createPublicClient({ chain, transport }) as PublicClient;
  const wallet = createWalletClient({ chain, transport, account: privateKeyToAccount(deployerKey) });
  return { chain: net.chain, chainId: Number(net.chainId), client, sender: walletSender(wallet) };
}
