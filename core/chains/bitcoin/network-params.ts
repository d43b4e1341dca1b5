// bitcoinjs-lib's parameters (address prefixes, bech32 HRP) for each network an intent can name. The
// API builds spends and addresses with them and the nodes recompute addresses and digests with them:
// one table, so both read an address the same way. Signet shares testnet's parameters.
import * as bitcoin from 'bitcoinjs-lib';
import type { BtcNetwork } from '../../intents/intent.ts';

export const BITCOIN_NETWORK_PARAMS: Record<BtcNetwork, bitcoin.Network> = {
  mainnet: bitcoin.networks.bitcoin,
  testnet: bitcoin.networks.testnet,
  signet: bitcoin.networks.testnet,
  regtest: bitcoin.networks.regtest,
};
