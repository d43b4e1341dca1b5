// The Bitcoin networks the service knows, with the confirmations after which a transaction is final.
export interface BitcoinNetworkInfo {
  chain: string;
  network: 'mainnet' | 'testnet' | 'signet' | 'regtest';
  /** Confirmations after which a transaction counts as final. */
  finalityDepth: number;
  /** The usual seconds between blocks (the local regtest double mines every 2 s): what a wait for finality allows for. */
  blockTimeS: number;
}

export const BITCOIN_NETWORKS: readonly BitcoinNetworkInfo[] = Object.freeze([
  { chain: 'bitcoin', network: 'mainnet', finalityDepth: 6, blockTimeS: 600 },
  { chain: 'bitcoin-testnet', network: 'testnet', finalityDepth: 3, blockTimeS: 600 },
  { chain: 'bitcoin-signet', network: 'signet', finalityDepth: 3, blockTimeS: 600 },
  { chain: 'bitcoin-regtest', network: 'regtest', finalityDepth: 1, blockTimeS: 2 },
]);
