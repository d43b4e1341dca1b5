// secp256k1 points as the public key code reads them: noble's group, and parsing that validates every
// received point. Public inputs only; the protocols' scalar and polynomial helpers build on these
// (node/protocols/math/curve.ts re-exports them).
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { InputError } from '../errors/protocol-errors.ts';

export const Point = secp256k1.Point;
export type Point = InstanceType<typeof secp256k1.Point>;
export const Fn = secp256k1.Point.Fn;
export const G = Point.BASE;
export const ORDER = Fn.ORDER;

/** A point from compressed hex; refuses off-curve encodings and the identity. */
export function parsePoint(hex: unknown, what: string): Point {
  if (typeof hex !== 'string' || !/^0[23][0-9a-f]{64}$/.test(hex)) throw new InputError('bad_point', `${what}: expected a compressed point`);
  let p: Point;
  try {
    p = Point.fromBytes(hexToBytes(hex));
    p.assertValidity();
  } catch {
    throw new InputError('bad_point', `${what}: not a point on secp256k1`);
  }
  if (p.is0()) throw new InputError('bad_point', `${what}: identity point`);
  return p;
}

export function pointHex(p: Point): string {
  return bytesToHex(p.toBytes(true));
}
