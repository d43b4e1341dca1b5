// The share-tweaking half of non-hardened BIP-32 derivation: the public derivation from the group key
// and the joint chain code is core/keys/bip32.ts (re-exported here); the sum of its per-level tweaks IL
// is added to every share, so a derived key signs with the same committee and no new key generation.
import { Fn, G, parsePoint, pointHex } from '../math/curve.ts';
import { derive } from '../../../core/keys/bip32.ts';
import { SecretShare, type KeyShare } from '../keys/key-package.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';

export { HARDENED, checkPath, derive, type Derived } from '../../../core/keys/bip32.ts';

/** Adds `t` to a key: share + t, every verification share and the constant commitment + tG. */
export function tweakKeyShare(k: KeyShare, t: bigint): KeyShare {
  if (t === 0n) return k;
  const tG = G.multiply(t);
  const verificationShares: Record<string, string> = {};
  for (const [id, X] of Object.entries(k.pkg.verificationShares)) verificationShares[id] = pointHex(parsePoint(X, 'verification share').add(tG));
  const groupCommitment = k.pkg.groupCommitment.map((c, i) => (i === 0 ? pointHex(parsePoint(c, 'commitment').add(tG)) : c));
  const pkg: KeyPackage = { ...k.pkg, verificationShares, groupCommitment, groupKey: groupCommitment[0]! };
  return { share: new SecretShare(k.share.id, Fn.add(k.share.scalar(), t)), pkg };
}

/** Multiplies a key by -1 (for even-y normalization): share, verification shares, commitments. */
export function negateKeyShare(k: KeyShare): KeyShare {
  const verificationShares: Record<string, string> = {};
  for (const [id, X] of Object.entries(k.pkg.verificationShares)) verificationShares[id] = pointHex(parsePoint(X, 'verification share').negate());
  const groupCommitment = k.pkg.groupCommitment.map((c) => pointHex(parsePoint(c, 'commitment').negate()));
  return { share: new SecretShare(k.share.id, Fn.neg(k.share.scalar())), pkg: { ...k.pkg, verificationShares, groupCommitment, groupKey: groupCommitment[0]! } };
}

/** The key share for a derivation path. */
export function deriveKeyShare(k: KeyShare, path: number[]): KeyShare {
  const d = derive(k.pkg.groupKey, k.pkg.chainCode, path);
  const out = tweakKeyShare(k, d.tweak);
  return { share: out.share, pkg: { ...out.pkg, chainCode: d.chainCode } };
}
