// The Merkle tree of a token's log (RFC 6962 section 2.1, as RFC 9162 section 2.1 restates it): leaf hash
// SHA-256(0x00 || entry), node hash SHA-256(0x01 || left || right), the empty tree's root SHA-256(""). Proof
// generation follows the recursive definitions PATH and SUBPROOF (RFC 9162 2.1.3.1 and 2.1.4.1); the
// verifiers follow the iterative algorithms of RFC 9162 2.1.3.2 and 2.1.4.2. Pure: no I/O.
import { sha256 } from '@noble/hashes/sha2.js';

export const HASH_SIZE = 32;
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

export function leafHash(entry: Uint8Array): Uint8Array {
  const b = new Uint8Array(entry.length + 1);
  b[0] = 0x00;
  b.set(entry, 1);
  return sha256(b);
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  const b = new Uint8Array(1 + 2 * HASH_SIZE);
  b[0] = 0x01;
  b.set(left, 1);
  b.set(right, 1 + HASH_SIZE);
  return sha256(b);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/** The largest power of two smaller than n (n > 1). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[lo:hi]) over leaf hashes. */
export function rootOf(leaves: readonly Uint8Array[], lo = 0, hi = leaves.length): Uint8Array {
  const n = hi - lo;
  if (n === 0) return EMPTY_ROOT;
  if (n === 1) return leaves[lo]!;
  const k = split(n);
  return nodeHash(rootOf(leaves, lo, lo + k), rootOf(leaves, lo + k, hi));
}

/** PATH(m, D[0:size]): the audit path of leaf `index` in the tree of the first `size` leaves. */
export function inclusionProof(leaves: readonly Uint8Array[], index: number, size: number): Uint8Array[] {
  if (!(size <= leaves.length) || !(index >= 0 && index < size)) throw new RangeError(`no leaf ${index} in a tree of ${size}`);
  const path = (m: number, lo: number, hi: number): Uint8Array[] => {
    const n = hi - lo;
    if (n === 1) return [];
    const k = split(n);
    return m < k ? [...path(m, lo, lo + k), rootOf(leaves, lo + k, hi)] : [...path(m - k, lo + k, hi), rootOf(leaves, lo, lo + k)];
  };
  return path(index, 0, size);
}

/** PROOF(m, D[0:n]) = SUBPROOF(m, D[0:n], true): from the tree of `m` leaves to that of `n` (0 < m <= n). */
export function consistencyProof(leaves: readonly Uint8Array[], m: number, n: number): Uint8Array[] {
  if (!(n <= leaves.length) || !(m >= 0 && m <= n)) throw new RangeError(`no consistency proof from ${m} to ${n}`);
  if (m === 0 || m === n) return [];
  const sub = (m: number, lo: number, hi: number, b: boolean): Uint8Array[] => {
    const n = hi - lo;
    if (m === n) return b ? [] : [rootOf(leaves, lo, hi)];
    const k = split(n);
    return m <= k ? [...sub(m, lo, lo + k, b), rootOf(leaves, lo + k, hi)] : [...sub(m - k, lo + k, hi, false), rootOf(leaves, lo, lo + k)];
  };
  return sub(m, 0, n, true);
}

const isHash = (h: Uint8Array) => h.length === HASH_SIZE;

/** RFC 9162 2.1.3.2: does `proof` put `leaf` at `index` of the tree of `size` leaves with root `root`? */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  if (!isHash(leaf) || !isHash(root) || !proof.every(isHash)) return false;
  let fn = BigInt(index);
  let sn = BigInt(size - 1);
  let r = leaf;
  for (const p of proof) {
    if (sn === 0n) return false;
    if ((fn & 1n) === 1n || fn === sn) {
      r = nodeHash(p, r);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  return sn === 0n && equalBytes(r, root);
}

/**
 * RFC 9162 2.1.4.2: is the tree of `size2` leaves with root `root2` an extension of the tree of `size1`
 * leaves with root `root1`? Equal sizes need equal roots and an empty proof; a first size of zero has no
 * proof (the witness protocol treats "old 0" on its own).
 */
export function verifyConsistency(size1: number, size2: number, root1: Uint8Array, root2: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!Number.isSafeInteger(size1) || !Number.isSafeInteger(size2) || size1 < 0 || size2 < size1) return false;
  if (size1 === size2) return proof.length === 0 && equalBytes(root1, root2) && (size1 !== 0 || equalBytes(root1, EMPTY_ROOT));
  if (!isHash(root1) || !isHash(root2) || !proof.every(isHash)) return false;
  if (size1 === 0 || proof.length === 0) return false;
  let path = [...proof];
  // A first tree that is a complete subtree is its own first node.
  if ((size1 & (size1 - 1)) === 0) path = [root1, ...path];
  let fn = BigInt(size1 - 1);
  let sn = BigInt(size2 - 1);
  while ((fn & 1n) === 1n) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0n) return false;
    if ((fn & 1n) === 1n || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  return sn === 0n && equalBytes(fr, root1) && equalBytes(sr, root2);
}

/**
 * The right edge of a tree: the roots of its complete subtrees, largest first (a "compact range" from 0).
 * Appending a leaf and taking the root cost O(log n), so each append can sign its own checkpoint.
 */
export function appendToEdge(edge: readonly Uint8Array[], size: number, leaf: Uint8Array): Uint8Array[] {
  const out = [...edge];
  let h = leaf;
  // Each trailing one bit of `size` is a complete subtree the new leaf's subtree merges with.
  for (let s = size; (s & 1) === 1; s = Math.floor(s / 2)) h = nodeHash(out.pop()!, h);
  out.push(h);
  return out;
}

/** MTH of the tree whose right edge is `edge`: fold from the smallest subtree up. */
export function rootOfEdge(edge: readonly Uint8Array[]): Uint8Array {
  if (edge.length === 0) return EMPTY_ROOT;
  let r = edge[edge.length - 1]!;
  for (let i = edge.length - 2; i >= 0; i--) r = nodeHash(edge[i]!, r);
  return r;
}
