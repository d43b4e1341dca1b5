// One EVM chain as the tokenization service uses it: a public client for reads and proofs, the service
// deployer account that sends (and pays for) deployments and Safe executions (docs/platform/tokenization.md
// "Who pays"), and, where configured, the gasless relayer that sends holders' forward requests ("Gasless
// transfers"). Both are the service's own accounts, never a customer's key.
import { createPublicClient, createWalletClient, defineChain, http, type PublicClient, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { walletSender, type TransactionSender } from './chain/transaction-sender.ts';
import { localRelayer, type RelayerAccount } from './chain/relayer.ts';

export interface TokenChain {
  chain: string;
  chainId: number;
  client: PublicClient;
  sender: TransactionSender;
  /** The gasless relayer; absent: gasless relaying is off on this chain. */
  relayer?: RelayerAccount | undefined;
}

export function tokenChain(net: EvmNetwork, rpcUrl: string, deployerKey: Hex, relayerKey?: Hex): TokenChain {
  const chain = defineChain({ id: Number(net.chainId), name: net.chain, nativeCurrency: { name: net.nativeSymbol, symbol: net.nativeSymbol, decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } });
  const transport = http(rpcUrl);
  const client = createPublicClient({ chain, transport }) as PublicClient;
  const wallet = createWalletClient({ chain, transport, account: privateKeyToAccount(deployerKey) });
  return { chain: net.chain, chainId: Number(net.chainId), client, sender: walletSender(wallet), relayer: relayerKey ? localRelayer(relayerKey) : undefined };
}
