// BIP-341 key-path output key of a public key: the internal key P in its even-y form, the tweak
// t = H_TapTweak(x(P) ‖ merkle_root) and Q = lift_x(x(P)) + tG. Public inputs only: the API and the
// nodes compute P2TR addresses with it; the protocols apply the same tweak to shares
// (node/protocols/frost/taproot.ts).
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Fn, G, parsePoint } from './point.ts';
import { InputError } from '../errors/protocol-errors.ts';
import { BoundedMemo } from '../../common/memo.ts';

export function tapTweak(internalXOnly: Uint8Array, merkleRoot?: Uint8Array): bigint {
  if (merkleRoot && merkleRoot.length !== 32) throw new InputError('bad_merkle_root', 'merkle root is 32 bytes');
  const t = BigInt('0x' + bytesToHex(schnorr.utils.taggedHash('TapTweak', internalXOnly, merkleRoot ?? new Uint8Array())));
  if (t >= Fn.ORDER) throw new InputError('bad_tweak', 'tap tweak out of range');
  return t;
}

/** x-only internal key of a group key (its even-y form). */
export function internalKey(groupKey: string): Uint8Array {
  return parsePoint(groupKey, 'group key').toBytes(true).slice(1);
}

const outputKeys = new BoundedMemo<Uint8Array>(4096);

/** The x-only output key Q = lift_x(x(P)) + tG that a P2TR output commits to. */
export function outputKey(groupKey: string, merkleRoot?: Uint8Array): Uint8Array {
  // Public inputs only, asked for on every P2TR authorization: kept, and handed out as a copy.
  return outputKeys.get(`${groupKey}/${merkleRoot ? bytesToHex(merkleRoot) : ''}`, () => outputKeyUncached(groupKey, merkleRoot)).slice();
}

function outputKeyUncached(groupKey: string, merkleRoot?: Uint8Array): Uint8Array {
  const x = internalKey(groupKey);
  const P = parsePoint('02' + bytesToHex(x), 'internal key');
  return P.add(G.multiply(tapTweak(x, merkleRoot))).toBytes(true).slice(1);
}
