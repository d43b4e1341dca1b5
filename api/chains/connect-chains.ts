// The chain backends the API is configured with (API_CHAIN_BACKENDS), one client per chain.
import { EvmChain } from './evm/evm-chain.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { BitcoinChain } from './bitcoin/bitcoin-chain.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import type { Chains } from '../transactions/transaction-worker.ts';

export function connectChains(backends: Record<string, string>): Chains & { has(chain: string): boolean } {
  const evm = new Map<string, EvmChain>();
  const btc = new Map<string, BitcoinChain>();
  for (const [chain, url] of Object.entries(backends)) {
    const net = evmNetwork(chain);
    if (net) evm.set(chain, new EvmChain(net, url));
    const info = BITCOIN_NETWORKS.find((n) => n.chain === chain);
    if (info) btc.set(chain, new BitcoinChain(info, url));
  }
  return { evm: (c) => evm.get(c), bitcoin: (c) => btc.get(c), has: (c) => evm.has(c) || btc.has(c) };
}
