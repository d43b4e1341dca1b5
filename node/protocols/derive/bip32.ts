// Non-hardened BIP-32 public derivation from the group key and the joint chain code (BIP-32,
// "Public parent key -> public child key"). The sum of the per-level tweaks IL is added to every share,
// so a derived key signs with the same committee and no new key generation.
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Fn, G, ORDER, parsePoint, pointHex, type Point } from '../math/curve.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { SecretShare, type KeyShare } from '../keys/key-package.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { BoundedMemo } from '../../../common/memo.ts';

export const HARDENED = 0x80000000;

export interface Derived {
  /** Σ IL over the path. */
  tweak: bigint;
  publicKey: Point;
  chainCode: string;
}

export function checkPath(path: number[]): void {
  if (!Array.isArray(path) || path.length > 255) throw new InputError('bad_path', 'a path has at most 255 levels');
  for (const i of path) {
    if (!Number.isSafeInteger(i) || i < 0) throw new InputError('bad_path', 'path indexes are non-negative integers');
    if (i >= HARDENED) throw new InputError('bad_path', 'hardened indexes cannot be derived from a shared key');
  }
}

// Derivation depends only on public inputs; wallets are derived again and again, so results are kept.
const derived = new BoundedMemo<Derived>(4096);

export function derive(groupKey: string, chainCode: string, path: number[]): Derived {
  checkPath(path);
  return derived.get(`${groupKey}/${chainCode}/${path.join('/')}`, () => deriveUncached(groupKey, chainCode, path));
}

function deriveUncached(groupKey: string, chainCode: string, path: number[]): Derived {
  let K = parsePoint(groupKey, 'group key');
  let cc = hexToBytes(chainCode);
  let tweak = 0n;
  for (const index of path) {
    const data = new Uint8Array(37);
    data.set(K.toBytes(true), 0);
    new DataView(data.buffer).setUint32(33, index);
    const I = hmac(sha512, cc, data);
    const il = BigInt('0x' + bytesToHex(I.subarray(0, 32)));
    // BIP-32: IL >= n or a child at infinity makes this index invalid (probability below 2^-127).
    if (il >= ORDER) throw new InputError('invalid_child', `index ${index} derives an invalid key; use the next index`);
    const child = K.add(G.multiply(il));
    if (child.is0()) throw new InputError('invalid_child', `index ${index} derives the point at infinity`);
    K = child;
    cc = I.slice(32);
    tweak = Fn.add(tweak, il);
  }
  return { tweak, publicKey: K, chainCode: bytesToHex(cc) };
}

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
