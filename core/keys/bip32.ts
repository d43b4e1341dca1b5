// Non-hardened BIP-32 public derivation from a group key and its chain code (BIP-32, "Public parent key
// -> public child key"). Public inputs only: the API derives wallet addresses with it, the nodes the key
// they sign for, and the protocols add the returned tweak (Σ IL) to every share
// (node/protocols/derive/bip32.ts), so a derived key signs with the same committee.
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Fn, G, ORDER, parsePoint, type Point } from './point.ts';
import { InputError } from '../errors/protocol-errors.ts';
import { BoundedMemo } from '../../common/memo.ts';

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
