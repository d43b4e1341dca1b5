// The EVM chains the service knows, with the confirmation depth after which a transaction is final.
// Sandbox serves test networks and the local chain; production serves main networks.
export interface EvmNetwork {
  chain: string;
  chainId: bigint;
  environment: 'sandbox' | 'production';
  /** Blocks on top of the including block before the transaction counts as final. */
  finalityDepth: number;
  nativeSymbol: string;
  /** The chain's usual seconds between blocks (npm start's anvil: one a second): what a wait for finality allows for. */
  blockTimeS: number;
}

export const EVM_NETWORKS: readonly EvmNetwork[] = Object.freeze([
  { chain: 'ethereum', chainId: 1n, environment: 'production', finalityDepth: 64, nativeSymbol: 'ETH', blockTimeS: 12 },
  { chain: 'base', chainId: 8453n, environment: 'production', finalityDepth: 64, nativeSymbol: 'ETH', blockTimeS: 2 },
  { chain: 'polygon', chainId: 137n, environment: 'production', finalityDepth: 128, nativeSymbol: 'POL', blockTimeS: 2 },
  { chain: 'ethereum-sepolia', chainId: 11155111n, environment: 'sandbox', finalityDepth: 12, nativeSymbol: 'ETH', blockTimeS: 12 },
  { chain: 'base-sepolia', chainId: 84532n, environment: 'sandbox', finalityDepth: 12, nativeSymbol: 'ETH', blockTimeS: 2 },
  { chain: 'evm-local', chainId: 31337n, environment: 'sandbox', finalityDepth: 2, nativeSymbol: 'ETH', blockTimeS: 1 },
]);

export function evmNetwork(chain: string): EvmNetwork | undefined {
  return EVM_NETWORKS.find((n) => n.chain === chain);
}
