// The public side of a signing key after derivation and the Taproot tweak depends only on public
// inputs, so it is computed once per (package, path, suite, merkle root) and reused; the secret side is
// then one scalar operation: share' = sign·(share + derivation tweak) + Taproot tweak.
import { hexToBytes } from '@noble/hashes/utils.js';
import { SecretShare, type KeyShare } from '../keys/key-package.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { derive, negateKeyShare, tweakKeyShare } from '../derive/bip32.ts';
import { tapTweak } from './taproot.ts';
import { Fn, parsePoint } from '../math/curve.ts';
import { BoundedMemo } from '../../../common/memo.ts';

interface Prepared {
  pkg: KeyPackage;
  derivation: bigint;
  negate: boolean;
  tap: bigint;
}

const cache = new BoundedMemo<Prepared>(2048);

function prepare(pkg: KeyPackage, path: number[], taproot: boolean, merkleRoot: string | undefined): Prepared {
  return cache.get(JSON.stringify([pkg, path, taproot, merkleRoot ?? '']), () => prepareUncached(pkg, path, taproot, merkleRoot));
}

function prepareUncached(pkg: KeyPackage, path: number[], taproot: boolean, merkleRoot: string | undefined): Prepared {
  // Worked on a stand-in share of 0: only the public package and the tweaks are kept.
  const zero: KeyShare = { share: new SecretShare(0, 0n), pkg };
  const d = derive(pkg.groupKey, pkg.chainCode, path);
  let k = tweakKeyShare(zero, d.tweak);
  k = { share: k.share, pkg: { ...k.pkg, chainCode: d.chainCode } };
  let negate = false;
  let tap = 0n;
  if (taproot) {
    negate = parsePoint(k.pkg.groupKey, 'group key').toBytes(true)[0] !== 0x02;
    if (negate) k = negateKeyShare(k);
    tap = tapTweak(hexToBytes(k.pkg.groupKey).slice(1), merkleRoot ? hexToBytes(merkleRoot) : undefined);
    k = tweakKeyShare(k, tap);
  }
  return { pkg: k.pkg, derivation: d.tweak, negate, tap };
}

/** The key share that signs for `path` (and, for Taproot, the BIP-341 output key). */
export function preparedKeyShare(id: number, share: bigint, pkg: KeyPackage, path: number[], taproot: boolean, merkleRoot?: string): KeyShare {
  const p = prepare(pkg, path, taproot, merkleRoot);
  let x = Fn.add(share, p.derivation);
  if (p.negate) x = Fn.neg(x);
  return { share: new SecretShare(id, Fn.add(x, p.tap)), pkg: p.pkg };
}

/** The compressed key a signature for `path` (and, for Taproot, the BIP-341 output) verifies under. */
export function preparedGroupKey(pkg: KeyPackage, path: number[], taproot: boolean, merkleRoot?: string): string {
  return prepare(pkg, path, taproot, merkleRoot).pkg.groupKey;
}
