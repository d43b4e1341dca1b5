// ECDSA verification of a prehashed digest with public values only, for the online phase's check
// before release (ecdsa/online.ts). Same equation as noble's `secp256k1.verify` with low-s required:
// R = (m/s)·G + (r/s)·Y, accept when R is not the identity and x(R) mod n = r. What differs is the
// cost: a signing key signs many times (one vault, one path), so after its second use a key keeps a
// precomputed window table (noble's `precompute`), which makes the product by the key a few table
// additions instead of a full variable-base multiplication. Tables are kept for a bounded number of
// keys, least recently used first out. Nothing secret is multiplied here.
import { Fn, G, ORDER, parsePoint, type Point } from './curve.ts';

/** Window of a key's table: 65 windows of 8 points (520 points), built for about two verifications. */
const KEY_WINDOW = 4;
/** Keys whose tables are kept (about 100 kB each). */
const MAX_KEYS = 64;

interface Held {
  point: Point;
  uses: number;
}
const keys = new Map<string, Held>();

/** The key's point, with its table from its second use on. */
function keyPoint(publicKey: string): Point {
  const held = keys.get(publicKey);
  if (held) {
    keys.delete(publicKey);
    keys.set(publicKey, held);
    if (++held.uses === 2) held.point.precompute(KEY_WINDOW, false);
    return held.point;
  }
  const point = parsePoint(publicKey, 'public key');
  keys.set(publicKey, { point, uses: 1 });
  if (keys.size > MAX_KEYS) keys.delete(keys.keys().next().value!);
  return point;
}

/**
 * Whether (r, s) is a low-s ECDSA signature of the 32-byte digest scalar `m` (already reduced mod n)
 * under the compressed public key (hex).
 */
export function verifyEcdsaDigest(r: bigint, s: bigint, m: bigint, publicKey: string): boolean {
  if (r <= 0n || r >= ORDER || s <= 0n || s > ORDER >> 1n) return false;
  const Y = keyPoint(publicKey);
  const si = Fn.inv(s);
  const R = G.multiplyUnsafe(Fn.mul(m, si)).add(Y.multiplyUnsafe(Fn.mul(r, si)));
  if (R.is0()) return false;
  return Fn.create(R.toAffine().x) === r;
}

/** For tests: how many keys hold a table now. */
export function keysWithTables(): number {
  let n = 0;
  for (const h of keys.values()) if (h.uses >= 2) n++;
  return n;
}
