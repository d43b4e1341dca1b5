// The KOS check must not leak the receiver's choice bits. Its two lanes send x_l = S_l(r_0..r_{M-1}), GCM's
// GHASH of the bits under χ_l: 256 bits that are GF(2)-affine in the bits, x = c + A·r_first + B·r_extra
// (c = S_l of no set bit, the length block's term). They are independent of the XI bits the caller uses
// exactly when B (256 × EXTRA, what the extra random rows contribute) has rank 256. B is computed here by
// linearity with the real challenge derivation and the real hash (`gcmHash`, on the reference and the
// native provider): the contribution of each unit choice bit. The model is first checked against real
// receiver messages.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { EXTRA, KAPPA, M, XI, bitOf, checkChallenges, kosReceive, type LaneCheck } from '../../../node/protocols/ot/kos.ts';
import { noblePrimitives, type Primitives } from '../../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { seededRng } from '../simulate.ts';

/** Rank over GF(2) of a set of bit vectors (as bigints), by insertion into an XOR basis. */
function rank(vectors: bigint[]): number {
  const basis = new Map<number, bigint>();
  for (let v of vectors) {
    while (v !== 0n) {
      const top = v.toString(2).length - 1;
      const b = basis.get(top);
      if (b === undefined) {
        basis.set(top, v);
        break;
      }
      v ^= b;
    }
  }
  return basis.size;
}

const xor = (a: Uint8Array, b: Uint8Array): Uint8Array => a.map((v, i) => v ^ b[i]!);

/**
 * A lane's x for no set bit (the length block's term), and what row k's choice bit alone adds to it: the
 * hash of the M blocks with the field's 1 at row k, less that term.
 */
function unitContributions(lane: LaneCheck, prims: Primitives): { none: Uint8Array; units: Uint8Array[] } {
  const blocks = new Uint8Array(M * 16);
  const none = prims.gcmHash(lane.key, blocks);
  const units: Uint8Array[] = [];
  for (let k = 0; k < M; k++) {
    blocks[16 * k] = 0x80; // the field's 1 in GHASH's bit order, as kos.ts encodes a set bit
    units.push(xor(prims.gcmHash(lane.key, blocks), none));
    blocks[16 * k] = 0;
  }
  return { none, units };
}

t.test('the extra rows give the check values full rank 256, so x hides the caller\'s bits', async (t) => {
  t.equal(M, XI + EXTRA, 'M = XI + EXTRA');
  for (const [label, prims] of [['ctx a', noblePrimitives], ['ctx b', nativePrimitives], ['ctx c', noblePrimitives]] as const) {
    const rng = seededRng(`kos rank ${label}`);
    const k0 = Array.from({ length: KAPPA }, () => rng(32));
    const k1 = Array.from({ length: KAPPA }, () => rng(32));
    const { msg, r } = kosReceive(label, k0, k1, rng, prims);
    const lanes = checkChallenges(label, msg.nonce, msg.u, prims).map((l) => unitContributions(l, prims));
    // The affine model reproduces the x values the receiver actually sent.
    for (let l = 0; l < 2; l++) {
      let x = lanes[l]!.none;
      for (let k = 0; k < M; k++) if (bitOf(r, k)) x = xor(x, lanes[l]!.units[k]!);
      t.equal(bytesToHex(x), bytesToHex(msg.check.subarray(32 * l, 32 * l + 16)), `${label} (${prims.name}): lane ${l}'s x is its term for no bit plus the unit contributions of the set bits`);
    }
    const columns: bigint[] = [];
    for (let k = XI; k < M; k++) columns.push(BigInt('0x' + bytesToHex(lanes[0]!.units[k]!) + bytesToHex(lanes[1]!.units[k]!)));
    const rk = rank(columns);
    t.equal(rk, 256, `${label}: the ${EXTRA} extra rows map onto all 256 bits of (x_0, x_1) (rank ${rk})`);
  }
});
