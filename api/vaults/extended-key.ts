// A vault's extended public key (BIP-32, "Serialization format"): the root of its wallets' derivation,
// the group key with the joint chain code, so a customer re-derives every wallet address with any
// BIP-32 library (docs/derivation.md). Depth 0, no parent fingerprint, child number 0.
import { createBase58check } from '@scure/base';
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { parsePoint } from '../../core/keys/point.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';

/** BIP-32 version bytes of a public key: `xpub` on mainnet (production), `tpub` on test networks (sandbox). */
export const EXTENDED_PUBLIC_VERSIONS = Object.freeze({ production: 0x0488b21e, sandbox: 0x043587cf });

const base58check = createBase58check(sha256);

/** `version ‖ depth ‖ parent fingerprint ‖ child number ‖ chain code ‖ compressed key`, base58check. */
export function extendedPublicKey(publicKey: string, chainCode: string, environment: 'sandbox' | 'production'): string {
  parsePoint(publicKey, 'vault public key');
  if (!/^[0-9a-f]{64}$/.test(chainCode)) throw new CustodyError('bug', 'a stored chain code is not 32 bytes of hex');
  const out = new Uint8Array(78);
  const view = new DataView(out.buffer);
  view.setUint32(0, EXTENDED_PUBLIC_VERSIONS[environment]);
  // Bytes 4 to 12 (depth, parent fingerprint, child number) stay zero: this is the root.
  out.set(hexToBytes(chainCode), 13);
  out.set(hexToBytes(publicKey), 45);
  return base58check.encode(out);
}
