// A wallet address as a customer's own code re-derives it from the vault's xpub and the wallet's
// derivation_path (docs/derivation.md "Verifying addresses"), with standard libraries only:
// @scure/bip32, viem, bitcoinjs-lib. None of the service's derivation code is used here.
import { HDKey } from '@scure/bip32';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { publicKeyToAddress } from 'viem/accounts';
import { bytesToHex as viemHex } from 'viem';

bitcoin.initEccLib(ecc);

/** BIP-32's test-network version bytes (tpub / tprv). */
export const TESTNET = { public: 0x043587cf, private: 0x04358394 };

export interface WalletView {
  chain: string;
  address_type: 'evm' | 'p2wpkh' | 'p2tr';
  address: string;
  derivation_path: string;
}

/** The address a wallet must have, from the xpub alone, as a customer's own code computes it. */
export function addressFromXpub(xpub: string, w: WalletView): string {
  const root = HDKey.fromExtendedKey(xpub, xpub.startsWith('tpub') ? TESTNET : undefined);
  const child = root.derive(w.derivation_path);
  const key = child.publicKey!;
  if (w.address_type === 'evm') return publicKeyToAddress(viemHex(secp256k1.Point.fromBytes(key).toBytes(false)));
  const network = w.chain === 'bitcoin' ? bitcoin.networks.bitcoin : w.chain === 'bitcoin-regtest' ? bitcoin.networks.regtest : bitcoin.networks.testnet;
  if (w.address_type === 'p2wpkh') return bitcoin.payments.p2wpkh({ pubkey: key, network }).address!;
  // BIP-86: the key path of a P2TR output with no script tree; bitcoinjs applies the BIP-341 tweak.
  return bitcoin.payments.p2tr({ internalPubkey: key.subarray(1), network }).address!;
}

