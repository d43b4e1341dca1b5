// BIP-341 key-path tweak for a shared key, applied explicitly: normalize the internal key P to even y
// (negating every share when it is odd), then add t = H_TapTweak(x(P) ‖ merkle_root) to every share.
// Keys from our DKG and from a dealer are both untweaked until this is called, once, per spend. The
// public half (the tweak and the output key Q) is core/keys/taproot.ts, re-exported here.
import { hexToBytes } from '@noble/hashes/utils.js';
import { parsePoint } from '../math/curve.ts';
import { tapTweak } from '../../../core/keys/taproot.ts';
import type { KeyShare } from '../keys/key-package.ts';
import { negateKeyShare, tweakKeyShare } from '../derive/bip32.ts';

export { internalKey, outputKey, tapTweak } from '../../../core/keys/taproot.ts';

/** Applies the BIP-341 tweak to a key share: even-y internal key, then + t. */
export function taprootKeyShare(k: KeyShare, merkleRoot?: Uint8Array): KeyShare {
  const even = parsePoint(k.pkg.groupKey, 'group key').toBytes(true)[0] === 0x02 ? k : negateKeyShare(k);
  return tweakKeyShare(even, tapTweak(hexToBytes(even.pkg.groupKey).slice(1), merkleRoot));
}
