// Wallet addresses from a vault's group key and chain code (docs/derivation.md): non-hardened BIP-32
// paths per chain family, EVM 0x addresses, Bitcoin P2WPKH (bech32) and P2TR key-path (bech32m).
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { hexToBytes } from '@noble/hashes/utils.js';
import { publicKeyToAddress } from 'viem/utils';
import { toHex } from 'viem';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { derive } from '../../core/keys/bip32.ts';
import { outputKey } from '../../core/keys/taproot.ts';
import { pointHex } from '../../core/keys/point.ts';
import { EVM_NETWORKS } from '../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import { BITCOIN_NETWORK_PARAMS } from '../../core/chains/bitcoin/network-params.ts';

bitcoin.initEccLib(ecc);

export interface ChainInfo {
  chain: string;
  family: 'evm' | 'bitcoin';
  environment: 'sandbox' | 'production';
  bitcoinNetwork?: bitcoin.Network;
  coin?: 0 | 1;
}

export const CHAINS: readonly ChainInfo[] = Object.freeze([
  ...EVM_NETWORKS.map((n): ChainInfo => ({ chain: n.chain, family: 'evm', environment: n.environment })),
  ...BITCOIN_NETWORKS.map((n): ChainInfo => {
    const main = n.network === 'mainnet';
    return { chain: n.chain, family: 'bitcoin', environment: main ? 'production' : 'sandbox', bitcoinNetwork: BITCOIN_NETWORK_PARAMS[n.network], coin: main ? 0 : 1 };
  }),
]);

export function chainInfo(chain: string): ChainInfo | undefined {
  return CHAINS.find((c) => c.chain === chain);
}

export function walletPath(info: ChainInfo, addressType: 'evm' | 'p2wpkh' | 'p2tr', account: number): number[] {
  if (info.family === 'evm') return [44, 60, account, 0, 0];
  return [addressType === 'p2tr' ? 86 : 84, info.coin!, account, 0, 0];
}

export function walletAddress(groupKey: string, chainCode: string, info: ChainInfo, addressType: 'evm' | 'p2wpkh' | 'p2tr', account: number): { address: string; path: number[] } {
  const path = walletPath(info, addressType, account);
  const key = pointHex(derive(groupKey, chainCode, path).publicKey);
  if (info.family === 'evm') {
    const uncompressed = secp256k1.Point.fromBytes(hexToBytes(key)).toBytes(false);
    return { address: publicKeyToAddress(toHex(uncompressed)), path };
  }
  const network = info.bitcoinNetwork!;
  const address = addressType === 'p2tr'
    ? bitcoin.payments.p2tr({ pubkey: outputKey(key), network }).address!
    : bitcoin.payments.p2wpkh({ pubkey: hexToBytes(key), network }).address!;
  return { address, path };
}
